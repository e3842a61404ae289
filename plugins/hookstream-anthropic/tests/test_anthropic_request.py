"""Request building: a whole conversation -> the documented Messages API body, sent over loopback.

Documented shape (Anthropic API reference "Messages", "Tool use", "Extended thinking"): ``system`` at
top level; ``messages`` alternate ``user``/``assistant``; assistant content holds ``thinking``
(``thinking``, ``signature``), ``redacted_thinking`` (``data``), ``text`` and ``tool_use`` (``id``,
``name``, ``input``) blocks; tool results go back in a ``user`` turn as ``tool_result`` blocks
(``tool_use_id``, ``content``, ``is_error``) placed before any text; ``tools`` carry ``input_schema``.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from anthropic_sse_helpers import KEY, body, message_end, message_start, run_call, text_block, thinking_block
from hookstream import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.errors import MissingAPIKeyError
from hookstream.events import to_json
from hookstream.plugin import ModelRequest, ToolSpec
from hookstream_anthropic import DEFAULT_MAX_TOKENS, AnthropicProvider

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)

# The documented request shape, as a JSON Schema (blocks closed: no field the API does not define).
_TEXT = {
    "type": "object",
    "properties": {"type": {"const": "text"}, "text": {"type": "string", "minLength": 1}},
    "required": ["type", "text"],
    "additionalProperties": False,
}
_BLOCKS: dict[str, Any] = {
    "thinking": {"thinking": {"type": "string"}, "signature": {"type": "string", "minLength": 1}},
    "redacted_thinking": {"data": {"type": "string", "minLength": 1}},
    "tool_use": {"id": {"type": "string"}, "name": {"type": "string"}, "input": {"type": "object"}},
    "tool_result": {"tool_use_id": {"type": "string"}, "content": {"type": "string"}, "is_error": {"type": "boolean"}},
}


def _block(kind: str, required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, **_BLOCKS[kind]},
        "required": ["type", *required],
        "additionalProperties": False,
    }


MESSAGES_SCHEMA = {
    "type": "object",
    "required": ["model", "max_tokens", "messages", "stream"],
    "properties": {
        "model": {"type": "string"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "stream": {"const": True},
        "temperature": {"type": "number", "minimum": 0, "maximum": 1},
        "system": {"oneOf": [{"type": "string"}, {"type": "array", "items": _TEXT}]},
        "messages": {
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {
                            "role": {"const": "user"},
                            "content": {
                                "type": "array",
                                "items": {"oneOf": [_TEXT, _block("tool_result", ["tool_use_id"])]},
                            },
                        },
                        "required": ["role", "content"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "role": {"const": "assistant"},
                            "content": {
                                "type": "array",
                                "items": {
                                    "oneOf": [
                                        _TEXT,
                                        _block("thinking", ["thinking", "signature"]),
                                        _block("redacted_thinking", ["data"]),
                                        _block("tool_use", ["id", "name", "input"]),
                                    ]
                                },
                            },
                        },
                        "required": ["role", "content"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "input_schema": {"type": "object", "properties": {"type": {"const": "object"}}},
                },
                "required": ["name", "input_schema"],
                "additionalProperties": False,
            },
        },
        "tool_choice": {
            "oneOf": [
                {"properties": {"type": {"enum": ["auto", "any", "none"]}}, "required": ["type"],
                 "additionalProperties": False},
                {"properties": {"type": {"const": "tool"}, "name": {"type": "string"}},
                 "required": ["type", "name"], "additionalProperties": False},
            ]
        },
    },
}


def _conversation() -> list[Message]:
    return [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Rome?"),
        Message(
            "assistant",
            [
                ReasoningPart("I should call the tool twice.", {"anthropic": {"signature": "sig-abc"}}),
                ReasoningPart("", {"anthropic": {"redacted_data": "opaque-redacted"}}),
                ReasoningPart("Gemini's thought", {"gemini": {"thoughtSignature": "g-sig"}}),
                ReasoningPart("untagged thought"),
                TextPart("Checking both."),
                ToolCallPart("toolu_1", "get_weather", {"city": "Paris"}),
                ToolCallPart("toolu_2", "get_weather", {"city": "Rome"}),
            ],
        ),
        Message(
            "tool",
            [
                ToolResultPart("toolu_1", "get_weather", {"temp_c": 21}),
                ToolResultPart("toolu_2", "get_weather", "service down", is_error=True),
            ],
        ),
        Message.user("Also: be brief."),
        Message.assistant("Paris 21 °C; Rome unknown."),
        Message.user("Thanks!"),
    ]


EXPECTED_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should call the tool twice.", "signature": "sig-abc"},
            {"type": "redacted_thinking", "data": "opaque-redacted"},
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp_c": 21}', "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "service down", "is_error": True},
            {"type": "text", "text": "Also: be brief."},
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Paris 21 °C; Rome unknown."}]},
    {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
]

_OK = body([message_start(), *text_block(0, "ok"), *message_end("end_turn")])


def test_anthropic_conversation_request_sent_over_http() -> None:
    request = ModelRequest(
        model="claude-sonnet-4-5",
        messages=_conversation(),
        tools=[WEATHER],
        tool_choice="auto",
        temperature=0.2,
        options={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    events, step, captured, _ = run_call(_OK, request)
    assert step.text == "ok" and step.error is None
    (req,) = captured
    assert (req.method, req.path) == ("POST", "/v1/messages")
    headers = {k.lower(): v for k, v in req.headers.items()}
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    sent = req.json()
    jsonschema.validate(sent, MESSAGES_SCHEMA)
    assert sent == {
        "model": "claude-sonnet-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "You are terse.",
        "messages": EXPECTED_MESSAGES,
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER.parameters,
            }
        ],
        "tool_choice": {"type": "auto"},
        "temperature": 0.2,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stream": True,
    }
    assert all(KEY not in to_json(e) for e in events)


def test_anthropic_signature_round_trip_from_stream() -> None:
    """A streamed thinking block's signature reaches the next request's thinking block, unchanged."""
    streamed = body(
        [
            message_start(),
            *thinking_block(0, "sig-from-stream", "Let me ", "think."),
            *text_block(1, "Answer."),
            *message_end("end_turn"),
        ]
    )
    _, step, _, _ = run_call(streamed)
    convo = [Message.user("q"), step.message, Message.user("next")]
    _, _, captured, _ = run_call(_OK, ModelRequest(model="m", messages=convo))
    assert captured[0].json()["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig-from-stream"},
            {"type": "text", "text": "Answer."},
        ],
    }


def test_anthropic_other_providers_reasoning_is_not_sent() -> None:
    provider = AnthropicProvider("m", api_key="k")
    convo = [
        Message.user("q"),
        Message("assistant", [ReasoningPart("t", {"openai": {"encrypted": "x"}}), TextPart("a")]),
        Message("assistant", [ReasoningPart("only thinking", {"gemini": {"thoughtSignature": "s"}})]),
        Message.user("again"),
    ]
    sent = provider.build_request(ModelRequest(model="m", messages=convo)).json
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"name": "get_weather"}, {"type": "tool", "name": "get_weather"}),
    ],
)
def test_anthropic_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    provider = AnthropicProvider("m", api_key="k")
    sent = provider.build_request(
        ModelRequest(model="m", messages=[Message.user("q")], tools=[WEATHER], tool_choice=choice)
    ).json
    assert sent["tool_choice"] == expected
    jsonschema.validate(sent, MESSAGES_SCHEMA)


def test_anthropic_bad_tool_choice_is_a_value_error() -> None:
    provider = AnthropicProvider("m", api_key="k")
    with pytest.raises(ValueError, match="tool_choice"):
        provider.build_request(ModelRequest(model="m", messages=[Message.user("q")], tool_choice="sometimes"))


def test_anthropic_max_tokens_defaults() -> None:
    provider = AnthropicProvider("m", api_key="k")

    def sent(**kw: Any) -> dict[str, Any]:
        return provider.build_request(ModelRequest(model="m", messages=[Message.user("q")], **kw)).json

    assert sent()["max_tokens"] == DEFAULT_MAX_TOKENS
    assert sent(max_tokens=100)["max_tokens"] == 100
    big = {"thinking": {"type": "enabled", "budget_tokens": 8000}}
    assert sent(options=big)["max_tokens"] == 8000 + DEFAULT_MAX_TOKENS
    assert sent(options={"stream": False, "top_k": 5})["stream"] is True  # options merge, stream stays on


def test_anthropic_several_system_messages_become_blocks() -> None:
    provider = AnthropicProvider("m", api_key="k")
    sent = provider.build_request(
        ModelRequest(model="m", messages=[Message.system("a"), Message.user("q"), Message.system("b")])
    ).json
    assert sent["system"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    jsonschema.validate(sent, MESSAGES_SCHEMA)


def test_anthropic_incomplete_tool_call_without_result_is_left_out() -> None:
    provider = AnthropicProvider("m", api_key="k")
    cut = Message("assistant", [TextPart("Writing."), ToolCallPart("toolu_x", "make_file", None, '{"a": ')])
    sent = provider.build_request(ModelRequest(model="m", messages=[Message.user("q"), cut, Message.user("go")])).json
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "Writing."}]
    answered = [Message.user("q"), cut, Message("tool", [ToolResultPart("toolu_x", "make_file", "bad", True)])]
    sent = provider.build_request(ModelRequest(model="m", messages=answered)).json
    assert sent["messages"][1]["content"][1] == {"type": "tool_use", "id": "toolu_x", "name": "make_file", "input": {}}


def test_anthropic_key_never_in_repr_and_required() -> None:
    provider = AnthropicProvider("m", api_key=KEY)
    http = provider.build_request(ModelRequest(model="m", messages=[Message.user("q")]))
    assert KEY not in repr(provider) and KEY not in repr(http) and KEY not in str(provider.api_key)
    assert http.url == "https://api.anthropic.com/v1/messages"
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("m", api_key="").check_api_key()
    keyless = AnthropicProvider("m", base_url="http://127.0.0.1:1", api_key="")
    keyless.check_api_key()  # a custom endpoint may need no key
    assert "x-api-key" not in keyless.build_request(ModelRequest(model="m", messages=[Message.user("q")])).headers


def test_anthropic_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    provider = AnthropicProvider("m", base_url="http://127.0.0.1:1/")
    http = provider.build_request(ModelRequest(model="m", messages=[Message.user("q")]))
    assert http.headers["x-api-key"] == "sk-ant-from-env"
    assert http.url == "http://127.0.0.1:1/v1/messages"
