"""ModelCall's shared failure handling, over real loopback HTTP for every provider: an API key echoed by
the server is masked everywhere, a 200 that is not an event stream is a typed error and its socket is
released, in-stream overload/rate-limit errors before any content are retried, Retry-After shows in
the message, and a missing API key for the provider's own endpoint fails before any request."""

from __future__ import annotations

import json
import logging
import socket
import threading
import traceback
from typing import Any

import pytest
import requests
from hookstream import LoopSettings, Message, chat, get_model, get_registry
from hookstream.errors import MissingAPIKeyError, NotEventStreamError, RateLimitError
from hookstream.events import BaseEvent, RunError, RunStarted, TextMessageContent, to_json
from hookstream.plugin import CallContext, CallOptions, ModelCall, ModelRequest
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.provider_bodies import BASE_PATH, PROVIDERS, error_body, final_stream

from conftest import LineProvider, sse

KEY = "sk-ECHOED-hookstream-0123456789abcdef"


def _need(provider: str) -> None:
    if provider not in get_registry().names("providers"):
        pytest.skip(f"provider {provider!r} is not installed")


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# One in-stream error event per provider, in its documented shape, whose text echoes the key.
def _in_stream_error(provider: str, message: str, kind: str) -> bytes:
    if provider == "openai":
        return _sse({"error": {"message": message, "type": kind, "code": None}})
    if provider == "openai-responses":
        return (_sse({"type": "error", "code": kind, "message": message, "sequence_number": 1}, "error")
                + _sse({"type": "response.failed", "response": {"status": "failed",
                                                                 "error": {"code": kind, "message": message}}},
                       "response.failed"))
    if provider == "anthropic":
        start = _sse({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 0}}}, "message_start")
        return start + _sse({"type": "error", "error": {"type": kind, "message": message}}, "error")
    return _sse({"error": {"code": 400, "message": message, "status": kind}})


def _scan(text: str, where: str) -> None:
    assert KEY not in text, f"API key leaked in {where}: {text[:300]!r}"


# -- 1. an echoed API key is masked in every message, repr and log line ------------------------------


