"""The 17 scenarios of the TanStack AI chat-stream document's testing strategy, through StreamProcessor.

Each asserts the parts (types, order, content), the result, how often ``on_messages_change`` fired and
the granular callbacks with their arguments.
"""

from __future__ import annotations

import pytest
from hookstream import ApprovalRequest, StreamProcessor, TextUIPart, ToolInputRequest, UIMessage
from hookstream import events as E
from hookstream.errors import UnknownToolCallError
from processor_kit import Recorder, run_end, run_start, shape, text, tool


def test_text_only() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *text("m1", "Hello", " world"), run_end()])
    assert shape(p.messages) == [[("text", "Hello world")]]
    assert p.messages[0].id == "m1" and p.messages[0].role == "assistant"
    assert (r.content, r.tool_calls, r.finish_reason, r.reasoning) == ("Hello world", [], "stop", None)
    assert rec.messages_changes == 2
    assert rec.text_updates == [("m1", "Hello"), ("m1", "Hello world")]
    assert rec.states == [] and rec.stream_ends == [p.messages[0]]


def test_tool_call_only() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *tool("c1", "get_weather", '{"city":', ' "Paris"}'), run_end("tool_calls")])
    assert shape(p.messages) == [[("tool-call", "c1", {"city": "Paris"}, "input-complete")]]
    part = p.messages[0].parts[0]
    assert part.arguments == '{"city": "Paris"}' and part.name == "get_weather"  # type: ignore[union-attr]
    assert r.content == "" and r.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [("c1", "get_weather", {"city": "Paris"})]
    assert rec.messages_changes == 4  # start, two deltas, end
    mid = p.messages[0].id
    assert rec.states == [
        (mid, "c1", "awaiting-input", ""),
        (mid, "c1", "input-streaming", '{"city":'),
        (mid, "c1", "input-complete", '{"city": "Paris"}'),
    ]
    assert rec.text_updates == []


def test_text_then_tool() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *text("m1", "Let me ", "check."), *tool("c1", "lookup", '{"q": 1}'),
                   run_end("tool_calls")])
    assert shape(p.messages) == [[("text", "Let me check."), ("tool-call", "c1", {"q": 1}, "input-complete")]]
    assert r.content == "Let me check." and [c.id for c in r.tool_calls] == ["c1"]
    assert rec.messages_changes == 2 + 3
    assert rec.text_updates == [("m1", "Let me "), ("m1", "Let me check.")]
    assert [s[2] for s in rec.states] == ["awaiting-input", "input-streaming", "input-complete"]


def test_parallel_tool_calls() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [
        run_start(),
        E.ToolCallStart("a", "weather"),
        E.ToolCallStart("b", "time"),
        E.ToolCallArgs("b", '{"tz": "UTC"}'),
        E.ToolCallArgs("a", '{"city": "Oslo"}'),
        E.ToolCallEnd("b"),
        E.ToolCallEnd("a"),
        run_end("tool_calls"),
    ]
    r = p.process(events)
    assert shape(p.messages) == [[
        ("tool-call", "a", {"city": "Oslo"}, "input-complete"),
        ("tool-call", "b", {"tz": "UTC"}, "input-complete"),
    ]]
    assert [c.id for c in r.tool_calls] == ["a", "b"]
    assert rec.messages_changes == 6
    assert [(s[1], s[2]) for s in rec.states] == [
        ("a", "awaiting-input"), ("b", "awaiting-input"), ("b", "input-streaming"), ("a", "input-streaming"),
        ("b", "input-complete"), ("a", "input-complete"),
    ]


def test_empty_argument_deltas() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *tool("c1", "now", "", ""), run_end("tool_calls")])
    assert shape(p.messages) == [[("tool-call", "c1", {}, "input-complete")]]
    assert r.tool_calls[0].arguments == {}
    assert rec.messages_changes == 2  # start and end; empty deltas change nothing
    assert [s[2] for s in rec.states] == ["awaiting-input", "input-complete"]  # never input-streaming


