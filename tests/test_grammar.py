"""The grammar checker accepts the adapter form and the engine's run form, and names what is wrong."""

from __future__ import annotations

import pytest
from hookstream import events as ev
from hookstream.testing import GrammarError, check_events

OK_CALL = [
    ev.RunStarted("t", "r"),
    ev.ReasoningStart("a"), ev.ReasoningMessageStart("a"), ev.ReasoningMessageContent("a", "x"),
    ev.ReasoningMessageEnd("a"), ev.ReasoningEnd("a"),
    ev.TextMessageStart("m"), ev.TextMessageContent("m", "hi"), ev.TextMessageEnd("m"),
    ev.ToolCallStart("c1", "f"), ev.ToolCallStart("c2", "g"), ev.ToolCallArgs("c1", "{}"),
    ev.ToolCallArgs("c2", "{}"), ev.ToolCallEnd("c2"), ev.ToolCallEnd("c1"),
    ev.RunFinished("t", "r"),
]


def test_call_form_accepts_interleaved_tool_calls() -> None:
    assert check_events(OK_CALL, form="call") == OK_CALL


def test_run_form() -> None:
    run = [ev.RunStarted("t", "r"), ev.StepStarted("step-1"), *OK_CALL[1:-1], ev.StepFinished("step-1"),
           ev.ToolCallResult("x", "c1", "1"), ev.StepStarted("step-2"), ev.StepFinished("step-2"),
           ev.RunFinished("t", "r")]
    check_events(run)
    check_events([ev.to_dict(e) for e in run], form="run")


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([ev.TextMessageStart("m")], "must start with RUN_STARTED"),
        ([ev.RunStarted("t", "r"), ev.TextMessageContent("m", "x"), ev.RunFinished("t", "r")], "not open"),
        ([ev.RunStarted("t", "r"), ev.TextMessageStart("m"), ev.RunFinished("t", "r")], "open blocks"),
        ([ev.RunStarted("t", "r"), ev.RunFinished("t", "r"), ev.RunStarted("t", "r")], "nothing may follow"),
        ([ev.RunStarted("t", "r"), ev.ToolCallResult("x", "c9", "1"), ev.RunFinished("t", "r")], "not started"),
        ([ev.RunStarted("t", "r")], "did not end"),
        ([ev.RunStarted("t", "r"), ev.StepStarted("s"), ev.RunFinished("t", "r")], "inside step"),
    ],
)
def test_violations_are_named(events: list[ev.BaseEvent], message: str) -> None:
    with pytest.raises(GrammarError, match=message):
        check_events(events)


def test_run_error_may_leave_blocks_open() -> None:
    check_events([ev.RunStarted("t", "r"), ev.ToolCallStart("c", "f"), ev.ToolCallArgs("c", '{"a'),
                  ev.RunError("cut", code="connection_closed")], form="call")


def test_activity_events_are_accepted_anywhere_in_a_run() -> None:
    # AG-UI 1.0 activity events (a tool's progress) stand alone like CUSTOM: the checker once refused
    # them as unknown, so tools that streamed progress could only use CUSTOM events.
    run = [ev.RunStarted("t", "r"), ev.ActivitySnapshot("a1", "progress", {"done": 0}),
           ev.StepStarted("step-1"), ev.ActivityDelta("a1", "progress", [{"op": "replace", "path": "/done",
                                                                          "value": 1}]),
           ev.StepFinished("step-1"), ev.RunFinished("t", "r")]
    check_events(run)
    check_events([ev.to_dict(e) for e in run], form="run")