@pytest.mark.parametrize("where", ["http_error", "in_stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_echoed_api_key_is_masked_everywhere(provider: str, where: str, caplog: pytest.LogCaptureFixture) -> None:
    _need(provider)
    caplog.set_level(logging.DEBUG)
    echo = f"Incorrect API key provided: {KEY}. Find your key in the dashboard."
    if where == "http_error":
        response = Response(error_body(provider, 401, echo), status=401, content_type="application/json")
    else:
        response = Response(_in_stream_error(provider, echo, "invalid_request_error"))
    with LoopbackServer([response]) as srv:
        stream = chat(get_model(f"{provider}:m", base_url=srv.url + BASE_PATH[provider], api_key=KEY), "hi",
                      loop=LoopSettings(max_retries=0))
        events = list(stream)
    result = stream.result()
    last = events[-1]
    assert isinstance(last, RunError)
    assert "***" in last.message, last.message  # the provider's text is kept, only the key masked
    for ev in events:
        _scan(to_json(ev), "event")
    _scan(repr(result), "result repr")
    assert result.error is not None
    _scan(str(result.error), "exception text")
    _scan(repr(vars(result.error)), "exception attributes")
    _scan("".join(traceback.format_exception(result.error)), "traceback")
    for record in caplog.records:
        _scan(record.getMessage(), f"log record {record.name}")


# -- 3. a 200 that is not an event stream ----------------------------------------------------------


def _call(url: str, options: CallOptions | None = None) -> tuple[list[BaseEvent], ModelCall]:
    provider = LineProvider("m", base_url=url, api_key=KEY)
    call = ModelCall(provider, ModelRequest("m", [Message.user("hi")]), CallContext("t", "r"), requests.Session(),
                     options)
    return list(call), call


LOGIN_PAGE = (b"<!DOCTYPE html>\n<html><head><title>Sign in - Corporate Proxy</title></head>"
              b"<body><form>token " + KEY.encode() + b"</form></body></html>")


@pytest.mark.parametrize(
    ("body", "content_type", "shown"),
    [
        (LOGIN_PAGE, "text/html; charset=utf-8", "<!DOCTYPE html> <html><head><title>Sign in"),
        (b'{"id":"chatcmpl-1","object":"chat.completion","choices":[]}', "application/json",
         '{"id":"chatcmpl-1","object":"chat.completion"'),
        (b"", "text/plain", "empty body"),
    ],
    ids=["html", "json", "empty"],
)
def test_non_event_stream_200_is_a_typed_error(body: bytes, content_type: str, shown: str) -> None:
    with LoopbackServer([Response(body, content_type=content_type)]) as srv:
        events, call = _call(srv.url)
    check_events(events, form="call")
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "not_event_stream"
    assert isinstance(call.exception, NotEventStreamError)
    assert call.exception.content_type == content_type
    assert content_type in last.message and shown in last.message
    _scan(last.message, "RUN_ERROR")
    _scan(repr(vars(call.exception)), "exception attributes")


def test_event_stream_without_the_content_type_is_still_read() -> None:
    # Some OpenAI-compatible servers label SSE text/plain (or send no type): the first bytes decide.
    body = sse({"text": "ok"}, {"finish": "stop"})
    with LoopbackServer([Response(b": keepalive\n\n" + body, content_type="text/plain")]) as srv:
        events, _ = _call(srv.url)
    assert events[-1].type == "RUN_FINISHED"


class _HoldOpen:
    """A response writer that sends ``body`` as chunks, without ending the body unless ``end``, then
    waits for the client to close the connection and sets :attr:`closed`."""

    def __init__(self, body: bytes, end: bool) -> None:
        self.body = body
        self.end = end
        self.closed = threading.Event()

    def __call__(self, wfile: Any, sock: socket.socket) -> None:
        wfile.write(b"%x\r\n" % len(self.body) + self.body + b"\r\n")
        if self.end:
            wfile.write(b"0\r\n\r\n")
        wfile.flush()
        sock.settimeout(30)
        try:
            while sock.recv(4096):
                pass
        except OSError:
            pass
        self.closed.set()


@pytest.mark.parametrize(
    ("body", "content_type", "end", "code"),
    [
        (LOGIN_PAGE, "text/html", False, "not_event_stream"),
        (b'{"choices": []}', "application/json", True, "not_event_stream"),
        (sse({"text": "cut"}), "text/event-stream", True, "connection_closed"),
    ],
    ids=["html-open-body", "json", "sse-without-final-event"],
)
def test_connection_is_released_while_the_result_is_held(body: bytes, content_type: str, end: bool,
                                                         code: str) -> None:
    writer = _HoldOpen(body, end)
    with LoopbackServer([Response(content_type=content_type, writer=writer)]) as srv:
        # read_timeout bounds the run should the body be read as a stream that never ends.
        events, call = _call(srv.url, CallOptions(read_timeout=30.0))
        assert events[-1].type == "RUN_ERROR" and events[-1].code == code  # type: ignore[attr-defined]
        assert call.exception is not None and call.exception.__traceback__ is not None  # still held
        assert writer.closed.wait(30), "the server still sees the connection open"


def test_not_event_stream_reaches_chat_as_run_error() -> None:
    _need("openai")
    with LoopbackServer([Response(LOGIN_PAGE, content_type="text/html")]) as srv:
        stream = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key=KEY), "hi",
                      loop=LoopSettings(max_retries=2))
        events = list(stream)
        assert len(srv.requests) == 1  # not retried: the same proxy would answer the same page
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "not_event_stream"  # type: ignore[attr-defined]
    assert isinstance(stream.result().error, NotEventStreamError)
    _scan(repr(stream.result()), "result repr")


# -- 5. in-stream overload / rate limit: retried before content, never after -------------------------

ANTHROPIC_OK = final_stream("anthropic", text="Hello after the retry.").body
OVERLOADED = _in_stream_error("anthropic", "Overloaded", "overloaded_error")


def _model_call(provider: str, url: str, retries: int) -> tuple[list[BaseEvent], ModelCall]:
    prov = get_model(f"{provider}:m", base_url=url + BASE_PATH[provider], api_key=KEY)
    call = ModelCall(prov, ModelRequest("m", [Message.user("hi")]), CallContext("t", "r"), requests.Session(),
                     CallOptions(max_retries=retries))
    return list(call), call


