"""Stream forms and rules beyond the 17 scenarios: older TanStack forms, per-call runs, segments,
provider metadata, strategy resolution, JSON form of UI messages."""

from __future__ import annotations

import pytest
from hookstream import ReasoningUIPart, StreamProcessor, UIMessage
from hookstream import events as E
from hookstream.errors import UnknownPluginError
from processor_kit import Recorder, run_end, run_start, shape, text, tool


def test_older_forms_step_finished_delta_and_tool_call_end_result() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), E.StepFinished("think", delta="Hmm, "), E.StepFinished("think", delta="ok."),
              *tool("c1", "f", "{}", result={"v": 1}), run_end()]
    p.process(events)
    assert shape(p.messages) == [[("thinking", "Hmm, ok."), ("tool-call", "c1", {}, "output-available"),
                                  ("tool-result", "c1", '{"v": 1}', "complete")]]
    assert p.messages[0].parts[1].output == {"v": 1}  # type: ignore[union-attr]


def test_per_call_runs_go_into_one_message_until_finalize() -> None:
    p = StreamProcessor()
    p.process_chunk(run_start())
    for e in [*tool("c1", "f", "{}"), run_end("tool_calls"), E.ToolCallResult("x", "c1", "ok"),
              E.RunStarted("t1", "r2"), *text("m2", "fine"), run_end()]:
        p.process_chunk(e)
    r = p.finalize()
    assert len(p.messages) == 1 and r.content == "fine"
    assert shape(p.messages)[0][1] == ("tool-result", "c1", "ok", "complete")
    # The next loop starts a new message; finalize is idempotent.
    assert p.finalize() is r
    p.process([run_start(), *text("m3", "next"), run_end()])
    assert [m.text for m in p.messages] == ["fine", "next"]


def test_second_text_message_without_tool_keeps_its_own_part() -> None:
    p = StreamProcessor()
    p.process([run_start(), *text("m1", "one"), *text("m2", "two"), run_end()])
    assert shape(p.messages) == [[("text", "one"), ("text", "two")]]


def test_tool_error_result_and_orphan_result() -> None:
    p = StreamProcessor()
    p.process([run_start(), *tool("c1", "f", "{}"), E.ToolCallResult("x", "c1", "boom", error="boom"),
               E.ToolCallResult("y", "zz", "lost?")])
    assert shape(p.messages)[0][1:] == [("tool-result", "c1", "boom", "error"),
                                        ("tool-result", "zz", "lost?", "complete")]
    assert p.messages[0].parts[0].state == "output-error"  # type: ignore[union-attr]
    assert p.stats.orphan_results == 1


def test_provider_metadata_kept_on_parts() -> None:
    p = StreamProcessor()
    p.process([
        run_start(),
        E.ReasoningMessageStart("r1"), E.ReasoningMessageContent("r1", "x"), E.ReasoningMessageEnd("r1"),
        E.ReasoningEncryptedValue("message", "r1", "ENC"),
        E.ReasoningEncryptedValue("message", "r2", "ONLY-ENC"),
        E.TextMessageStart("m1", metadata={"gemini": {"thoughtSignature": "ts"}}), E.TextMessageContent("m1", "hi"),
        E.TextMessageEnd("m1"),
        E.ToolCallStart("c1", "f", metadata={"gemini": {"thoughtSignature": "tc"}}), E.ToolCallEnd("c1"),
        run_end(),
    ])
    parts = p.messages[0].parts
    assert parts[0].provider_metadata == {"encrypted": {"value": "ENC"}}
    assert (parts[1].type, parts[1].content, parts[1].provider_metadata) == (  # type: ignore[union-attr]
        "thinking", "", {"encrypted": {"value": "ONLY-ENC"}})
    assert parts[2].provider_metadata == {"gemini": {"thoughtSignature": "ts"}}
    assert parts[3].provider_metadata == {"gemini": {"thoughtSignature": "tc"}}


def test_new_step_gets_new_reasoning_part_even_with_reused_ids() -> None:
    p = StreamProcessor()
    p.process([run_start(), E.StepStarted("1"), E.ReasoningMessageContent("r", "a"), *tool("c1", "f", "{}"),
               E.StepFinished("1"), E.ToolCallResult("x", "c1", "1"),
               E.StepStarted("2"), E.ReasoningMessageContent("r", "b"), E.StepFinished("2"), run_end()])
    assert [p_.type for p_ in p.messages[0].parts] == ["thinking", "tool-call", "tool-result", "thinking"]


