"""AG-UI events: JSON round trip, camelCase, omitted optionals, validated by the official models."""

from __future__ import annotations

import pytest
from hookstream import events as ev
from pydantic import TypeAdapter

ag_ui_core = pytest.importorskip("ag_ui.core", reason="ag-ui-protocol (test dependency) not installed")
OFFICIAL = TypeAdapter(ag_ui_core.Event)

SAMPLES = [
    ev.RunStarted("t1", "r1"),
    ev.RunFinished("t1", "r1", usage=ev.Usage(10, 5, 15, 2, 1), finish_reason="tool_calls",
                   raw_finish_reason="tool_use", outcome=ev.Outcome("success")),
    ev.RunFinished("t1", "r1", outcome=ev.Outcome("interrupt", [ev.Interrupt("i1", "approval", tool_call_id="c1")])),
    ev.RunFinished("t1", "r1", outcome=ev.Outcome("cancelled")),
    ev.RunError("overloaded", code="overloaded_error"),
    ev.TextMessageStart("m1"),
    ev.TextMessageContent("m1", "hé"),
    ev.TextMessageContent("m1", ""),
    ev.TextMessageEnd("m1"),
    ev.ToolCallStart("c1", "get_weather", metadata={"gemini": {"thoughtSignature": "abc"}}),
    ev.ToolCallArgs("c1", '{"ci'),
    ev.ToolCallEnd("c1"),
    ev.ToolCallResult("r1", "c1", '{"t": 1}'),
    ev.ReasoningStart("rs"),
    ev.ReasoningMessageStart("rs"),
    ev.ReasoningMessageContent("rs", "think"),
    ev.ReasoningMessageEnd("rs", metadata={"anthropic": {"signature": "sig"}}),
    ev.ReasoningEnd("rs"),
    ev.ReasoningEncryptedValue("message", "rs", "opaque"),
    ev.StepStarted("step-1"),
    ev.StepFinished("step-1"),
    ev.Custom("approval-requested", {"toolCallId": "c1", "approvalId": "a1"}),
]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_round_trip_and_official_schema(event: ev.BaseEvent) -> None:
    data = ev.to_dict(event)
    assert data["type"] == event.type
    assert all(v is not None for v in data.values()), "absent optionals must be omitted"
    assert all("_" not in k for k in data), f"keys must be camelCase: {list(data)}"
    assert ev.from_dict(data) == event
    official = OFFICIAL.validate_python(data)
    assert official.type.value == event.type


def test_wire_shapes() -> None:
    assert ev.to_dict(ev.RunStarted("t", "r")) == {"type": "RUN_STARTED", "threadId": "t", "runId": "r",
                                                  "protocolVersion": "1.0"}
    finished = ev.to_dict(ev.RunFinished("t", "r", usage=ev.Usage(3, 4), finish_reason="stop"))
    assert finished["usage"] == [{"inputTokens": 3, "outputTokens": 4}]
    assert finished["finishReason"] == "stop"
    assert ev.to_json(ev.TextMessageContent("m", "é")) == '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"é"}'


def test_usage_from_wire_list_is_summed() -> None:
    got = ev.from_dict({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                        "usage": [{"inputTokens": 1, "outputTokens": 2}, {"inputTokens": 10}]})
    assert isinstance(got, ev.RunFinished)
    assert got.usage == ev.Usage(11, 2)


def test_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown AG-UI event type"):
        ev.from_dict({"type": "NOPE"})
