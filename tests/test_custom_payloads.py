"""The typed values of the engine's CUSTOM events: wire form unchanged, strict parsing with a typed error,
and every CUSTOM event of real engine runs (over a loopback OpenAI server) parses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookstream import HookstreamError, RepairRequest, StreamProcessor, Tool, ToolCallPart, tool
from hookstream import events as E
from hookstream.errors import MalformedCustomEventError
from hookstream.events import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    CustomPayload,
    LoopStoppedPayload,
    ToolCallRepairedPayload,
    ToolInputAvailablePayload,
    parse_custom,
)
from hookstream.testing import run_cli
from processor_kit import run_end, run_start

# Each payload with its wire value exactly as the engine has always sent it (AG-UI clients read these).
CASES: list[tuple[CustomPayload, str, dict[str, Any]]] = [
    (ToolCallRepairedPayload("c1", "add", {"a": 1}), "tool-call-repaired",
     {"toolCallId": "c1", "toolName": "add", "input": {"a": 1}}),
    (ToolCallRepairedPayload("c1", "add", None), "tool-call-repaired",
     {"toolCallId": "c1", "toolName": "add", "input": None}),
    (ToolInputAvailablePayload("c2", "get_location", {"precise": True}), "tool-input-available",
     {"toolCallId": "c2", "toolName": "get_location", "input": {"precise": True}}),
    (ApprovalRequestedPayload("c3", "approval_c3", "delete_file", {"path": "/tmp/x"}), "approval-requested",
     {"toolCallId": "c3", "approvalId": "approval_c3", "toolName": "delete_file", "input": {"path": "/tmp/x"}}),
    (ApprovalRespondedPayload("c3", "approval_c3", False), "approval-responded",
     {"toolCallId": "c3", "approvalId": "approval_c3", "approved": False}),
    (LoopStoppedPayload("max_steps", 2, 2), "loop-stopped", {"stoppedBy": "max_steps", "steps": 2, "maxSteps": 2}),
    (LoopStoppedPayload("stop_condition", 1, 10), "loop-stopped",
     {"stoppedBy": "stop_condition", "steps": 1, "maxSteps": 10}),
]


@pytest.mark.parametrize(("payload", "name", "wire"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_round_trip(payload: CustomPayload, name: str, wire: dict[str, Any]) -> None:
    assert payload.name == name
    assert payload.to_value() == wire
    assert list(payload.to_value()) == list(wire)  # key order of the JSON text unchanged too
    assert type(payload).from_value(wire) == payload
    event = payload.to_event()
    assert (event.name, event.value) == (name, wire)
    assert parse_custom(event) == payload
    # Through the AG-UI JSON form and back, as a client or a recording sees it.
    again = E.from_json(E.to_json(event))
    assert parse_custom(again) == payload


def test_unknown_keys_are_ignored_and_other_events_are_not_payloads() -> None:
    wire = {"toolCallId": "c1", "approvalId": "a", "approved": True, "approvedBy": "ops"}
    assert parse_custom(E.Custom("approval-responded", wire)) == ApprovalRespondedPayload("c1", "a", True)
    assert parse_custom(E.Custom("my-app-event", {"anything": 1})) is None
    assert parse_custom(E.Custom("my-app-event", "not even a dict")) is None
    assert parse_custom(E.TextMessageContent("m", "hi")) is None


MALFORMED: list[tuple[str, Any, str]] = [
    ("approval-requested", None, "NoneType, not a JSON object"),
    ("approval-requested", ["c1"], "list, not a JSON object"),
    # The TanStack-style nested form: no approvalId at the top level.
    ("approval-requested", {"toolCallId": "c1", "toolName": "f", "input": {},
                            "approval": {"id": "ap", "needsApproval": True}}, "missing 'approvalId'"),
    ("approval-requested", {"toolCallId": "c1", "approvalId": "a", "toolName": "f", "input": "{}"},
     "'input' is str, not a JSON object"),
    ("approval-responded", {"toolCallId": "c1", "approvalId": "a", "approved": 1}, "'approved' is int, not a boolean"),
    ("approval-responded", {"toolCallId": 7, "approvalId": "a", "approved": True}, "'toolCallId' is int, not a string"),
    ("tool-input-available", {"toolCallId": "c1", "toolName": "f", "input": None}, "'input' is NoneType"),
    ("tool-input-available", {"toolCallId": "c1", "input": {}}, "missing 'toolName'"),
    ("tool-call-repaired", {"toolCallId": "c1", "toolName": "f", "input": [1]}, "not a JSON object or null"),
    ("loop-stopped", {"stoppedBy": "tired", "steps": 1, "maxSteps": 1}, "'stoppedBy' is 'tired'"),
    ("loop-stopped", {"stoppedBy": "max_steps", "steps": True, "maxSteps": 1}, "'steps' is bool, not an integer"),
    ("loop-stopped", {"stoppedBy": "max_steps", "steps": 1, "maxSteps": 1.0}, "'maxSteps' is float"),
]


@pytest.mark.parametrize(("name", "value", "says"), MALFORMED)
def test_malformed_value_raises_a_typed_error(name: str, value: Any, says: str) -> None:
    with pytest.raises(MalformedCustomEventError) as info:
        parse_custom(E.Custom(name, value))
    err = info.value
    assert isinstance(err, HookstreamError) and isinstance(err, ValueError)
    assert err.code == "malformed_custom_event" and err.name == name
    assert says in err.problem and name in err.message


def test_processor_rejects_a_malformed_value_and_keeps_its_messages() -> None:
    errors: list[Any] = []
    p = StreamProcessor(on_error=errors.append)
    p.process([run_start(), E.ToolCallStart("c1", "f"), E.ToolCallArgs("c1", "{}"), E.ToolCallEnd("c1")])
    before = [m.to_dict() for m in p.messages]
    # Counted and reported, the stream goes on (the AI SDK's and TanStack AI's processors go on too).
    p.process_chunk(E.Custom("approval-requested", {"toolCallId": "c1", "toolName": "f", "input": {}}))
    assert [m.to_dict() for m in p.messages] == before
    assert p.stats.unusable_events == 1
    assert [e.code for e in errors] == ["malformed_custom_event"] and "approvalId" in errors[0].message
    # Not one of the engine's names: handed to on_custom_event untouched, as before.
    seen: list[tuple[str, Any]] = []
    p2 = StreamProcessor(on_custom_event=lambda name, value: seen.append((name, value)))
    p2.process([run_start(), E.Custom("loop-stopped", {"stoppedBy": "max_steps", "steps": 1, "maxSteps": 1}),
                E.Custom("progress", 0.5), run_end()])
    assert seen == [("loop-stopped", {"stoppedBy": "max_steps", "steps": 1, "maxSteps": 1}), ("progress", 0.5)]


def test_process_cli_names_the_malformed_line(tmp_path: Path) -> None:
    bad = E.Custom("approval-responded", {"toolCallId": "c1", "approved": "yes"})
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(E.to_json(e) for e in [run_start(), bad, run_end()]) + "\n", encoding="utf-8")
    res = run_cli(["process", str(log)])
    assert res.exit_code == 1
    assert "run.jsonl:2: CUSTOM 'approval-responded': missing 'approvalId'" in res.stderr
    assert json.loads(res.stdout) == []


# -- real engine runs --------------------------------------------------------------------------------------


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def add(a: int, b: int) -> int:
    return a + b


def _repair(req: RepairRequest) -> ToolCallPart | None:
    return ToolCallPart(req.call.id, "add", {"a": int(req.call.arguments["x"]), "b": 2})  # type: ignore[index]


def _payloads(events: list[Any]) -> list[CustomPayload]:
    customs = [e for e in events if e.type == "CUSTOM"]
    parsed = [parse_custom(e) for e in customs]
    assert None not in parsed, [e.name for e in customs]
    return [p for p in parsed if p is not None]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "held"])
def test_engine_run_customs_parse_repair_approve_and_stop(streamed: bool) -> None:
    engine_kit = pytest.importorskip("engine_kit")
    from hookstream.testing import LoopbackServer, Response

    body = engine_kit.tool_body(("c1", "addition", {"x": "40"}), ("c2", "delete_file", {"path": "/tmp/x"}))
    with LoopbackServer([Response(body)]) as srv:
        events, stream = engine_kit.run(srv.url, tools=[add, delete_file], repair_tool_call=_repair,
                                        approve=lambda call: True, max_steps=1,
                                        stream_tool_call_responses=streamed)
    assert _payloads(events) == [
        ToolCallRepairedPayload("c1", "add", {"a": 40, "b": 2}),
        ApprovalRequestedPayload("c2", "approval_c2", "delete_file", {"path": "/tmp/x"}),
        ApprovalRespondedPayload("c2", "approval_c2", True),
        LoopStoppedPayload("max_steps", 1, 1),
    ]
    assert stream.result().stopped_by == "max_steps"


def test_engine_run_customs_parse_client_tool_and_interrupt() -> None:
    engine_kit = pytest.importorskip("engine_kit")
    from hookstream.testing import LoopbackServer, Response

    location = Tool("get_location", "Ask the browser for the location",
                    {"type": "object", "properties": {"precise": {"type": "boolean"}}})
    body = engine_kit.tool_body(("c1", "get_location", {"precise": True}), ("c2", "delete_file", {"path": "/a"}))
    with LoopbackServer([Response(body)]) as srv:
        events, _ = engine_kit.run(srv.url, tools=[location, delete_file])
    assert _payloads(events) == [
        ToolInputAvailablePayload("c1", "get_location", {"precise": True}),
        ApprovalRequestedPayload("c2", "approval_c2", "delete_file", {"path": "/a"}),
    ]
    assert events[-1].outcome.type == "interrupt"
    # The processor takes the same events: the approval id on the part is the engine's.
    p = StreamProcessor()
    p.process(events)
    part = next(pt for pt in p.messages[-1].parts if getattr(pt, "id", None) == "c2")
    assert part.state == "approval-requested" and part.approval.id == "approval_c2"  # type: ignore[union-attr]