def test_partial_arguments_are_current_after_every_delta() -> None:
    seen = []
    p = StreamProcessor(on_messages_change=lambda ms: seen.append(repr(ms[0].parts[0].input)))
    p.process([run_start(), *tool("c1", "write", '{"path": "a', '.txt", "lines": [1, ', '2]', ', "x": {}}')])
    assert seen[1:] == ["{}", "{'path': 'a.txt', 'lines': [1]}", "{'path': 'a.txt', 'lines': [1, 2]}",
                        "{'path': 'a.txt', 'lines': [1, 2], 'x': {}}", "{'path': 'a.txt', 'lines': [1, 2], 'x': {}}"]


def test_invalid_arguments_keep_raw_and_give_no_input() -> None:
    p = StreamProcessor()
    r = p.process([run_start(), *tool("c1", "f", '{"a": 1', "}}"), run_end()])
    assert r.tool_calls[0].arguments is None and r.tool_calls[0].arguments_raw == '{"a": 1}}'
    assert p.stats.argument_parse_errors == 1


def test_strategy_by_name_object_and_errors() -> None:
    assert type(StreamProcessor(strategy="immediate").strategy).__name__ == "ImmediateStrategy"
    with pytest.raises(UnknownPluginError, match="no-such"):
        StreamProcessor(strategy="no-such")
    with pytest.raises(TypeError):
        StreamProcessor(strategy=object())  # type: ignore[arg-type]

    class EveryThird:  # a custom strategy needs nothing but the two methods
        def __init__(self) -> None:
            self.n = 0

        def should_emit(self, chunk: str, accumulated: str) -> bool:
            self.n += 1
            return self.n % 3 == 0

        def reset(self) -> None:
            self.n = 0

    rec = Recorder()
    p = rec.processor(strategy=EveryThird())
    p.process([run_start(), *text("m1", "a", "b", "c", "d"), run_end()])
    assert rec.text_updates == [("m1", "abc"), ("m1", "abcd")]  # the rest flushed at segment end
    assert shape(p.messages) == [[("text", "abcd")]]


def test_accumulated_is_the_pending_text() -> None:
    got = []

    class Spy:
        def should_emit(self, chunk: str, accumulated: str) -> bool:
            got.append((chunk, accumulated))
            return chunk.endswith(".")

        def reset(self) -> None:
            got.append(("reset", ""))

    StreamProcessor(strategy=Spy()).process([run_start(), *text("m1", "a", "b.", "c"), run_end()])
    assert got == [("a", "a"), ("b.", "ab."), ("c", "c"), ("reset", "")]


def test_dict_events_and_bad_input() -> None:
    p = StreamProcessor()
    p.process_chunk({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})
    assert p.finalize().content == "x"
    with pytest.raises(TypeError):
        p.process_chunk("nope")  # type: ignore[arg-type]
    p.process_chunk({"type": "NOPE"})  # counted, not raised
    assert p.stats.unusable_events == 1


def test_ui_message_json_round_trip() -> None:
    p = StreamProcessor()
    value = {"toolCallId": "c2", "approvalId": "ap", "toolName": "g", "input": {}}
    p.process([run_start(), E.ReasoningMessageContent("r", "t"), *text("m", "hi"), *tool("c1", "f", '{"a": [1]}'),
               E.ToolCallResult("x", "c1", "null"), *tool("c2", "g", "{}"), E.Custom("approval-requested", value),
               run_end()])
    data = [m.to_dict() for m in p.messages]
    assert [UIMessage.from_dict(d) for d in data] == p.messages
    assert data[0]["parts"][2]["output"] is None and "output" in data[0]["parts"][2]
    assert data[0]["parts"][4]["approval"] == {"id": "ap", "needsApproval": True}
    # The reasoning part keeps TanStack AI's JSON name for it, so saved messages and TanStack clients read it.
    assert data[0]["parts"][0] == {"type": "thinking", "content": "t"}
    assert isinstance(UIMessage.from_dict(data[0]).parts[0], ReasoningUIPart)
    with pytest.raises(ValueError):
        UIMessage.from_dict({"id": "x", "role": "assistant", "parts": [{"type": "video"}]})
