"""Request bodies of both providers, captured by a real loopback server, and HTTP errors as RUN_ERROR.

Expected shapes follow the OpenAI API reference: Chat Completions "Create chat completion" (messages,
tools, tool_choice, stream_options) and Responses "Create a model response" (input items, tools).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from hookstream import LoopSettings, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, get_model
from hookstream.errors import HTTPStatusError
from hookstream.events import BaseEvent, RunError
from hookstream.plugin import CallContext, ModelCall, ModelRequest, ToolSpec
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream_openai import OpenAIChatProvider, OpenAIResponsesProvider

KEY = "sk-test-SECRET-0123456789"

# Minimal well-formed answers written for these tests (not recordings).
CHAT_OK = (
    b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n'
)
RESPONSES_OK = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"ok"}\n\n'
    b'event: response.completed\ndata: {"type":"response.completed","response":{"status":"completed",'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
)

TOOLS = [ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]})]


def conversation(reasoning_meta: dict[str, Any] | None = None) -> list[Message]:
    return [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Rome?"),
        Message("assistant", [
            ReasoningPart("Need two lookups.", provider_metadata=reasoning_meta),
            TextPart("Checking."),
            ToolCallPart("call_1", "get_weather", {"city": "Paris"},
                         provider_metadata={"openai-responses": {"item_id": "fc_1"}}),
            ToolCallPart("call_2", "get_weather", {"city": "Rome"}),
        ]),
        Message("tool", [ToolResultPart("call_1", "get_weather", {"temp": 21}),
                         ToolResultPart("call_2", "get_weather", "sunny")]),
        Message.assistant("Paris 21, Rome sunny."),
        Message.user("Thanks"),
    ]


def run(provider_cls: type, body: bytes, request: ModelRequest, *, status: int = 200,
        headers: dict[str, str] | None = None) -> tuple[list[BaseEvent], ModelCall, Any]:
    resp = Response(body, status=status, headers=headers or {},
                    content_type="text/event-stream" if status == 200 else "application/json")
    with LoopbackServer([resp]) as srv, requests.Session() as session:
        provider = provider_cls("gpt-test", base_url=srv.url + "/v1", api_key=KEY)
        call = ModelCall(provider, request, CallContext("t", "r"), session)
        events = list(call)
        return events, call, srv.requests[0]


def test_chat_request_body_and_headers() -> None:
    req = ModelRequest("gpt-test", conversation(), tools=TOOLS, tool_choice={"name": "get_weather"},
                       max_tokens=50, temperature=0.2, options={"seed": 7, "temperature": 0.3})
    events, _, captured = run(OpenAIChatProvider, CHAT_OK, req)
    check_events(events, form="call")
    assert captured.path == "/v1/chat/completions"
    assert captured.headers["Authorization"] == f"Bearer {KEY}"
    assert captured.json() == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
            {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
            {"role": "assistant", "content": "Paris 21, Rome sunny."},
            {"role": "user", "content": "Thanks"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather for a city",
            "parameters": TOOLS[0].parameters}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 50,
        "temperature": 0.3,  # options are merged last
        "seed": 7,
    }


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_chat_tool_choice_strings(choice: str) -> None:
    provider = OpenAIChatProvider("m", api_key="k")
    body = provider.build_request(ModelRequest("m", [Message.user("x")], tools=TOOLS, tool_choice=choice)).json
    assert body["tool_choice"] == choice


def test_bad_tool_choice_is_invalid_request() -> None:
    req = ModelRequest("m", [Message.user("x")], tool_choice="sometimes")
    for cls in (OpenAIChatProvider, OpenAIResponsesProvider):
        with pytest.raises(ValueError, match="tool_choice"):
            cls("m", api_key="k").build_request(req)


def test_assistant_with_only_tool_calls_has_empty_string_content() -> None:
    msg = Message("assistant", [ToolCallPart("c", "f", None, arguments_raw='{"a":')])
    body = OpenAIChatProvider("m", api_key="k").build_request(ModelRequest("m", [Message.user("x"), msg])).json
    assert body["messages"][1] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}]}


def test_responses_request_body() -> None:
    meta = {"openai-responses": {"item_id": "rs_1", "encrypted_content": "gAAA-enc"}}
    req = ModelRequest("gpt-test", conversation(meta), tools=TOOLS, tool_choice={"name": "get_weather"},
                       max_tokens=64, temperature=0.5, options={"store": False})
    events, _, captured = run(OpenAIResponsesProvider, RESPONSES_OK, req)
    check_events(events, form="call")
    assert captured.path == "/v1/responses"
    assert captured.headers["Authorization"] == f"Bearer {KEY}"
    assert captured.json() == {
        "model": "gpt-test",
        "instructions": "You are terse.",
        "input": [
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Weather in Paris and Rome?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need two lookups."}],
             "encrypted_content": "gAAA-enc"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}',
             "id": "fc_1"},
            {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
            {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Paris 21, Rome sunny."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
        ],
        "stream": True,
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                   "parameters": TOOLS[0].parameters}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 64,
        "temperature": 0.5,
        "store": False,
    }


def test_responses_drops_other_providers_reasoning() -> None:
    convo = conversation({"anthropic": {"signature": "sig"}})
    body = OpenAIResponsesProvider("m", api_key="k").build_request(ModelRequest("m", convo)).json
    assert all(item["type"] != "reasoning" for item in body["input"])
    assert "sig" not in json.dumps(body)


def test_no_key_no_authorization_header() -> None:
    req = OpenAIChatProvider("m", base_url="http://localhost:1/v1", api_key="").build_request(
        ModelRequest("m", [Message.user("x")]))
    assert "Authorization" not in req.headers
    assert KEY not in repr(OpenAIChatProvider("m", api_key=KEY).build_request(ModelRequest("m", [Message.user("x")])))


@pytest.mark.parametrize(
    ("status", "headers", "code", "etype"),
    [
        (401, {}, "authentication_error", "invalid_request_error"),
        (404, {}, "not_found", "invalid_request_error"),
        (429, {"Retry-After": "7"}, "rate_limit", "rate_limit_exceeded"),
        (500, {}, "server_error", "server_error"),
    ],
)
@pytest.mark.parametrize("provider_cls", [OpenAIChatProvider, OpenAIResponsesProvider])
def test_http_errors_become_run_error(provider_cls: type, status: int, headers: dict[str, str], code: str,
                                      etype: str) -> None:
    message = f"Incorrect API key provided: sk-tes*****6789 (status {status})"
    body = json.dumps({"error": {"message": message, "type": etype, "param": None, "code": None}}).encode()
    events, call, _ = run(provider_cls, body, ModelRequest("gpt-test", [Message.user("hi")]), status=status,
                          headers=headers)
    check_events(events, form="call")
    last = events[-1]
    assert isinstance(last, RunError) and last.code == code
    assert message in last.message and str(status) in last.message
    exc = call.exception
    assert isinstance(exc, HTTPStatusError) and exc.status == status and exc.error_type == etype
    if status == 429:
        assert exc.retry_after == 7.0
    for text in (last.message, str(exc), repr(exc), repr(call.provider)):
        assert KEY not in text


def _llama_cpp_check(index: int, req: Any) -> str | None:
    """Refuses what llama-cpp-python's OpenAI-compatible server refuses: an assistant message whose
    ``content`` is null or missing (its pydantic model wants a string)."""
    for m in (req.json() or {}).get("messages", []):
        if m.get("role") == "assistant" and not isinstance(m.get("content"), str):
            return "1 validation error: messages.assistant.content: Input should be a valid string"
    return None


def test_tool_call_history_is_accepted_by_a_strict_openai_compatible_server() -> None:
    from hookstream import chat
    from hookstream.testing.provider_bodies import final_stream, provider_stream

    def get_weather(city: str) -> dict[str, Any]:
        """Weather for a city.

        Args:
            city: the city name
        """
        return {"temperature": 18}

    first = provider_stream("openai", text="", reasoning="")  # a tool call only, no text
    with LoopbackServer([Response(first.body), Response(final_stream("openai").body)],
                        check=_llama_cpp_check) as srv:
        stream = chat(get_model("openai:local", base_url=srv.url + "/v1", api_key=""), "weather in Paris?",
                      tools=[get_weather], loop=LoopSettings(max_retries=0))
        events = list(stream)
        sent = srv.requests
    assert events[-1].type == "RUN_FINISHED", stream.result().error
    assistant = next(m for m in sent[1].json()["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"]


def test_responses_input_tokens_count() -> None:
    # POST /responses/input_tokens (API reference, "Get input token counts") answers
    # {"object": "response.input_tokens", "input_tokens": N}; the body is the Responses body less stream
    # and generation fields.
    from hookstream import count_tokens

    answer = Response(b'{"object": "response.input_tokens", "input_tokens": 9}', content_type="application/json")
    with LoopbackServer([answer]) as srv:
        count = count_tokens("openai-responses:gpt-4.1", "hi", system="Be brief.", base_url=srv.url + "/v1",
                             api_key="sk-test", options={"max_output_tokens": 50, "reasoning": {"effort": "low"}})
        sent = srv.requests[0]
    assert (count.input_tokens, count.source, count.model) == (9, "provider", "openai-responses:gpt-4.1")
    assert sent.path == "/v1/responses/input_tokens"
    body = sent.json()
    assert body["model"] == "gpt-4.1" and body["reasoning"] == {"effort": "low"}
    assert "stream" not in body and "max_output_tokens" not in body
    assert sent.headers["Authorization"] == "Bearer sk-test"


def test_chat_completions_provider_has_no_count_endpoint() -> None:
    assert OpenAIChatProvider("gpt-4o", api_key="k").token_count_request(ModelRequest("gpt-4o", [Message.user("hi")])) \
        is None
