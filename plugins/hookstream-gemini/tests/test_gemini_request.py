"""Request building: a whole conversation to the documented Gemini REST shape, sent to a loopback
server and checked as captured (URL, headers, body); tool choice, options, base URLs, API key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests
from hookstream import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.events import BaseEvent
from hookstream.plugin import CallContext, ModelCall, ModelRequest, StepAccumulator, ToolSpec
from hookstream.testing import CapturedRequest, LoopbackServer, Response, check_events
from hookstream.testing.conformance import require_corpus
from hookstream_gemini import GeminiProvider
from hookstream_gemini.request import build_body, deep_merge

KEY = "AIza-test-key-0123456789"
OK_BODY = b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP"}]}\r\n\r\n'

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
     "additionalProperties": False},
)


def conversation() -> list[Message]:
    return [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Rome?"),
        Message(
            "assistant",
            [
                ReasoningPart("Two cities: two calls.",
                              provider_metadata={"gemini": {"thoughtSignature": "sig-think"}}),
                TextPart("Checking both.", provider_metadata={"gemini": {"thoughtSignature": "sig-text"}}),
                ToolCallPart(
                    "call-paris", "get_weather", {"city": "Paris"},
                    provider_metadata={"gemini": {"thoughtSignature": "sig-call-1", "functionCallId": "fc-1"}},
                ),
                ToolCallPart("call-rome", "get_weather", {"city": "Rome"},
                             provider_metadata={"gemini": {"thoughtSignature": "sig-call-2"}}),
            ],
        ),
        Message(
            "tool",
            [
                ToolResultPart("call-paris", "get_weather", {"temp_c": 21, "sky": "clear"}),
                ToolResultPart("call-rome", "get_weather", "service unavailable", is_error=True),
            ],
        ),
        Message("assistant", [TextPart("Paris is 21 C and clear; Rome is unknown.")]),
        Message.user("Thanks. And 2+2?"),
    ]


EXPECTED_BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "You are terse."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Two cities: two calls.", "thought": True, "thoughtSignature": "sig-think"},
                {"text": "Checking both.", "thoughtSignature": "sig-text"},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"},
                 "thoughtSignature": "sig-call-1"},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}},
                 "thoughtSignature": "sig-call-2"},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 21, "sky": "clear"},
                                      "id": "fc-1"}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "service unavailable"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "Paris is 21 C and clear; Rome is unknown."}]},
        {"role": "user", "parts": [{"text": "Thanks. And 2+2?"}]},
    ],
    "tools": [{"functionDeclarations": [{
        "name": "get_weather",
        "description": "Current weather for a city",
        "parametersJsonSchema": WEATHER.parameters,
    }]}],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {"maxOutputTokens": 256, "temperature": 0.2,
                         "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}},
}


def _send(request: ModelRequest, body: bytes = OK_BODY) -> tuple[list[BaseEvent], CapturedRequest, str]:
    with LoopbackServer([Response(body)]) as srv, requests.Session() as session:
        provider = GeminiProvider("gemini-2.5-flash", base_url=srv.url, api_key=KEY)
        events = list(ModelCall(provider, request, CallContext("t", "r"), session))
        return events, srv.requests[0], srv.url


def test_gemini_conversation_request_shape() -> None:
    request = ModelRequest(
        model="gemini-2.5-flash",
        messages=conversation(),
        tools=[WEATHER],
        tool_choice="auto",
        max_tokens=256,
        temperature=0.2,
        options={"generationConfig": {"thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}}},
    )
    events, captured, _ = _send(request)
    check_events(events, form="call")
    assert captured.method == "POST"
    assert captured.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    headers = {k.lower(): v for k, v in captured.headers.items()}
    assert headers["x-goog-api-key"] == KEY
    assert headers["content-type"] == "application/json"
    assert KEY not in captured.path
    assert captured.json() == EXPECTED_BODY


def test_gemini_foreign_metadata_is_not_sent() -> None:
    messages = [
        Message.user("hi"),
        Message("assistant", [
            ReasoningPart("anthropic thinking", provider_metadata={"anthropic": {"signature": "x"}}),
            ReasoningPart("unsigned gemini thinking"),
            ToolCallPart("toolu_1", "get_weather", {"city": "Oslo"}, provider_metadata={"anthropic": {"a": 1}}),
        ]),
        Message("tool", [ToolResultPart("toolu_1", "get_weather", 7)]),
    ]
    body = build_body(ModelRequest(model="m", messages=messages))
    assert body["contents"][1] == {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
    ]}
    # Non-object outputs are wrapped; no id for a call Gemini did not name.
    assert body["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"result": 7}}},
    ]}


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ({"name": "get_weather"}, {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
def test_gemini_tool_choice(choice: Any, config: dict[str, Any]) -> None:
    body = build_body(ModelRequest(model="m", messages=[Message.user("x")], tools=[WEATHER], tool_choice=choice))
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_gemini_bad_tool_choice_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        build_body(ModelRequest(model="m", messages=[Message.user("x")], tool_choice="sometimes"))


def test_gemini_options_deep_merge() -> None:
    merged = deep_merge({"generationConfig": {"temperature": 1, "stopSequences": ["a"]}},
                       {"generationConfig": {"stopSequences": ["b"], "thinkingConfig": {"thinkingLevel": "low"}},
                        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]})
    assert merged == {
        "generationConfig": {"temperature": 1, "stopSequences": ["b"], "thinkingConfig": {"thinkingLevel": "low"}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }


@pytest.mark.parametrize(
    ("base", "model", "url"),
    [
        ("http://h", "gemini-2.5-flash", "http://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        ("http://h/", "models/gemini-2.5-pro", "http://h/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
        ("http://h/v1", "gemini-2.0", "http://h/v1/models/gemini-2.0:streamGenerateContent?alt=sse"),
        (None, "gemini-3-pro-preview",
         "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"),
    ],
)
def test_gemini_url(base: str | None, model: str, url: str) -> None:
    provider = GeminiProvider(model, base_url=base, api_key=KEY)
    req = provider.build_request(ModelRequest(model=model, messages=[Message.user("x")]))
    assert req.url == url
    assert KEY not in repr(req) and KEY not in repr(provider)


def test_gemini_api_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert GeminiProvider("m").api_key.reveal() == "google-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert GeminiProvider("m").api_key.reveal() == "gemini-key"


def test_gemini_signatures_round_trip_from_a_recorded_stream() -> None:
    """A recorded answer's message, put back into the conversation, carries its signatures home."""
    corpus = require_corpus(Path(__file__).resolve())
    body = (corpus / "gemini__text-then-function-call-with-id.sse").read_bytes()
    with LoopbackServer([Response(body)]) as srv, requests.Session() as session:
        provider = GeminiProvider("gemini-3.1-pro-preview", base_url=srv.url, api_key=KEY)
        acc = StepAccumulator()
        for ev in ModelCall(provider, ModelRequest(model="gemini-3.1-pro-preview", messages=[Message.user("w?")]),
                            CallContext("t", "r"), session):
            acc.add(ev)
    step = acc.finish()
    (call,) = step.tool_calls
    messages = [Message.user("w?"), step.message,
                Message("tool", [ToolResultPart(call.id, call.name, {"temp_f": 60})])]
    contents = build_body(ModelRequest(model="m", messages=messages))["contents"]
    model_parts = contents[1]["parts"]
    assert model_parts[0] == {"text": "Let me check."}
    fc = model_parts[1]
    assert fc["functionCall"] == {"name": "get_weather", "args": {"city": "San Francisco"}, "id": "g1bmv6il"}
    assert fc["thoughtSignature"] == call.provider_metadata["gemini"]["thoughtSignature"]  # type: ignore[index]
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "g1bmv6il"
