"""UI messages ↔ model messages: split at tool-result boundaries, lossless round trip with metadata."""

from __future__ import annotations

from hookstream import (
    Message,
    ReasoningPart,
    StreamProcessor,
    TextPart,
    ToolCallPart,
    ToolCallUIPart,
    ToolResultPart,
    UIMessage,
    model_messages_to_ui_messages,
    ui_messages_to_model_messages,
)
from hookstream import events as E
from processor_kit import run_end, run_start, text, tool

SIG = {"anthropic": {"signature": "EqQBCgIYAhIM"}}


def conversation() -> list[Message]:
    return [
        Message.system("be brief"),
        Message.user("weather in Oslo and Rome?"),
        Message("assistant", [
            ReasoningPart("two cities", SIG),
            TextPart("Checking."),
            ToolCallPart("c1", "weather", {"city": "Oslo"}, '{"city": "Oslo"}', {"gemini": {"thoughtSignature": "a"}}),
            ToolCallPart("c2", "weather", {"city": "Rome"}, '{"city":"Rome"}'),
        ]),
        Message("tool", [ToolResultPart("c1", "weather", {"temp": 3}),
                         ToolResultPart("c2", "weather", "service down", is_error=True)]),
        Message("assistant", [ReasoningPart("", {"openai": {"itemId": "rs_1", "encryptedContent": "gAAA"}}),
                              ToolCallPart("c3", "weather", {"city": "Rome"}, '{"city": "Rome"}')]),
        Message("tool", [ToolResultPart("c3", "weather", "sunny")]),
        Message("assistant", [TextPart("Oslo 3°C, Rome sunny.")]),
        Message.user("thanks"),
        Message.assistant("You're welcome."),
        Message.assistant("Anything else?"),
    ]


def test_model_ui_model_round_trip_is_lossless() -> None:
    model = conversation()
    ui = model_messages_to_ui_messages(model)
    assert [m.role for m in ui] == ["system", "user", "assistant", "user", "assistant", "assistant"]
    loop = ui[2]
    assert [p.type for p in loop.parts] == ["thinking", "text", "tool-call", "tool-call", "tool-result", "tool-result",
                                            "thinking", "tool-call", "tool-result", "text"]
    c2 = loop.parts[3]
    assert isinstance(c2, ToolCallUIPart) and (c2.state, c2.output) == ("output-error", "service down")
    assert ui_messages_to_model_messages(ui) == model
    # Through the JSON form too.
    assert ui_messages_to_model_messages([UIMessage.from_dict(m.to_dict()) for m in ui]) == model


def test_processor_output_converts_to_split_model_messages() -> None:
    p = StreamProcessor()
    p.process([
        run_start(),
        E.ReasoningMessageContent("r1", "plan"), E.ReasoningMessageEnd("r1", metadata=SIG),
        *text("m1", "Looking."), *tool("c1", "f", '{"a": 1}'), E.ToolCallResult("x", "c1", '{"ok": true}'),
        *text("m2", "Done."), run_end(),
    ])
    assert ui_messages_to_model_messages(p.messages) == [
        Message("assistant", [ReasoningPart("plan", SIG), TextPart("Looking."),
                              ToolCallPart("c1", "f", {"a": 1}, '{"a": 1}')]),
        Message("tool", [ToolResultPart("c1", "f", {"ok": True})]),
        Message("assistant", [TextPart("Done.")]),
    ]


def test_client_tool_output_without_result_part_is_synthesised() -> None:
    ui = [UIMessage("m", "assistant", [ToolCallUIPart("c1", "f", "{}", "output-available", {}, output=5)])]
    assert ui_messages_to_model_messages(ui) == [
        Message("assistant", [ToolCallPart("c1", "f", {}, "{}")]),
        Message("tool", [ToolResultPart("c1", "f", 5)]),
    ]