def test_missing_tool_call_end() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *tool("c1", "f", '{"a": 1}', end=False), run_end("tool_calls")])
    assert shape(p.messages) == [[("tool-call", "c1", {"a": 1}, "input-complete")]]  # RUN_FINISHED safety net
    assert r.tool_calls[0].arguments == {"a": 1}
    assert rec.messages_changes == 3
    assert [s[2] for s in rec.states] == ["awaiting-input", "input-streaming", "input-complete"]

    # Cut off without any terminal event: completed at stream end, and a truncated input is None.
    rec2 = Recorder()
    p2 = rec2.processor()
    r2 = p2.process([run_start(), *tool("c2", "f", '{"a": 1, "b":', end=False)])
    assert shape(p2.messages) == [[("tool-call", "c2", None, "input-complete")]]
    assert r2.tool_calls[0].arguments is None and r2.tool_calls[0].arguments_raw == '{"a": 1, "b":'
    assert rec2.messages_changes == 3
    assert rec2.states[-1] == (p2.messages[0].id, "c2", "input-complete", '{"a": 1, "b":')


def test_input_overrides_parsed_arguments() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), *tool("c1", "f", '{"x": 1}', input={"x": 2}), run_end("tool_calls")])
    assert shape(p.messages) == [[("tool-call", "c1", {"x": 2}, "input-complete")]]
    assert p.messages[0].parts[0].arguments == '{"x": 1}'  # type: ignore[union-attr]
    assert r.tool_calls[0].arguments == {"x": 2}
    assert rec.messages_changes == 3
    assert rec.states[-1][2:] == ("input-complete", '{"x": 1}')


def test_reasoning_then_text() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [
        run_start(),
        E.ReasoningStart("r1"),
        E.ReasoningMessageStart("r1"),
        E.ReasoningMessageContent("r1", "Let me "),
        E.ReasoningMessageContent("r1", "think."),
        E.ReasoningMessageEnd("r1", metadata={"anthropic": {"signature": "sig-1"}}),
        E.ReasoningEnd("r1"),
        *text("m1", "Answer."),
        run_end(),
    ]
    r = p.process(events)
    assert shape(p.messages) == [[("thinking", "Let me think."), ("text", "Answer.")]]
    assert p.messages[0].parts[0].provider_metadata == {"anthropic": {"signature": "sig-1"}}
    assert p.messages[0].id == "r1"
    assert (r.content, r.reasoning) == ("Answer.", "Let me think.")
    assert rec.messages_changes == 4  # two reasoning deltas, the signature, one text delta
    assert rec.text_updates == [("r1", "Answer.")]


def test_tool_result() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), *tool("c1", "add", '{"a": 1, "b": 2}'), run_end("tool_calls"),
              E.ToolCallResult("res1", "c1", "3")]
    r = p.process(events)
    assert shape(p.messages) == [[("tool-call", "c1", {"a": 1, "b": 2}, "output-available"),
                                  ("tool-result", "c1", "3", "complete")]]
    assert p.messages[0].parts[0].output == 3  # type: ignore[union-attr]
    assert r.finish_reason == "tool_calls"
    assert rec.messages_changes == 4
    assert [s[2] for s in rec.states] == ["awaiting-input", "input-streaming", "input-complete", "output-available"]


def test_client_tool() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), *tool("c1", "get_location", "{}"), run_end("tool_calls"),
              E.Custom("tool-input-available", {"toolCallId": "c1", "toolName": "get_location", "input": {}})]
    p.process(events)
    assert rec.tool_calls == [ToolInputRequest("c1", "get_location", {})]
    assert rec.messages_changes == 3
    p.add_tool_result("c1", {"lat": 1.5})
    assert shape(p.messages) == [[("tool-call", "c1", {}, "output-available"),
                                  ("tool-result", "c1", '{"lat": 1.5}', "complete")]]
    assert p.messages[0].parts[0].output == {"lat": 1.5}  # type: ignore[union-attr]
    assert rec.messages_changes == 4
    assert rec.states[-1] == (p.messages[0].id, "c1", "output-available", "{}")
    # A result for a call nobody made is kept, as TOOL_CALL_RESULT keeps one, not raised (TanStack AI goes on).
    p.add_tool_result("nope", 1)
    assert shape(p.messages)[-1][-1] == ("tool-result", "nope", "1", "complete")
    assert p.stats.orphan_results == 1


