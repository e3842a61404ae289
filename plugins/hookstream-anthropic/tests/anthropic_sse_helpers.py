"""Test helpers: write Anthropic Messages stream events as SSE bytes and run one call over loopback.

The events are built here from the shapes in the API reference ("Streaming Messages"); no recorded
corpus bytes are copied. Imported by the test_anthropic_* modules (pytest puts this folder on
sys.path).
"""

from __future__ import annotations

import json
from typing import Any

import requests
from hookstream import Message, StepResult
from hookstream.events import BaseEvent
from hookstream.plugin import CallContext, ModelCall, ModelRequest, StepAccumulator
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.server import CapturedRequest
from hookstream_anthropic import AnthropicProvider

KEY = "sk-ant-test-SECRET-0123456789"


def frame(event: dict[str, Any], *, pad: int = 0, newline: str = "\n") -> bytes:
    """One SSE event ``event: TYPE`` / ``data: JSON``; ``pad`` spaces go inside the object before its
    closing brace, as the API's anti side-channel padding does."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    if pad:
        data = data[:-1] + " " * pad + "}"
    return f"event: {event['type']}{newline}data: {data}{newline}{newline}".encode()


def body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(frame(e) for e in events)


def message_start(input_tokens: int = 10, output_tokens: int = 1, **usage: Any) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": d}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def text_block(index: int, *chunks: str) -> list[dict[str, Any]]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(delta(index, {"type": "text_delta", "text": c}) for c in chunks),
        block_stop(index),
    ]


def thinking_block(index: int, signature: str, *chunks: str) -> list[dict[str, Any]]:
    return [
        block_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
        *(delta(index, {"type": "thinking_delta", "thinking": c}) for c in chunks),
        delta(index, {"type": "signature_delta", "signature": signature}),
        block_stop(index),
    ]


def tool_block(index: int, tool_id: str, name: str, *fragments: str, close: bool = True) -> list[dict[str, Any]]:
    out = [
        block_start(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}}),
        *(delta(index, {"type": "input_json_delta", "partial_json": f}) for f in fragments),
    ]
    if close:
        out.append(block_stop(index))
    return out


def message_end(stop_reason: str | None, output_tokens: int = 5, **usage: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens, **usage},
        },
        {"type": "message_stop"},
    ]


def run_call(
    responses: bytes | Response | list[Response],
    request: ModelRequest | None = None,
    *,
    api_key: str = KEY,
    fragment: tuple[int, int] | None = None,
    seed: int = 0,
) -> tuple[list[BaseEvent], StepResult, list[CapturedRequest], ModelCall]:
    """Serve ``responses`` on loopback and run one ``anthropic`` model call against them."""
    if isinstance(responses, bytes):
        responses = [Response(responses, fragment=fragment)]
    elif isinstance(responses, Response):
        responses = [responses]
    request = request or ModelRequest(model="claude-test", messages=[Message.user("hi")])
    with LoopbackServer(responses, seed=seed) as srv, requests.Session() as session:
        provider = AnthropicProvider(request.model, base_url=srv.url, api_key=api_key)
        call = ModelCall(provider, request, CallContext("thread-1", "run-1"), session)
        acc = StepAccumulator()
        events: list[BaseEvent] = []
        for event in call:
            events.append(acc.add(event))  # as the engine yields it
        return events, acc.finish(), list(srv.requests), call
