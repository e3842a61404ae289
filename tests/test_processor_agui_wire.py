"""AG-UI 1.0 wire form: every event the ``ag-ui-protocol`` package defines reads through ``from_json``
with its exact camelCase names, writes back in a form its pydantic models accept, and drives the
processor when it arrives as JSON (``model_dump_json(by_alias=True)``, what another AG-UI server sends).
"""

from __future__ import annotations

import json
from typing import Any

import cattrs
import pytest
from ag_ui import core as A
from ag_ui.core import events as AE
from hookstream import StreamProcessor
from hookstream import events as E
from pydantic import TypeAdapter

EVENT = TypeAdapter(AE.Event)


def wire(model: Any) -> str:
    return str(model.model_dump_json(by_alias=True))


SAMPLES: list[Any] = [
    AE.RunStartedEvent(thread_id="t", run_id="r", parent_run_id="p", protocol_version="1.0", input=A.RunAgentInput(
        thread_id="t", run_id="r", state={}, messages=[], tools=[], context=[], forwarded_props={})),
    AE.TextMessageStartEvent(message_id="m", role="user", name="ann", subagent_run_id="sub-1"),
    AE.TextMessageContentEvent(message_id="m", delta="hi", raw_event={"x": 1}, timestamp=5),
    AE.TextMessageEndEvent(message_id="m"),
    AE.TextMessageChunkEvent(message_id="m", role="assistant", delta="x", name="bot"),
    AE.TextMessageChunkEvent(delta=""),
    AE.ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m"),
    AE.ToolCallArgsEvent(tool_call_id="c", delta="{}"),
    AE.ToolCallEndEvent(tool_call_id="c"),
    AE.ToolCallChunkEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m", delta="{"),
    AE.ToolCallResultEvent(message_id="r", tool_call_id="c", content="ok", role="tool"),
    AE.StateSnapshotEvent(snapshot={"a": 1}),
    AE.StateDeltaEvent(delta=[{"op": "add", "path": "/b", "value": 2}]),  # type: ignore[list-item]
    AE.MessagesSnapshotEvent(messages=[
        A.UserMessage(id="u", content="hello", name="ann"),
        A.UserMessage(id="u2", content=[A.TextInputContent(text="look"), A.ImageInputContent(
            source=A.InputContentDataSource(value="aGk=", mime_type="image/png"))]),
        A.SystemMessage(id="s", content="be brief"),
        A.DeveloperMessage(id="d", content="dev"),
        A.AssistantMessage(id="a", content="calling", tool_calls=[
            A.ToolCall(id="c", function=A.FunctionCall(name="f", arguments='{"q": 1}'))]),
        A.ToolMessage(id="tm", content="42", tool_call_id="c", error=None),
        A.ActivityMessage(id="act", activity_type="PLAN", content={"steps": []}),
        A.ReasoningMessage(id="rs", content="hmm", encrypted_value="ENC"),
    ]),
    AE.ActivitySnapshotEvent(message_id="act", activity_type="PLAN", content={"steps": [1]}, replace=False),
    AE.ActivityDeltaEvent(message_id="act", activity_type="PLAN", patch=[{"op": "add", "path": "/x", "value": 1}]),  # type: ignore[list-item]
    AE.RawEvent(event={"k": 1}, source="p"),
    AE.CustomEvent(name="n", value={"v": 1}),
    AE.RunFinishedEvent(thread_id="t", run_id="r", result={"ok": True}),
    AE.RunErrorEvent(message="boom", code="x"),
    AE.StepStartedEvent(step_name="s"),
    AE.StepFinishedEvent(step_name="s"),
    AE.ReasoningStartEvent(message_id="rs"),
    AE.ReasoningMessageStartEvent(message_id="rs", role="reasoning"),
    AE.ReasoningMessageContentEvent(message_id="rs", delta="t"),
    AE.ReasoningMessageEndEvent(message_id="rs"),
    AE.ReasoningMessageChunkEvent(message_id="rs", delta="t"),
    AE.ReasoningEndEvent(message_id="rs"),
    AE.ReasoningEncryptedValueEvent(subtype="message", entity_id="rs", encrypted_value="E"),
    AE.SubagentStartedEvent(subagent_run_id="sub-1", name="research", parent_tool_call_id="c"),
    AE.SubagentFinishedEvent(subagent_run_id="sub-1", outcome=AE.SubagentFinishedSuspendedOutcome(
        interrupt_ids=["i1"])),
    AE.SubagentErrorEvent(subagent_run_id="sub-1", message="failed", code="e"),
]


def test_every_agui_event_type_has_a_class() -> None:
    public = [getattr(E, name) for name in E.__all__]
    classes = [c for c in public if isinstance(c, type) and issubclass(c, E.BaseEvent) and c is not E.BaseEvent]
    types = {cls.type for cls in classes}
    assert {t.value for t in AE.EventType} == types


@pytest.mark.parametrize("model", SAMPLES, ids=lambda m: f"{m.type.value}")
def test_wire_round_trip_through_the_agui_models(model: Any) -> None:
    text = wire(model)
    event = E.from_json(text)
    assert event.type == model.type.value
    back = json.loads(E.to_json(event))
    # What hookstream writes is what ag-ui-protocol wrote (every field kept, by its wire name) ...
    assert back == json.loads(text)
    # ... and what its models accept.
    EVENT.validate_python(back)


def test_snapshot_messages_are_typed() -> None:
    event = E.from_json(wire(SAMPLES[13]))
    assert isinstance(event, E.MessagesSnapshot)
    by_role = {m.role: m for m in event.messages}
    assert set(by_role) == set(E.MESSAGE_ROLES)
    call = by_role["assistant"].tool_calls[0]  # type: ignore[index]
    assert (call.id, call.function.name, call.function.arguments) == ("c", "f", '{"q": 1}')
    assert by_role["tool"].tool_call_id == "c" and by_role["activity"].activity_type == "PLAN"
    assert by_role["reasoning"].encrypted_value == "ENC"
    # A message no AG-UI role describes, or without what its role requires, is no snapshot.
    for bad, says in (({"id": "x", "role": "robot", "content": ""}, "role 'robot'"),
                      ({"id": "x", "role": "tool", "content": ""}, "lacks toolCallId")):
        with pytest.raises(cattrs.BaseValidationError) as info:
            E.from_dict({"type": "MESSAGES_SNAPSHOT", "messages": [bad]})
        assert info.group_contains(ValueError, match=says, depth=None)


def test_hookstream_extras_still_travel() -> None:
    ev = E.RunFinished("t", "r", usage=E.Usage(1, 2, 3), finish_reason="stop", raw_finish_reason="end_turn")
    data = E.to_dict(ev)
    assert data["finishReason"] == "stop" and data["rawFinishReason"] == "end_turn"
    assert E.from_dict(data) == ev
    EVENT.validate_python(data)


def test_processor_reads_a_foreign_stream_as_json() -> None:
    """Another AG-UI server's run, as its pydantic models put it on the wire."""
    stream = [
        AE.RunStartedEvent(thread_id="t", run_id="r1"),
        AE.MessagesSnapshotEvent(messages=[A.UserMessage(id="u1", content="weather in Paris?")]),
        AE.TextMessageChunkEvent(message_id="a1", role="assistant", delta="Let me "),
        AE.TextMessageChunkEvent(delta="check."),
        AE.ToolCallChunkEvent(tool_call_id="c1", tool_call_name="weather", parent_message_id="a1", delta='{"city":'),
        AE.ToolCallChunkEvent(delta=' "Paris"}'),
        AE.ToolCallResultEvent(message_id="t1", tool_call_id="c1", content='{"temp": 21}'),
        AE.ReasoningMessageChunkEvent(message_id="r1", delta="warm"),
        AE.TextMessageStartEvent(message_id="a2", role="assistant"),
        AE.TextMessageContentEvent(message_id="a2", delta="21 degrees."),
        AE.TextMessageEndEvent(message_id="a2"),
        AE.StateSnapshotEvent(snapshot={"city": "Paris"}),
        AE.StateDeltaEvent(delta=[{"op": "replace", "path": "/city", "value": "Lyon"}]),  # type: ignore[list-item]
        AE.ActivitySnapshotEvent(message_id="plan", activity_type="PLAN", content={"done": 1}),
        AE.RunFinishedEvent(thread_id="t", run_id="r1"),
    ]
    errors: list[Any] = []
    p = StreamProcessor(on_error=errors.append)
    for model in stream:
        p.process_chunk(json.loads(wire(model)))  # the dict form
    r = p.finalize()
    assert errors == [] and p.stats.unusable_events == 0
    assert [(m.id, m.role) for m in p.messages] == [("u1", "user"), ("a1", "assistant")]
    assert [(part.type, getattr(part, "content", None)) for part in p.messages[1].parts] == [
        ("text", "Let me check."), ("tool-call", None), ("tool-result", '{"temp": 21}'), ("thinking", "warm"),
        ("text", "21 degrees."),
    ]
    call = p.messages[1].tool_calls[0]
    assert (call.input, call.state, call.output) == ({"city": "Paris"}, "output-available", {"temp": 21})
    assert r.content == "Let me check.21 degrees." and p.state == {"city": "Lyon"}
    assert p.activities["plan"].content == {"done": 1}