def test_approval_flow() -> None:
    rec = Recorder()
    p = rec.processor()
    value = {"toolCallId": "c1", "approvalId": "ap1", "toolName": "delete", "input": {"path": "/tmp/x"}}
    events = [run_start(), *tool("c1", "delete", '{"path": "/tmp/x"}'), E.Custom("approval-requested", value),
              run_end("tool_calls")]
    p.process(events)
    part = p.messages[0].parts[0]
    assert shape(p.messages) == [[("tool-call", "c1", {"path": "/tmp/x"}, "approval-requested")]]
    assert part.approval is not None and (part.approval.id, part.approval.approved) == ("ap1", None)  # type: ignore[union-attr]
    assert rec.approvals == [ApprovalRequest("c1", "delete", {"path": "/tmp/x"}, "ap1")]
    assert rec.messages_changes == 4
    p.add_tool_approval_response("ap1", True)
    assert part.state == "approval-responded" and part.approval.approved is True  # type: ignore[union-attr]
    assert rec.messages_changes == 5
    assert [s[2] for s in rec.states][-2:] == ["approval-requested", "approval-responded"]
    with pytest.raises(UnknownToolCallError):
        p.add_tool_approval_response("nope", False)


def test_text_tool_text() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), *text("m1", "Before."), *tool("c1", "f", "{}"), *text("m2", "After."), run_end()]
    r = p.process(events)
    assert shape(p.messages) == [[("text", "Before."), ("tool-call", "c1", {}, "input-complete"), ("text", "After.")]]
    assert r.content == "Before.After."
    assert rec.messages_changes == 1 + 3 + 1
    assert rec.text_updates == [("m1", "Before."), ("m1", "After.")]


def test_text_tool_result_text_engine_run() -> None:
    """The engine's single-run form: steps, the result inside the run, one RUN_FINISHED with outcome."""
    rec = Recorder()
    p = rec.processor()
    events = [
        run_start(),
        E.StepStarted("step-1"), *text("m1", "Checking."), *tool("c1", "f", '{"k": "v"}'), E.StepFinished("step-1"),
        E.ToolCallResult("res1", "c1", '{"ok": true}'),
        E.StepStarted("step-2"), *text("m2", "Done", "!"), E.StepFinished("step-2"),
        run_end("stop", outcome=E.Outcome("success")),
    ]
    r = p.process(events)
    assert shape(p.messages) == [[
        ("text", "Checking."), ("tool-call", "c1", {"k": "v"}, "output-available"),
        ("tool-result", "c1", '{"ok": true}', "complete"), ("text", "Done!"),
    ]]
    assert len(p.messages) == 1  # all steps of the loop in one message
    assert (r.content, r.finish_reason, r.outcome) == ("Checking.Done!", "stop", E.Outcome("success"))
    assert rec.messages_changes == 1 + 3 + 1 + 2
    assert rec.text_updates == [("m1", "Checking."), ("m1", "Done"), ("m1", "Done!")]


def test_empty_stream() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), E.TextMessageStart("m1"), E.TextMessageEnd("m1"), run_end()])
    assert p.messages == []
    assert (r.content, r.tool_calls, r.finish_reason, r.message) == ("", [], "stop", None)
    assert rec.messages_changes == 0 and rec.text_updates == [] and rec.stream_ends == [None]


def test_run_error_keeps_what_arrived() -> None:
    rec = Recorder()
    p = rec.processor()
    r = p.process([run_start(), E.TextMessageStart("m1"), E.TextMessageContent("m1", "Partial"),
                   E.RunError("connection dropped", code="connection_closed")])
    assert shape(p.messages) == [[("text", "Partial")]]
    assert (r.content, r.finish_reason, r.error) == ("Partial", "error", ("connection_closed", "connection dropped"))
    assert [(e.code, e.message) for e in rec.errors] == [("connection_closed", "connection dropped")]
    assert rec.messages_changes == 1

    # With nothing before it, RUN_ERROR still creates the message.
    rec2 = Recorder()
    p2 = rec2.processor()
    p2.process([run_start(), E.RunError("boom")])
    assert shape(p2.messages) == [[]] and rec2.messages_changes == 1 and rec2.errors[0].code == "error"


