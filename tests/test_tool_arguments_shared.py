"""One argument text per tool call in the process: the engine joins the ``TOOL_CALL_ARGS`` deltas once,
hands that string on with ``TOOL_CALL_END.arguments``, and the stream processor keeps it instead of its
own copy (issue 17: 8 MiB of tool arguments peaked at five copies). The wire form still carries ``input``."""

from __future__ import annotations

import json
from typing import Any

from hookstream import StreamProcessor, ToolCallUIPart, chat, get_model
from hookstream.events import RunError, ToolCallArgs, ToolCallEnd, ToolCallStart, from_dict, to_dict
from hookstream.plugin import StepAccumulator
from hookstream.testing import LoopbackServer, Response

ARGS = ['{"path": "a.txt", ', '"content": "', "x" * 5000, '"}']


def chat_body(pieces: list[str], *, done: bool = True) -> bytes:
    def frame(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    out = frame({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                 "function": {"name": "write", "arguments": ""}}]})
    out += b"".join(frame({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces)
    if done:
        out += frame({}, "tool_calls") + b"data: [DONE]\n\n"
    return out


def run(body: bytes) -> tuple[list[Any], Any, StreamProcessor]:
    proc = StreamProcessor()
    with LoopbackServer([Response(body)]) as srv:
        stream = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key="k"), "hi", max_steps=1)
        events = []
        for ev in stream:
            events.append(ev)
            proc.process_chunk(ev)
        result = stream.result()
    proc.finalize()
    return events, result, proc


def ui_call(proc: StreamProcessor) -> ToolCallUIPart:
    (part,) = [p for m in proc.messages for p in m.parts if isinstance(p, ToolCallUIPart)]
    return part


def test_engine_and_processor_share_one_argument_string() -> None:
    events, result, proc = run(chat_body(ARGS))
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    call = result.steps[0].tool_calls[0]
    assert end.arguments == "".join(ARGS)
    assert end.arguments is call.arguments_raw
    assert ui_call(proc).arguments is call.arguments_raw
    assert call.arguments == ui_call(proc).input == {"path": "a.txt", "content": "x" * 5000}


def test_wire_form_carries_input_and_never_the_text() -> None:
    events, _, _ = run(chat_body(ARGS))
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    wire = to_dict(end)
    assert wire == {"type": "TOOL_CALL_END", "toolCallId": "call_1",
                    "input": {"path": "a.txt", "content": "x" * 5000}}
    # Read back, an END never takes a text from the wire: the deltas carry it.
    assert from_dict({**wire, "arguments": "{}"}).arguments is None
    assert "input" not in to_dict(ToolCallEnd("c", arguments='{"cut'))
    assert to_dict(ToolCallEnd("c", input={"given": 1}, arguments='{"a": 1}'))["input"] == {"given": 1}


def test_processor_keeps_its_own_text_when_the_end_text_differs() -> None:
    proc = StreamProcessor()
    for ev in (ToolCallStart("t1", "f"), ToolCallArgs("t1", '{"a": 1}'), ToolCallEnd("t1", arguments='{"a": 2}')):
        proc.process_chunk(ev)
    part = ui_call(proc)
    assert (part.arguments, part.input) == ('{"a": 1}', {"a": 1})


def test_arguments_parse_once_the_call_ends() -> None:
    acc = StepAccumulator()
    for ev in (ToolCallStart("t1", "f"), ToolCallArgs("t1", '{"a"'), ToolCallArgs("t1", ": 1}")):
        acc.add(ev)
    end = ToolCallEnd("t1")
    shared = acc.add(end)
    (call,) = acc.result.tool_calls
    # Parsed after the consumer has had TOOL_CALL_END (and dropped its own copy), never beside it.
    assert (call.arguments, call.arguments_raw) == (None, '{"a": 1}')
    assert shared.arguments is call.arguments_raw and end.arguments is None
    assert acc.finish().tool_calls[0].arguments == {"a": 1}


def test_dropped_connection_mid_arguments_keeps_the_text_everywhere() -> None:
    events, result, proc = run(chat_body(ARGS[:3], done=False))
    assert isinstance(events[-1], RunError) and events[-1].code == "connection_closed"
    call = result.steps[0].tool_calls[0]
    partial = "".join(ARGS[:3])
    assert (call.arguments, call.arguments_raw) == (None, partial)
    assert ui_call(proc).arguments == partial
    assert not any(isinstance(e, ToolCallEnd) for e in events)
