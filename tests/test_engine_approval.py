"""Approval (synchronous callback, and interrupt + resume) and client tools over a real loopback OpenAI
server; the server checks that each resumed request carries the right messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_kit import MODEL, body_messages, customs, run, text_body, tool_body, types
from hookstream import Resume, Tool, ToolCallPart, chat, get_model, tool
from hookstream.errors import ResumeError
from hookstream.testing import CapturedRequest, LoopbackServer, Response, check_events

deleted: list[str] = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@tool(needs_approval=lambda args: args.get("amount", 0) > 100)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def weather(city: str) -> str:
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    deleted.clear()


def tool_message(req: CapturedRequest, call_id: str) -> dict[str, Any]:
    return next(m for m in body_messages(req) if m["role"] == "tool" and m["tool_call_id"] == call_id)


@pytest.mark.parametrize("approved", [True, False])
def test_approve_callback(approved: bool) -> None:
    asked: list[ToolCallPart] = []

    def approve(call: ToolCallPart) -> bool:
        asked.append(call)
        return approved

    responses = [Response(tool_body(("c1", "delete_file", {"path": "/tmp/x"}), ("c2", "pay", {"amount": 5}))),
                 Response(text_body("done"))]
    with LoopbackServer(responses) as srv:
        events, stream = run(srv.url, tools=[delete_file, pay], approve=approve)
    assert [c.id for c in asked] == ["c1"]  # pay(5) is under the predicate's threshold
    req = customs(events, "approval-requested")
    assert req == [{"toolCallId": "c1", "approvalId": "approval_c1", "toolName": "delete_file",
                    "input": {"path": "/tmp/x"}}]
    assert customs(events, "approval-responded")[0]["approved"] is approved
    assert deleted == (["/tmp/x"] if approved else [])
    c1 = tool_message(srv.requests[1], "c1")["content"]
    assert (c1 == "deleted /tmp/x") if approved else c1.startswith("Denied")
    assert tool_message(srv.requests[1], "c2")["content"] == "paid 5"
    assert stream.result().outcome == "success"


@pytest.mark.parametrize("approved", [True, False])
def test_interrupt_then_resume(approved: bool) -> None:
    first = [Response(tool_body(("c1", "weather", {"city": "Paris"}), ("c2", "delete_file", {"path": "/etc/x"})))]
    with LoopbackServer(first) as srv:
        events, stream = run(srv.url, tools=[weather, delete_file])
    assert len(srv.requests) == 1
    fin = events[-1]
    assert fin.type == "RUN_FINISHED" and fin.outcome.type == "interrupt"
    (intr,) = fin.outcome.interrupts
    assert (intr.id, intr.reason, intr.tool_call_id) == ("approval_c2", "tool_approval", "c2")
    assert customs(events, "approval-requested")[0]["approvalId"] == "approval_c2"
    # The tool that needed no approval already ran; its result is kept.
    assert [e.tool_call_id for e in events if e.type == "TOOL_CALL_RESULT"] == ["c1"]
    res = stream.result()
    assert res.outcome == "interrupt" and [p.approval_id for p in res.pending_approvals] == ["approval_c2"]
    assert deleted == []

    def check(index: int, req: CapturedRequest) -> str | None:
        msgs = body_messages(req)
        roles = [m["role"] for m in msgs]
        if roles != ["user", "assistant", "tool", "tool"]:
            return f"roles {roles}"
        if [m["tool_call_id"] for m in msgs[2:]] != ["c1", "c2"]:
            return "tool results out of call order"
        want = "deleted /etc/x" if approved else "Denied"
        return None if msgs[3]["content"].startswith(want) and msgs[2]["content"] == "sunny in Paris" else msgs[3]

    with LoopbackServer([Response(text_body("ok"))], check=check) as srv2:
        stream2 = chat(get_model(MODEL, base_url=srv2.url + "/v1", api_key="k"), tools=[weather, delete_file],
                       resume=res.resume({"approval_c2": approved}))
        events2 = check_events(list(stream2), form="run")
    assert events2[-1].type == "RUN_FINISHED", events2[-1]
    assert events2[-1].outcome.type == "success"
    assert deleted == (["/etc/x"] if approved else [])
    # The resumed run announces the call it answers before the result (grammar: result after call).
    assert types(events2)[:6] == ["RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                                  "TOOL_CALL_END", "STEP_FINISHED"]
    assert [e.tool_call_id for e in events2 if e.type == "TOOL_CALL_RESULT"] == ["c2"]
    assert stream2.result().text == "ok"


def test_resume_with_agui_entries_and_unanswered_calls_stay_pending() -> None:
    first = [Response(tool_body(("c1", "delete_file", {"path": "a"}), ("c2", "delete_file", {"path": "b"})))]
    with LoopbackServer(first) as srv:
        _, stream = run(srv.url, tools=[delete_file])
    res = stream.result()
    with LoopbackServer([Response(text_body("never"))]) as srv2:
        s2 = chat(get_model(MODEL, base_url=srv2.url + "/v1", api_key="k"), res.messages, tools=[delete_file],
                  resume=[{"interruptId": "approval_c1", "status": "resolved", "payload": {"approved": True}}])
        ev2 = check_events(list(s2), form="run")
    assert srv2.requests == [] and deleted == ["a"]
    assert ev2[-1].outcome.type == "interrupt" and [i.id for i in ev2[-1].outcome.interrupts] == ["approval_c2"]
    with LoopbackServer([Response(text_body("ok"))]) as srv3:
        s3 = chat(get_model(MODEL, base_url=srv3.url + "/v1", api_key="k"), tools=[delete_file],
                  resume=s2.result().resume({"approval_c2": False}))
        check_events(list(s3), form="run")
    msgs = body_messages(srv3.requests[0])
    assert [m.get("tool_call_id") for m in msgs if m["role"] == "tool"] == ["c1", "c2"]
    assert deleted == ["a"] and s3.result().outcome == "success"


def test_resume_rejects_unknown_ids() -> None:
    with LoopbackServer([Response(tool_body(("c1", "delete_file", {"path": "a"})))]) as srv:
        _, stream = run(srv.url, tools=[delete_file])
        url = srv.url
    s2 = chat(get_model(MODEL, base_url=url + "/v1", api_key="k"), tools=[delete_file],
              resume=stream.result().resume({"approval_nope": True}))
    events = list(s2)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "invalid_resume"
    assert isinstance(s2.result().error, ResumeError)


def test_client_tools_end_the_run_and_resume_with_outputs() -> None:
    location = Tool("get_location", "Ask the browser for the location",
                    {"type": "object", "properties": {"precise": {"type": "boolean"}}})
    confirm = {"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}
    first = [Response(tool_body(("c1", "get_location", {"precise": True}), ("c2", "confirm", {}),
                                ("c3", "weather", {"city": "Oslo"})))]
    with LoopbackServer(first) as srv:
        events, stream = run(srv.url, tools=[location, confirm, weather])
    fin = events[-1]
    assert fin.outcome.type == "success" and fin.outcome.pending_tool_call_ids == ["c1", "c2"]
    assert customs(events, "tool-input-available") == [
        {"toolCallId": "c1", "toolName": "get_location", "input": {"precise": True}},
        {"toolCallId": "c2", "toolName": "confirm", "input": {}}]
    res = stream.result()
    assert [c.id for c in res.pending_tool_calls] == ["c1", "c2"]

    def check(index: int, req: CapturedRequest) -> str | None:
        tools = {m["tool_call_id"]: m["content"] for m in body_messages(req) if m["role"] == "tool"}
        expected = {"c1": json.dumps({"lat": 59.9, "lon": 10.7}), "c2": "yes", "c3": "sunny in Oslo"}
        return None if tools == expected else f"tool messages {tools}"

    with LoopbackServer([Response(text_body("It is sunny where you are."))], check=check) as srv2:
        s2 = chat(get_model(MODEL, base_url=srv2.url + "/v1", api_key="k"), tools=[location, confirm, weather],
                  resume=res.resume(tool_outputs={"c1": {"lat": 59.9, "lon": 10.7}, "c2": "yes"}))
        ev2 = check_events(list(s2), form="run")
    assert ev2[-1].type == "RUN_FINISHED" and s2.result().text == "It is sunny where you are."
    assert [e.tool_call_id for e in ev2 if e.type == "TOOL_CALL_RESULT"] == ["c1", "c2"]


def test_resume_object_with_explicit_messages() -> None:
    with LoopbackServer([Response(tool_body(("c1", "delete_file", {"path": "z"})))]) as srv:
        _, stream = run(srv.url, tools=[delete_file])
    r = Resume(messages=stream.result().messages, approvals={"c1": True})  # tool call id works too
    with LoopbackServer([Response(text_body("ok"))]) as srv2:
        s2 = chat(get_model(MODEL, base_url=srv2.url + "/v1", api_key="k"), tools=[delete_file], resume=r)
        check_events(list(s2), form="run")
    assert deleted == ["z"]
