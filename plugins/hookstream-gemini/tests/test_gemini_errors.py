"""Failures end in RUN_ERROR with a typed code and the provider's message, what arrived is kept, and
the API key never shows: HTTP errors, in-stream error objects, malformed chunks, cut-off streams."""

from __future__ import annotations

import json

import pytest
import requests
from hookstream import Message, StepResult
from hookstream.errors import HTTPStatusError
from hookstream.events import BaseEvent, RunError, RunFinished, to_json
from hookstream.plugin import CallContext, ModelCall, ModelRequest, StepAccumulator
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream_gemini import GeminiProvider

KEY = "AIza-secret-key-for-tests"


def _call(response: Response) -> tuple[list[BaseEvent], StepResult, ModelCall]:
    with LoopbackServer([response]) as srv, requests.Session() as session:
        provider = GeminiProvider("gemini-2.5-flash", base_url=srv.url, api_key=KEY)
        call = ModelCall(provider, ModelRequest(model="gemini-2.5-flash", messages=[Message.user("hi")]),
                         CallContext("t", "r"), session)
        acc = StepAccumulator()
        events = []
        for ev in call:
            events.append(ev)
            acc.add(ev)
    check_events(events, form="call")
    return events, acc.finish(), call


def _error(status: int, code: int, gstatus: str, message: str, wrap: bool) -> bytes:
    err = {"error": {"code": code, "message": message, "status": gstatus}}
    if gstatus == "INVALID_ARGUMENT":
        err["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]
    return json.dumps([err] if wrap else err).encode()


@pytest.mark.parametrize(
    ("status", "gstatus", "code", "wrap"),
    [
        (400, "INVALID_ARGUMENT", "bad_request", True),
        (403, "PERMISSION_DENIED", "authentication_error", False),
        (429, "RESOURCE_EXHAUSTED", "rate_limit", True),
        (500, "INTERNAL", "server_error", False),
    ],
)
def test_gemini_http_errors(status: int, gstatus: str, code: str, wrap: bool) -> None:
    message = f"Gemini says {gstatus.lower()}"
    body = _error(status, status, gstatus, message, wrap)
    events, step, call = _call(Response(body, status=status, content_type="application/json",
                                        headers={"Retry-After": "7"} if status == 429 else {}))
    last = events[-1]
    assert isinstance(last, RunError)
    assert last.code == code
    assert message in last.message and f"HTTP {status}" in last.message
    exc = call.exception
    assert isinstance(exc, HTTPStatusError)
    assert exc.status == status and exc.error_type == gstatus
    if status == 400:
        assert "API_KEY_INVALID" in last.message
    if status == 429:
        assert exc.retry_after == 7
    for text in (last.message, repr(exc), str(exc), *(to_json(e) for e in events)):
        assert KEY not in text
    assert KEY not in (exc.url or "")
    assert step.error == (code, last.message)


def test_gemini_error_body_echoing_the_key_is_masked() -> None:
    body = _error(400, 400, "INVALID_ARGUMENT", f"API key {KEY} not valid", False)
    events, _, _ = _call(Response(body, status=400, content_type="application/json"))
    assert KEY not in events[-1].message  # type: ignore[attr-defined]
    assert "***" in events[-1].message  # type: ignore[attr-defined]


def test_gemini_non_json_error_body() -> None:
    events, _, _ = _call(Response(b"<html>Bad Gateway</html>", status=502, content_type="text/html"))
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "server_error" and "Bad Gateway" in last.message


def _sse(*docs: object) -> bytes:
    return b"".join(b"data: " + json.dumps(d).encode() + b"\r\n\r\n" for d in docs)


TEXT_CHUNK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello"}]}, "index": 0}],
              "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 1}}


def test_gemini_in_stream_error_keeps_text() -> None:
    body = _sse(TEXT_CHUNK, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
    events, step, _ = _call(Response(body, fragment=(1, 13)))
    last = events[-1]
    assert isinstance(last, RunError)
    assert last.code == "UNAVAILABLE" and last.message == "The model is overloaded."
    assert last.usage is not None and last.usage.input_tokens == 4
    assert step.text == "Hello"


def test_gemini_malformed_chunk_keeps_text() -> None:
    body = _sse(TEXT_CHUNK) + b'data: {"candidates": [\r\n\r\n'
    events, step, _ = _call(Response(body))
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "malformed_chunk"
    assert step.text == "Hello"


def test_gemini_stream_without_finish_reason_is_connection_closed() -> None:
    events, step, _ = _call(Response(_sse(TEXT_CHUNK)))
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "connection_closed"
    assert step.text == "Hello"


def test_gemini_empty_body_is_connection_closed() -> None:
    events, _, _ = _call(Response(b""))
    assert isinstance(events[-1], RunError) and events[-1].code == "connection_closed"


def test_gemini_streamed_call_cut_off_is_never_complete() -> None:
    start = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "search", "willContinue": True}}]}, "index": 0}]}
    piece = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "ber", "willContinue": True}],
                          "willContinue": True}}]}, "index": 0}]}
    final = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP", "index": 0}]}
    events, step, _ = _call(Response(_sse(start, piece, final)))
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "incomplete_tool_call"
    (call,) = step.tool_calls
    assert call.name == "search" and step.complete_tool_calls == []