def test_anthropic_overloaded_event_before_content_is_retried() -> None:
    _need("anthropic")
    with LoopbackServer([Response(OVERLOADED), Response(ANTHROPIC_OK)]) as srv:
        events, call = _model_call("anthropic", srv.url, retries=2)
        assert len(srv.requests) == 2
    check_events(events, form="call")
    assert [type(e) for e in events].count(RunStarted) == 1
    assert events[-1].type == "RUN_FINISHED" and call.attempts == 2
    assert "".join(e.delta for e in events if isinstance(e, TextMessageContent)) == "Hello after the retry."


def test_in_stream_overload_after_content_is_not_retried() -> None:
    _need("anthropic")
    script = final_stream("anthropic", text="Partial answer")
    first_text = next(i for i, t in enumerate(script.text_after) if t)  # events[:i] hold some text
    body = b"".join(script.events[:first_text]) + _sse(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
    with LoopbackServer([Response(body), Response(ANTHROPIC_OK)]) as srv:
        events, _ = _model_call("anthropic", srv.url, retries=2)
        assert len(srv.requests) == 1
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "overloaded_error"  # type: ignore[attr-defined]
    assert any(isinstance(e, TextMessageContent) for e in events)


def test_openai_compatible_in_stream_rate_limit_is_retried_through_chat() -> None:
    _need("openai")
    limited = _sse({"error": {"message": "Rate limit reached for requests", "type": "requests",
                              "code": "rate_limit_exceeded"}})
    with LoopbackServer([Response(limited), Response(final_stream("openai").body)]) as srv:
        stream = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key=KEY), "hi")
        events = list(stream)
        assert len(srv.requests) == 2
    assert events[-1].type == "RUN_FINISHED"
    assert stream.result().text == final_stream("openai").text


def test_in_stream_overload_is_not_retried_when_retries_are_off() -> None:
    _need("anthropic")
    with LoopbackServer([Response(OVERLOADED), Response(ANTHROPIC_OK)]) as srv:
        events, _ = _model_call("anthropic", srv.url, retries=0)
        assert len(srv.requests) == 1
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "overloaded_error"  # type: ignore[attr-defined]


def test_retry_after_is_in_the_message_and_the_run_error() -> None:
    body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}).encode()
    with LoopbackServer([Response(body, status=429, headers={"Retry-After": "30"},
                                  content_type="application/json")]) as srv:
        events, call = _call(srv.url)
    assert isinstance(call.exception, RateLimitError) and call.exception.retry_after == 30
    assert "(retry after 30 s)" in str(call.exception)
    assert events[-1].type == "RUN_ERROR" and "(retry after 30 s)" in events[-1].message  # type: ignore[attr-defined]


# -- 6. missing API key: a typed error before any request -------------------------------------------

ENV = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
       "gemini": "GEMINI_API_KEY"}


class _NoNetwork(requests.Session):
    """A session that fails the test if any request is sent."""

    sent = 0

    def request(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        _NoNetwork.sent += 1
        raise AssertionError("a request was sent without an API key")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_api_key_for_the_default_endpoint_fails_before_any_request(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need(provider)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    _NoNetwork.sent = 0
    stream = chat(get_model(f"{provider}:m", session=_NoNetwork()), "hi")
    events = list(stream)
    assert _NoNetwork.sent == 0
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "missing_api_key"
    assert ENV[provider] in last.message
    assert isinstance(stream.result().error, MissingAPIKeyError)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_custom_base_url_needs_no_api_key(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _need(provider)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with LoopbackServer([Response(final_stream(provider).body)]) as srv:
        stream = chat(get_model(f"{provider}:m", base_url=srv.url + BASE_PATH[provider]), "hi",
                      loop=LoopSettings(max_retries=0))
        events = list(stream)
        headers = {k.lower() for k in srv.requests[0].headers}
    assert events[-1].type == "RUN_FINISHED", stream.result().error
    assert not headers & {"authorization", "x-api-key", "x-goog-api-key"}