def test_duplicate_tool_call_start() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), E.ToolCallStart("c1", "f"), E.ToolCallArgs("c1", '{"a":'), E.ToolCallStart("c1", "f"),
              E.ToolCallArgs("c1", " 1}"), E.ToolCallEnd("c1"), run_end("tool_calls")]
    p.process(events)
    assert shape(p.messages) == [[("tool-call", "c1", {"a": 1}, "input-complete")]]
    assert p.stats.duplicate_starts == 1
    assert rec.messages_changes == 4
    assert [s[2] for s in rec.states] == ["awaiting-input", "input-streaming", "input-complete"]


def test_args_for_unknown_id_are_dropped_and_counted() -> None:
    rec = Recorder()
    p = rec.processor()
    events = [run_start(), E.ToolCallArgs("ghost", '{"a": 1}'), *tool("c1", "f", "{}"), E.ToolCallArgs("c1", "x"),
              run_end("tool_calls")]
    r = p.process(events)
    assert shape(p.messages) == [[("tool-call", "c1", {}, "input-complete")]]
    assert p.stats.dropped_args == 2  # unknown id, and args after TOOL_CALL_END
    assert r.tool_calls[0].arguments == {}
    assert rec.messages_changes == 3


class _EveryDelta:
    """Publishes every delta, as the default strategy does, but is not it: the processor's general path."""

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        return True

    def reset(self) -> None:
        pass


def test_default_strategy_fast_path_matches_the_general_path() -> None:
    # The default (immediate) strategy's text deltas skip _text_content/_publish; every callback, part
    # and result must be what the general path gives for a strategy that also publishes every delta.
    def events() -> list[E.BaseEvent]:
        return [
            run_start(), E.TextMessageContent("m0", "resumed "), E.TextMessageContent("m0", "text"),
            *text("m1", "Hel", "", "lo"), E.ReasoningStart("r1"), E.ReasoningMessageStart("r1"),
            E.ReasoningMessageContent("r1", "think"), E.ReasoningMessageEnd("r1"), E.ReasoningEnd("r1"),
            E.TextMessageContent("m2", "implied start"), E.TextMessageStart("m3"),
            E.TextMessageContent("m3", "inter"), E.TextMessageContent("m2", " more"),
            E.TextMessageContent("m3", "leaved"), E.TextMessageEnd("m3"), E.TextMessageEnd("m2"),
            *tool("t1", "get", '{"a":', "1}"), *text("m4", "after", " tool"), run_end(),
        ]

    def earlier() -> list[UIMessage]:
        return [UIMessage("m0", "assistant", [TextUIPart("earlier ")])]

    fast, general = Recorder(), Recorder()
    pf, pg = fast.processor(messages=earlier()), general.processor(strategy=_EveryDelta(), messages=earlier())
    rf, rg = pf.process(events()), pg.process(events())
    assert fast.text_updates == general.text_updates and len(fast.text_updates) > 8
    assert fast.messages_changes == general.messages_changes
    assert shape(pf.messages) == shape(pg.messages)
    assert (rf.content, rf.reasoning, len(rf.tool_calls)) == (rg.content, rg.reasoning, len(rg.tool_calls))


def test_a_failing_text_callback_leaves_the_same_change_to_report_on_both_paths() -> None:
    # on_text_update raises for one delta (the exception reaches the caller): the part did grow, so the
    # next event reports the messages changed, on the fast path as on the general one.
    def run(strategy: object | None) -> int:
        changes: list[int] = []
        failing = [True]

        def on_text(message_id: str, text: str) -> None:
            if text.endswith("boom") and failing.pop():
                raise RuntimeError("the UI callback failed")

        kw = {} if strategy is None else {"strategy": strategy}
        p = StreamProcessor(on_text_update=on_text, on_messages_change=lambda m: changes.append(1), **kw)
        for ev in [run_start(), E.TextMessageStart("m1"), E.TextMessageContent("m1", "a")]:
            p.process_chunk(ev)
        before = len(changes)
        with pytest.raises(RuntimeError):
            p.process_chunk(E.TextMessageContent("m1", "boom"))
        p.process_chunk(E.TextMessageEnd("m1"))
        assert p.messages[-1].parts[-1].content == "aboom"  # type: ignore[union-attr]
        return len(changes) - before

    assert run(None) == run(_EveryDelta()) == 1
