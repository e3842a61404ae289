"""Nested runs on one AG-UI stream (an agent used as a tool, AG-UI 1.0 ``SUBAGENT_*``): the grammar checks
the calling run's own events and each sub-run's as a run of its own, as ``@ag-ui/client`` ``verifyEvents``
does; the stream processor keeps each sub-run's work in a :class:`SubagentRun` of its own, out of the
calling run's assistant message. Real nested runs come from the engine with fake models (no network);
the grammar's error cases are built by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hookstream import Agent, Message, StreamProcessor, SubagentRun, ToolCallUIPart, chat
from hookstream import events as ev
from hookstream.testing import (
    FunctionModel,
    GrammarError,
    ModelError,
    Reply,
    RequestInfo,
    TestModel,
    ToolCall,
    check_events,
)


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"{key}=42"


def researcher_model(messages: list[Message], info: RequestInfo) -> Any:
    if info.step == 1:
        return ToolCall("lookup", {"key": "x"}, id="call_s1")
    return Reply("Found: x=42.", thinking="Looking at the result.")


def caller(tool: str, call_id: str, answer: str) -> FunctionModel:
    """A calling model: first calls ``tool``, then answers ``answer``."""

    def reply(messages: list[Message], info: RequestInfo) -> Any:
        if info.step == 1:
            return ToolCall(tool, {"prompt": "find x"}, id=call_id)
        return answer

    return FunctionModel(reply)


def nested_events() -> list[Any]:
    researcher = Agent(FunctionModel(researcher_model), tools=[lookup], name="researcher")
    tool = researcher.as_tool("research", "Research a question.")
    return list(chat(caller("research", "call_p1", "x is 42."), "What is x?", tools=[tool]))


def twice_nested_events() -> list[Any]:
    inner = Agent(FunctionModel(researcher_model), tools=[lookup], name="inner")
    middle = Agent(caller("dig", "call_m1", "Dug: x=42."), tools=[inner.as_tool("dig", "Dig deeper.")])
    return list(chat(caller("research", "call_p1", "x is 42."), "What is x?",
                     tools=[middle.as_tool("research", "Research a question.")]))


# -- the grammar on real nested runs ------------------------------------------------------------------


def test_a_real_nested_run_passes_and_each_part_is_checked() -> None:
    events = nested_events()
    assert check_events(events, form="run") == events
    check_events([ev.to_dict(e) for e in events], form="run")  # the AG-UI JSON form too
    check_events(events)  # auto picks the run form
    sub = next(e for e in events if e.type == "SUBAGENT_STARTED").subagent_run_id
    # The checker really reads the nested run: break it and it says where.
    last_sub_step_end = max(i for i, e in enumerate(events)
                            if e.type == "STEP_FINISHED" and getattr(e, "subagent_run_id", None) == sub)
    broken = events[:last_sub_step_end] + events[last_sub_step_end + 1:]
    with pytest.raises(GrammarError, match=f"SUBAGENT_FINISHED inside step 'step-2' \\(subagent run '{sub}'\\)"):
        check_events(broken, form="run")
    # Without its SUBAGENT_STARTED, the nested events belong to no run.
    with pytest.raises(GrammarError, match="before its SUBAGENT_STARTED"):
        check_events([e for e in events if e.type != "SUBAGENT_STARTED"], form="run")


def test_an_agent_tool_inside_an_agent_tool_passes() -> None:
    events = twice_nested_events()
    check_events(events, form="run")
    starts = [e for e in events if e.type == "SUBAGENT_STARTED"]
    assert len(starts) == 2 and starts[1].parent_subagent_run_id == starts[0].subagent_run_id
    # The inner run's end after its parent's end: the inner events are outside their run.
    kinds = [(e.type, getattr(e, "subagent_run_id", None)) for e in events]
    inner_end = kinds.index(("SUBAGENT_FINISHED", starts[1].subagent_run_id))
    outer_end = kinds.index(("SUBAGENT_FINISHED", starts[0].subagent_run_id))
    moved = list(events)
    moved.insert(outer_end, moved.pop(inner_end))  # now the outer run ends first
    with pytest.raises(GrammarError, match="SUBAGENT_FINISHED while its subagent runs are running"):
        check_events(moved, form="run")


def test_a_failing_nested_run_passes() -> None:
    def broken(messages: list[Message], info: RequestInfo) -> Any:
        raise ModelError(404, "no such model", type="not_found_error")

    tool = Agent(FunctionModel(broken), name="broken").as_tool("research", "Research.")
    events = list(chat(caller("research", "call_p1", "could not research"), "go", tools=[tool]))
    check_events(events, form="run")
    assert [e.type for e in events].count("SUBAGENT_ERROR") == 1


# -- the grammar's error cases, by hand -------------------------------------------------------------------

R = "sub-1"


def run(*inner: ev.BaseEvent, end: ev.BaseEvent | None = None) -> list[ev.BaseEvent]:
    return [ev.RunStarted("t", "r"), *inner, end or ev.RunFinished("t", "r")]


def sub_step(rid: str = R, name: str = "step-1") -> list[ev.BaseEvent]:
    mid = f"m-{rid}-{name}"
    return [ev.StepStarted(name, subagent_run_id=rid), ev.TextMessageStart(mid, subagent_run_id=rid),
            ev.TextMessageContent(mid, "hi", subagent_run_id=rid), ev.TextMessageEnd(mid, subagent_run_id=rid),
            ev.StepFinished(name, subagent_run_id=rid)]


START = ev.SubagentStarted(R, "research", parent_tool_call_id="c1")
DONE = ev.SubagentFinished(R, result="ok", outcome={"type": "success"})


def test_nested_runs_by_hand_pass() -> None:
    three_deep = run(
        ev.StepStarted("step-1"), ev.ToolCallStart("c1", "research"), ev.ToolCallEnd("c1"), ev.StepFinished("step-1"),
        START, *sub_step(),
        ev.SubagentStarted("sub-2", "dig", parent_subagent_run_id=R), *sub_step("sub-2"),
        ev.SubagentStarted("sub-3", "deeper", parent_subagent_run_id="sub-2"), *sub_step("sub-3"),
        ev.SubagentFinished("sub-3"),
        ev.SubagentFinished("sub-2", outcome={"type": "suspended", "interruptIds": ["i"]}),
        *sub_step(R, "step-2"), DONE,
        ev.ToolCallResult("res", "c1", "ok"),
        # the same step names and a sub-run inside the calling run's step are fine: each run has its own
        ev.StepStarted("step-2"), ev.SubagentStarted("sub-4", "x"), *sub_step("sub-4", "step-2"),
        ev.SubagentError("sub-4", "failed", code="e"), ev.StepFinished("step-2"),
    )
    check_events(three_deep, form="run")
    check_events([ev.to_dict(e) for e in three_deep], form="run")
    # A sub-run that fails may leave its blocks open when the run itself ends in error (a cut-off stream).
    check_events(run(START, ev.StepStarted("s", subagent_run_id=R), ev.TextMessageStart("m", subagent_run_id=R),
                     ev.SubagentError(R, "cut"), end=ev.RunError("cut")))


def d(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


@pytest.mark.parametrize(
    ("events", "message"),
    [
        pytest.param(run(*sub_step()), "before its SUBAGENT_STARTED", id="event-before-start"),
        pytest.param(run(START, DONE, *sub_step()), "after its SUBAGENT_FINISHED", id="event-after-finish"),
        pytest.param(run(START, ev.SubagentError(R, "x"), ev.TextMessageStart("m", subagent_run_id=R)),
                     "after its SUBAGENT_ERROR", id="event-after-error"),
        pytest.param(run(DONE), "no subagent run 'sub-1' was started", id="finish-without-start"),
        pytest.param(run(START, DONE, START, DONE), "started twice", id="id-reused"),
        pytest.param(run(START, ev.TextMessageStart("m", subagent_run_id=R), DONE),
                     r"SUBAGENT_FINISHED with open blocks \(subagent run 'sub-1'\)", id="finish-with-open-text"),
        pytest.param(run(START, ev.StepStarted("s", subagent_run_id=R), DONE), "SUBAGENT_FINISHED inside step",
                     id="finish-inside-step"),
        pytest.param(run(START, ev.ToolCallStart("c", "f", subagent_run_id=R),
                         ev.ToolCallArgs("c", "{", subagent_run_id=R), ev.ToolCallEnd("c", subagent_run_id=R), DONE,
                         ev.ToolCallResult("x", "c", "1")),
                     "result for tool call 'c' that was not started and ended$", id="result-of-another-runs-call"),
        pytest.param(run(ev.StepStarted("s"), START, ev.StepFinished("s", subagent_run_id=R)),
                     r"STEP_FINISHED without the matching STEP_STARTED \(subagent run 'sub-1'\)", id="step-of-parent"),
        pytest.param(run(ev.TextMessageStart("m"), START, ev.TextMessageContent("m", "x", subagent_run_id=R)),
                     "text message 'm' belongs to the run itself", id="content-for-parents-message"),
        pytest.param(run(START, ev.ToolCallStart("c", "f", subagent_run_id=R), ev.ToolCallEnd("c", subagent_run_id=R),
                         DONE, ev.ToolCallStart("c", "f")),
                     "tool call id 'c' belongs to subagent run 'sub-1'", id="tool-call-id-of-another-run"),
        pytest.param(run(ev.TextMessageStart("m"), ev.TextMessageEnd("m"), START,
                         ev.ToolCallStart("c", "f", parent_message_id="m", subagent_run_id=R)),
                     "parentMessageId 'm' is a message of another run", id="parent-message-of-another-run"),
        pytest.param(run(START), r"RUN_FINISHED while subagent runs are running: \['sub-1'\]", id="run-ends-first"),
        pytest.param(run(START, ev.TextMessageStart("m", subagent_run_id=R), ev.SubagentError(R, "x")),
                     "RUN_FINISHED while subagent run 'sub-1', ended by SUBAGENT_ERROR, left blocks open",
                     id="errored-run-left-text-open"),
        pytest.param(run(START, ev.SubagentStarted("sub-2", "dig", parent_subagent_run_id="nope")),
                     "parentSubagentRunId 'nope' names no subagent run", id="unknown-parent-subagent"),
        pytest.param(run(START, DONE, ev.SubagentStarted("sub-2", "dig", parent_subagent_run_id=R)),
                     "parentSubagentRunId 'sub-1' already ended", id="ended-parent-subagent"),
        pytest.param(run(START, ev.SubagentStarted("sub-2", "dig", parent_subagent_run_id=R), ev.SubagentError(R, "x"),
                         ev.TextMessageStart("m", subagent_run_id="sub-2")),
                     "event of subagent run 'sub-2' after its SUBAGENT_ERROR", id="child-cut-off-with-its-parent"),
        pytest.param(run(START, ev.SubagentFinished(R, outcome={"type": "interrupt"})), "neither",
                     id="bad-outcome"),
        pytest.param([ev.RunStarted("t", "r"), ev.RunFinished("t", "r"), START], "nothing may follow RUN_FINISHED",
                     id="after-the-run"),
        pytest.param([d("RUN_STARTED", threadId="t", runId="r"), d("SUBAGENT_STARTED", subagentRunId=R),
                      d("RUN_FINISHED", threadId="t", runId="r")], "without a name", id="dict-without-name"),
        pytest.param([d("RUN_STARTED", threadId="t", runId="r"), d("SUBAGENT_STARTED", name="x"),
                      d("RUN_FINISHED", threadId="t", runId="r")], "without a subagentRunId", id="dict-without-id"),
        pytest.param([d("RUN_STARTED", threadId="t", runId="r"), d("SUBAGENT_STARTED", subagentRunId=R, name="x"),
                      d("SUBAGENT_ERROR", subagentRunId=R), d("RUN_FINISHED", threadId="t", runId="r")],
                     "SUBAGENT_ERROR without a message", id="dict-error-without-message"),
    ],
)
def test_nested_violations_are_named(events: list[Any], message: str) -> None:
    with pytest.raises(GrammarError, match=message):
        check_events(events, form="run")


# -- the stream processor -----------------------------------------------------------------------------------


def test_the_sub_agents_work_stays_out_of_the_callers_message() -> None:
    events = nested_events()
    changes: list[tuple[str, str]] = []
    errors: list[Any] = []
    p = StreamProcessor(on_subagent_change=lambda s: changes.append((s.run_id, s.status)), on_error=errors.append)
    result = p.process(events)

    # the caller's message: its agent-tool call (output from its own TOOL_CALL_RESULT), the result, its text
    (message,) = p.messages
    assert [part.type for part in message.parts] == ["tool-call", "tool-result", "text"]
    (call,) = message.tool_calls
    assert (call.id, call.name, call.state, call.output) == ("call_p1", "research", "output-available", "Found: x=42.")
    assert call.input == {"prompt": "find x"}
    assert result.content == "x is 42." and result.reasoning is None
    assert [c.name for c in result.tool_calls] == ["research"]

    # the sub-run: a message of its own, linked to the caller's tool call
    (sub,) = p.subagents.values()
    start = next(e for e in events if e.type == "SUBAGENT_STARTED")
    assert isinstance(sub, SubagentRun) and sub.run_id == start.subagent_run_id
    assert (sub.name, sub.description, sub.parent_tool_call_id) == ("research", "Research a question.", "call_p1")
    assert (sub.status, sub.result, sub.outcome, sub.error) == ("success", "Found: x=42.", {"type": "success"}, None)
    assert p.subagents_of("call_p1") == [sub] and p.subagents_of("call_s1") == []
    (own,) = sub.messages
    assert own is sub.message and own.role == "assistant" and own.id != message.id
    assert [part.type for part in own.parts] == ["tool-call", "tool-result", "thinking", "text"]
    (inner,) = own.tool_calls
    assert (inner.id, inner.name, inner.state, inner.output) == ("call_s1", "lookup", "output-available", "x=42")
    assert sub.text == "Found: x=42." and own.reasoning == "Looking at the result."
    assert errors == [] and p.stats.unusable_events == 0
    assert changes[0] == (sub.run_id, "running") and changes[-1] == (sub.run_id, "success")

    # the AG-UI JSON form gives the same messages
    q = StreamProcessor()
    for e in events:
        q.process_chunk(ev.to_dict(e))
    q.finalize()
    assert [m.to_dict()["parts"] for m in q.messages] == [m.to_dict()["parts"] for m in p.messages]
    assert [m.to_dict()["parts"] for m in q.subagents[sub.run_id].messages] == [m.to_dict()["parts"]
                                                                               for m in sub.messages]


def test_an_agent_tool_inside_an_agent_tool_gives_two_linked_sub_runs() -> None:
    p = StreamProcessor()
    result = p.process(twice_nested_events())
    assert result.content == "x is 42." and [c.name for c in result.tool_calls] == ["research"]
    middle, inner = p.subagents.values()
    assert (middle.parent_tool_call_id, middle.parent_subagent_run_id) == ("call_p1", None)
    assert (inner.parent_tool_call_id, inner.parent_subagent_run_id) == ("call_m1", middle.run_id)
    assert [c.name for c in middle.message.tool_calls] == ["dig"]  # type: ignore[union-attr]
    assert middle.message.tool_calls[0].output == "Found: x=42."  # type: ignore[union-attr]
    assert middle.text == "Dug: x=42." and inner.text == "Found: x=42."
    assert [c.name for c in inner.message.tool_calls] == ["lookup"]  # type: ignore[union-attr]
    assert p.subagents_of("call_m1") == [inner]


def test_a_failing_sub_run_is_recorded_and_the_caller_goes_on() -> None:
    def broken(messages: list[Message], info: RequestInfo) -> Any:
        raise ModelError(404, "no such model", type="not_found_error")

    tool = Agent(FunctionModel(broken), name="broken").as_tool("research", "Research.")
    errors: list[Any] = []
    p = StreamProcessor(on_error=errors.append)
    result = p.process(chat(caller("research", "call_p1", "could not research"), "go", tools=[tool]))
    (sub,) = p.subagents.values()
    assert sub.status == "error" and sub.error is not None and "no such model" in sub.error[1]
    assert errors == [] and result.error is None and result.content == "could not research"
    (call,) = result.message.tool_calls  # type: ignore[union-attr]
    part = next(p for p in p.messages[0].parts if isinstance(p, ToolCallUIPart))
    assert call.name == "research" and part.state == "output-error"


def test_a_sub_runs_structured_output_stays_in_its_own_state() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}
    sub_agent = Agent(TestModel(output={"city": "Paris"}), output=schema)
    p = StreamProcessor()
    result = p.process(chat(caller("ask", "call_p1", "done"), "go", tools=[sub_agent.as_tool("ask", "Ask.")]))
    (sub,) = p.subagents.values()
    assert sub.state == {"output": {"city": "Paris"}}
    assert p.state == {} and result.output is None


def test_processor_rules_by_hand() -> None:
    errors: list[Any] = []
    p = StreamProcessor(on_error=errors.append)
    p.process_chunk(ev.RunStarted("t", "r"))
    p.process_chunk(ev.TextMessageChunk("m1", delta="Hello"))  # the caller's open chunk block
    # events of a sub-run nobody announced still open it (no name), and stay out of the caller's message
    p.process_chunk(ev.TextMessageStart("s1", subagent_run_id="anon"))
    p.process_chunk(ev.TextMessageContent("s1", "nested", subagent_run_id="anon"))
    # ... and closed the caller's chunk block, as transformChunks does stream-wide: a chunk without an id
    # opens nothing now
    p.process_chunk(ev.TextMessageChunk(delta=" lost"))
    assert p.stats.unusable_events == 1 and len(errors) == 1
    anon = p.subagents["anon"]
    assert anon.name is None and anon.status == "running" and anon.text == "nested"
    assert p.messages[0].text == "Hello"
    # a sub-run's unusable event is reported by the caller's processor too
    p.process_chunk(ev.ActivityDelta("nope", "PLAN", [], subagent_run_id="anon"))
    assert p.stats.unusable_events == 2 and anon.stats.unusable_events == 1 and len(errors) == 2
    # a snapshot's messages of a sub-run go to that run; of an unknown sub-run, nowhere
    p.process_chunk(ev.MessagesSnapshot([
        ev.AGUIMessage("u", "user", "hi"),
        ev.AGUIMessage("s1", "assistant", "nested, complete", subagent_run_id="anon"),
        ev.AGUIMessage("x", "assistant", "ghost", subagent_run_id="ghost"),
    ]))
    assert [m.id for m in p.messages] == ["u"]
    assert [(m.id, m.text) for m in anon.messages] == [("s1", "nested, complete")]
    assert "ghost" not in p.subagents
    p.process_chunk(ev.SubagentError("anon", "boom", code="e"))
    p.process_chunk(ev.RunFinished("t", "r"))
    assert (anon.status, anon.error, len(errors)) == ("error", ("e", "boom"), 2)


def test_held_back_text_of_the_caller_is_published_before_a_sub_run() -> None:
    class Hold:
        def should_emit(self, chunk: str, accumulated: str) -> bool:
            return False

        def reset(self) -> None:
            pass

    p = StreamProcessor(strategy=Hold())
    p.process_chunk(ev.RunStarted("t", "r"))
    p.process_chunk(ev.TextMessageStart("m"))
    p.process_chunk(ev.TextMessageContent("m", "Let me ask."))
    assert p.messages == []  # held back
    p.process_chunk(ev.SubagentStarted(R, "research"))
    assert p.messages[0].text == "Let me ask."
    p.process_chunk(ev.TextMessageStart("n", subagent_run_id=R))
    p.process_chunk(ev.TextMessageContent("n", "sub text", subagent_run_id=R))
    assert p.subagents[R].text == "sub text"  # a sub-run's text is published at once
    assert p.messages[0].text == "Let me ask."