def test_gemini_nested_partial_args_and_parallel_whole_calls() -> None:
    def part(fc: dict[str, object]) -> dict[str, object]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": fc}]}, "index": 0}],
                "responseId": "resp-9"}

    body = _sse(
        part({"name": "book", "willContinue": True}),
        part({"partialArgs": [{"jsonPath": "$.trip.city", "stringValue": "Ky", "willContinue": True}],
              "willContinue": True}),
        part({"partialArgs": [{"jsonPath": "$.trip.city", "stringValue": "oto"},
                              {"jsonPath": "$.trip.nights", "numberValue": 3},
                              {"jsonPath": "$.guests[0]", "stringValue": "Ana"},
                              {"jsonPath": "$.guests[1]", "stringValue": "Bo"},
                              {"jsonPath": "$['late checkout']", "boolValue": True},
                              {"jsonPath": "$.note", "nullValue": "NULL_VALUE"}],
              "willContinue": True}),
        part({}),
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {"x": 1}}},
            {"functionCall": {"name": "b", "args": {}}}]}, "finishReason": "STOP", "index": 0}],
         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 2,
                           "cachedContentTokenCount": 4, "totalTokenCount": 17}},
    )
    events, step, _ = _call(Response(body, fragment=(1, 29), ))
    assert [(c.name, c.arguments) for c in step.tool_calls] == [
        ("book", {"trip": {"city": "Kyoto", "nights": 3}, "guests": ["Ana", "Bo"], "late checkout": True,
                  "note": None}),
        ("a", {"x": 1}),
        ("b", {}),
    ]
    assert [c.id for c in step.tool_calls] == ["gemini-resp-9-0", "gemini-resp-9-1", "gemini-resp-9-2"]
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.finish_reason == "tool_calls"
    assert finished.usage is not None
    assert (finished.usage.input_tokens, finished.usage.output_tokens, finished.usage.reasoning_tokens,
            finished.usage.cached_input_tokens, finished.usage.total_tokens) == (10, 5, 2, 4, 17)


def test_gemini_signature_only_part_after_a_call_is_kept() -> None:
    body = _sse(
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "sig-a"}]}, "index": 0}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": "sig-tail"}]},
                         "finishReason": "STOP", "index": 0}]},
    )
    _, step, _ = _call(Response(body))
    metas = [p.provider_metadata for p in step.message.parts]
    assert metas == [{"gemini": {"thoughtSignature": "sig-a"}}, {"gemini": {"thoughtSignature": "sig-tail"}}]


def test_gemini_unknown_parts_become_custom_events() -> None:
    body = _sse({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}}]}, "finishReason": "STOP", "index": 0}]})
    events, _, _ = _call(Response(body))
    custom = [e for e in events if e.type == "CUSTOM"]
    assert custom and custom[0].name == "gemini.part"  # type: ignore[attr-defined]
    assert isinstance(events[-1], RunFinished) and events[-1].finish_reason == "stop"


def test_gemini_signature_on_a_later_streamed_part_is_kept() -> None:
    def chunk(part: dict[str, object], finish: str | None = None) -> dict[str, object]:
        cand: dict[str, object] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand]}

    body = _sse(
        chunk({"functionCall": {"name": "find", "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "x"}], "willContinue": True},
               "thoughtSignature": "sig-late"}),
        chunk({"functionCall": {}}, finish="STOP"),
    )
    _, step, _ = _call(Response(body))
    (call,) = step.tool_calls
    assert call.arguments == {"q": "x"}
    assert call.provider_metadata == {"gemini": {"thoughtSignature": "sig-late"}}
