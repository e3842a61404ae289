"""Nothing lost: a consumer that stops iterating (``break``) aborts the run exactly like ``cancel()``,
and the engine's CUSTOM events (approval-responded, tool-call-repaired, loop-stopped) reach the UI
message. Every run goes through a real loopback OpenAI server and the real adapter."""

from __future__ import annotations

from typing import Any

import pytest
from engine_kit import MODEL, customs, run, text_body, text_pieces, tool_body, tool_pieces
from hookstream import (
    Callbacks,
    ChatStream,
    RepairRequest,
    StreamProcessor,
    ToolCallPart,
    ToolCallUIPart,
    chat,
    get_model,
    tool,
)
from hookstream.stores import InMemoryStore
from hookstream.testing import LoopbackServer, Response

KEEPALIVE = b": keepalive\n\n"


class Calls:
    """Counts each run callback."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Any]] = {}

    def kwargs(self) -> dict[str, Any]:
        names = ("on_step_finish", "on_finish", "on_error", "on_abort")
        return {n: (lambda arg, n=n: self.seen.setdefault(n, []).append(arg)) for n in names}

    def count(self, name: str) -> int:
        return len(self.seen.get(name, []))


def stop_after_text(how: str, store: InMemoryStore, calls: Calls, url: str) -> ChatStream:
    """Start a run, read until the second text delta arrived, then stop it by ``how``."""
    stream = chat(get_model(MODEL, base_url=url + "/v1", api_key="sk-test"), "hi", memory=store, thread_id="t1",
                  callbacks=Callbacks(**calls.kwargs()))
    deltas = 0
    for ev in stream:
        if ev.type == "TEXT_MESSAGE_CONTENT":
            deltas += 1
            if deltas == 2:
                if how == "cancel":
                    stream.cancel()
                else:
                    break
    return stream


@pytest.mark.parametrize("how", ["cancel", "break"])
def test_break_keeps_what_arrived_like_cancel(how: str) -> None:
    # Two text deltas, then the server stalls (keepalive comments) until the client goes away.
    pieces = text_pieces("Hel", "lo")[:3] + [KEEPALIVE] * 400
    store, calls = InMemoryStore(), Calls()
    with LoopbackServer([Response(pieces=pieces, delay=0.05)]) as srv:
        stream = stop_after_text(how, store, calls, srv.url)
        res = stream.result()
    assert res.outcome == "cancelled"
    assert len(res.steps) == 1 and res.text == "Hello"
    assert [(m.role, m.text) for m in res.messages] == [("user", "hi"), ("assistant", "Hello")]
    # Memory holds the partial answer, not only the user message.
    assert [(m.role, m.text) for m in store.load("t1")] == [("user", "hi"), ("assistant", "Hello")]
    # Callbacks fired once each, on_abort with the kept text.
    assert (calls.count("on_step_finish"), calls.count("on_abort"), calls.count("on_finish")) == (1, 1, 1)
    assert calls.count("on_error") == 0 and calls.seen["on_abort"][0].text == "Hello"


def test_break_mid_tool_calls_keeps_the_calls_paired_and_runs_nothing() -> None:
    ran: list[str] = []

    def ping() -> str:
        ran.append("ping")
        return "pong"

    # The tool call streams completely, then the server stalls before finish_reason.
    pieces = tool_pieces(("c1", "ping", {}), text="Let me check.")[:4] + [KEEPALIVE] * 400
    store = InMemoryStore()
    with LoopbackServer([Response(pieces=pieces, delay=0.05)]) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "hi", tools=[ping], memory=store,
                      thread_id="t1")
        for ev in stream:
            if ev.type == "TOOL_CALL_ARGS":
                break
        res = stream.result()
    assert res.outcome == "cancelled" and len(res.steps) == 1 and res.text == "Let me check."
    assert ran == []
    roles = [m.role for m in res.messages]
    assert roles == ["user", "assistant", "tool"] and [m.role for m in store.load("t1")] == roles
    assert res.messages[-1].tool_results[0].is_error


def test_break_before_the_approval_answer_asks_nobody() -> None:
    asked: list[str] = []

    @tool(needs_approval=True)
    def wipe() -> str:
        """Wipe everything."""
        asked.append("ran")
        return "wiped"

    def approve(call: ToolCallPart) -> bool:
        asked.append("asked")
        return True

    with LoopbackServer([Response(tool_body(("c1", "wipe", {}))), Response(text_body("never"))]) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "hi", tools=[wipe],
                      approve=approve)
        for ev in stream:
            if ev.type == "CUSTOM" and ev.name == "approval-requested":
                break
        res = stream.result()
    assert asked == [] and res.outcome == "cancelled" and len(srv.requests) == 1
    assert [m.role for m in res.messages] == ["user", "assistant", "tool"]


def test_closing_the_engine_generator_aborts_like_cancel() -> None:
    # close() on the engine's own generator: what a web server does when the client goes away.
    pieces = text_pieces("a", "b")[:3] + [KEEPALIVE] * 400
    with LoopbackServer([Response(pieces=pieces, delay=0.05)]) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "hi")
        events = stream.engine.events()
        for ev in events:
            if ev.type == "TEXT_MESSAGE_CONTENT" and ev.delta == "b":  # type: ignore[attr-defined]
                break
        events.close()  # type: ignore[attr-defined]
        res = stream.engine.result()
    assert res.outcome == "cancelled" and res.text == "ab" and res.messages[-1].text == "ab"


# -- the UI message shows what the engine decided --------------------------------------------------


def ui_tool_part(events: list[Any], call_id: str) -> ToolCallUIPart:
    processor = StreamProcessor()
    processor.process(events)
    return next(p for m in processor.messages for p in m.parts
                if isinstance(p, ToolCallUIPart) and p.id == call_id)


@pytest.mark.parametrize("approved", [True, False])
def test_processor_shows_the_approval_answer(approved: bool) -> None:
    @tool(needs_approval=True)
    def wipe() -> str:
        """Wipe everything."""
        return "wiped"

    with LoopbackServer([Response(tool_body(("c1", "wipe", {}))), Response(text_body("ok"))]) as srv:
        events, _ = run(srv.url, tools=[wipe], approve=lambda call: approved)
    part = ui_tool_part(events, "c1")
    assert part.approval is not None and part.approval.approved is approved
    if approved:
        assert part.state == "output-available" and part.output == "wiped"
    else:
        assert part.state == "output-error" and "Denied" in str(part.output)


def test_processor_sets_approval_responded_before_the_result() -> None:
    from hookstream import events as E

    processor = StreamProcessor()
    for ev in [E.RunStarted("t", "r"), E.StepStarted("step-1"), E.ToolCallStart("c1", "wipe"),
               E.ToolCallArgs("c1", "{}"), E.ToolCallEnd("c1"), E.StepFinished("step-1"),
               E.Custom("approval-requested", {"toolCallId": "c1", "approvalId": "approval_c1",
                                               "toolName": "wipe", "input": {}}),
               E.Custom("approval-responded", {"toolCallId": "c1", "approvalId": "approval_c1",
                                               "approved": False})]:
        processor.process_chunk(ev)
    part = processor.messages[-1].parts[0]
    assert isinstance(part, ToolCallUIPart)
    assert part.state == "approval-responded" and part.approval is not None and part.approval.approved is False


def test_repaired_call_is_announced_and_shown() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    def repair(req: RepairRequest) -> ToolCallPart | None:
        return ToolCallPart(req.call.id, "add", {"a": int(req.call.arguments["x"]), "b": 2})  # type: ignore[index]

    with LoopbackServer([Response(tool_body(("c1", "addition", {"x": "40"}))), Response(text_body("42"))]) as srv:
        events, _ = run(srv.url, tools=[add], repair_tool_call=repair)
    assert customs(events, "tool-call-repaired") == [{"toolCallId": "c1", "toolName": "add",
                                                      "input": {"a": 40, "b": 2}}]
    kinds = [(e.type, getattr(e, "name", None)) for e in events]
    assert kinds.index(("CUSTOM", "tool-call-repaired")) < kinds.index(("TOOL_CALL_RESULT", None))
    part = ui_tool_part(events, "c1")
    assert (part.name, part.input, part.output, part.state) == ("add", {"a": 40, "b": 2}, 42, "output-available")
    assert part.arguments == '{"a": 40, "b": 2}'


# -- a loop cut short by max_steps says so ---------------------------------------------------------


def test_max_steps_stop_is_recorded_and_announced() -> None:
    def ping() -> str:
        return "pong"

    responses = [Response(tool_body((f"c{i}", "ping", {}))) for i in range(3)]
    with LoopbackServer(responses) as srv:
        events, stream = run(srv.url, tools=[ping], max_steps=2)
    res = stream.result()
    assert len(srv.requests) == 2 and res.outcome == "success" and res.stopped_by == "max_steps"
    assert customs(events, "loop-stopped") == [{"stoppedBy": "max_steps", "steps": 2, "maxSteps": 2}]
    assert events[-2].type == "CUSTOM" and events[-1].type == "RUN_FINISHED"


def test_a_finished_answer_is_not_marked_stopped() -> None:
    with LoopbackServer([Response(text_body("hi"))]) as srv:
        events, stream = run(srv.url, max_steps=1)
    assert stream.result().stopped_by is None and customs(events, "loop-stopped") == []
