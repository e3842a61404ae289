"""Transport over a real loopback server: SSE line endings, no final blank line, immediate delivery,
typed HTTP errors that never carry the API key, dropped connections and oversized events."""

from __future__ import annotations

import json
import threading

import pytest
import requests
from hookstream import Message
from hookstream.errors import ConnectionClosedError, LineTooLongError, RateLimitError
from hookstream.events import TextMessageContent
from hookstream.plugin import CallContext, CallOptions, ModelCall, ModelRequest, StepAccumulator
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.server import split_body

from conftest import LineProvider, sse

KEY = "sk-test-SECRET-0123456789"


def run_call(url: str, options: CallOptions | None = None) -> tuple[list, StepAccumulator, ModelCall]:
    provider = LineProvider("m", base_url=url, api_key=KEY)
    call = ModelCall(provider, ModelRequest("m", [Message.user("hi")]), CallContext("t", "r"), requests.Session(),
                     options)
    acc = StepAccumulator()
    events = []
    for e in call:
        events.append(e)
        acc.add(e)
    return events, acc, call


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("fragment", [None, (1, 3)], ids=["whole", "split"])
def test_line_endings(sep: str, fragment: tuple[int, int] | None) -> None:
    body = sse({"text": "Hel"}, {"text": "lo ✓"}, {"finish": "stop"}, sep=sep)
    with LoopbackServer([Response(body, fragment=fragment)]) as srv:
        events, acc, _ = run_call(srv.url)
    check_events(events, form="call")
    assert acc.finish().text == "Hello ✓"


def test_last_event_without_final_blank_line() -> None:
    body = sse({"text": "a"}) + b'data: {"finish": "stop"}'
    with LoopbackServer([Response(body)]) as srv:
        events, acc, _ = run_call(srv.url)
    assert acc.finish().raw_finish_reason == "stop"
    check_events(events)


def test_delta_reaches_caller_before_the_rest_is_sent() -> None:
    gate, sent_rest = threading.Event(), threading.Event()

    class Pieces(list):  # the server blocks on the gate before its second piece
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield sse({"text": "first"})
            gate.wait(30)  # only so a broken test cannot hang
            sent_rest.set()
            yield sse({"text": " second"}, {"finish": "stop"})

    with LoopbackServer([Response(pieces=Pieces())]) as srv:
        provider = LineProvider("m", base_url=srv.url, api_key=KEY)
        call = ModelCall(provider, ModelRequest("m", [Message.user("hi")]), CallContext("t", "r"), requests.Session())
        it = iter(call)
        first = next(e for e in it if isinstance(e, TextMessageContent))
        held = not sent_rest.is_set()
        gate.set()
        rest = list(it)
    assert first.delta == "first"
    assert held, "the first delta must arrive while the server still holds the rest"
    assert rest[-1].type == "RUN_FINISHED"


def test_http_429_is_typed_and_keeps_retry_after_but_never_the_key() -> None:
    body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}).encode()
    with LoopbackServer([Response(body, status=429, headers={"Retry-After": "7"},
                                  content_type="application/json")]) as srv:
        events, _, call = run_call(srv.url)
    assert isinstance(call.exception, RateLimitError)
    assert call.exception.status == 429 and call.exception.retry_after == 7.0
    assert "Rate limit reached" in call.exception.message
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "rate_limit"
    for text in (repr(call.exception), str(call.exception), json.dumps([e.message for e in events[-1:]])):
        assert KEY not in text
    check_events(events)


def test_dropped_connection_keeps_what_arrived() -> None:
    body = sse({"text": "partial "}, {"tool": ["c1", "f", "{}"]})  # no finish: the server just stops
    with LoopbackServer([Response(body)]) as srv:
        events, acc, call = run_call(srv.url)
    step = acc.finish()
    assert step.text == "partial " and step.tool_calls[0].arguments == {}
    assert isinstance(call.exception, ConnectionClosedError)
    assert events[-1].code == "connection_closed"
    check_events(events)


def test_oversized_event_is_bounded() -> None:
    body = b"data: " + b"x" * 200_000 + b"\n\n"
    with LoopbackServer([Response(body, fragment=(4000, 9000))]) as srv:
        events, _, call = run_call(srv.url, CallOptions(max_event_bytes=50_000))
    assert isinstance(call.exception, LineTooLongError)
    assert events[-1].code == "line_too_long"


def test_malformed_chunk_becomes_run_error_after_good_text() -> None:
    body = sse({"text": "ok"}) + b"data: {not json\n\n" + sse({"finish": "stop"})
    with LoopbackServer([Response(body)]) as srv:
        events, acc, _ = run_call(srv.url)
    assert acc.finish().text == "ok"
    assert events[-1].code == "malformed_chunk"
    check_events(events)


# -- SSE event-size limit: any split of the same bytes gives the same result -------------------------

SPLITS = [{}, {"split": "lines"}, {"split": "bytes"}, {"split": "events"}, {"split": "events", "per_read": 3}]
SPLIT_IDS = ["whole", "line-per-read", "byte-per-read", "event-per-read", "3-events-per-read"]


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("framing", SPLITS, ids=SPLIT_IDS)
def test_stream_longer_than_the_limit_in_small_events_succeeds(sep: str, framing: dict) -> None:
    # A server flushing line by line sends the blank line that ends each event in a read of its own:
    # the size limit is per event, never for the stream.
    docs = [{"text": f"{i:03d} "} for i in range(60)]
    body = sse(*docs, {"finish": "stop"}, sep=sep)
    limit = 64
    assert len(body) > 20 * limit and all(len(sse(d, sep=sep)) <= limit for d in docs)
    with LoopbackServer([Response(body, **framing)]) as srv:
        events, acc, call = run_call(srv.url, CallOptions(max_event_bytes=limit))
    assert call.exception is None, call.exception
    check_events(events, form="call")
    assert acc.finish().text == "".join(d["text"] for d in docs)


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("framing", SPLITS, ids=SPLIT_IDS)
def test_oversized_event_fails_only_itself(sep: str, framing: dict) -> None:
    # The good events may share a read with the oversized line: they are delivered, then the call ends.
    big = sse({"text": "x" * 400}, sep=sep)
    body = sse({"text": "good "}, {"text": "events"}, sep=sep) + big + sse({"text": "never"}, {"finish": "stop"},
                                                                           sep=sep)
    with LoopbackServer([Response(body, **framing)]) as srv:
        events, acc, call = run_call(srv.url, CallOptions(max_event_bytes=200))
    assert isinstance(call.exception, LineTooLongError)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "line_too_long"
    assert acc.finish().text == "good events"
    check_events(events, form="call")


def test_event_exactly_at_the_limit_passes_and_one_byte_more_fails() -> None:
    # The limit counts an event's lines and the blank line that ends it.
    event = sse({"text": "abcdefghij"})
    finish = sse({"finish": "stop"})
    limit = len(event)
    assert len(finish) < limit
    with LoopbackServer([Response(event + finish, split="bytes")]) as srv:
        _, acc, call = run_call(srv.url, CallOptions(max_event_bytes=limit))
    assert call.exception is None and acc.finish().text == "abcdefghij"
    with LoopbackServer([Response(sse({"text": "abcdefghijk"}) + finish, split="bytes")]) as srv:
        events, acc, call = run_call(srv.url, CallOptions(max_event_bytes=limit))
    assert isinstance(call.exception, LineTooLongError) and acc.finish().text == ""
    assert events[-1].code == "line_too_long"


@pytest.mark.parametrize("ending", ["fin", "rst"])
@pytest.mark.parametrize("framing", SPLITS, ids=SPLIT_IDS)
def test_fin_or_rst_without_the_last_chunk_keeps_what_arrived(framing: dict, ending: str) -> None:
    body = sse({"text": "kept "}, {"text": "text"})
    with LoopbackServer([Response(body, ending=ending, **framing)]) as srv:
        events, acc, call = run_call(srv.url)
    assert isinstance(call.exception, ConnectionClosedError)
    assert events[-1].code == "connection_closed"
    assert acc.finish().text == "kept text"
    check_events(events)


def test_split_body_units_join_back() -> None:
    body = b"data: a\n\ndata: b\r\n\r\nid: 1\rdata: c\r\r: keepalive\ndata: d"
    assert split_body(body, "lines") == [b"data: a\n", b"\n", b"data: b\r\n", b"\r\n", b"id: 1\r", b"data: c\r",
                                         b"\r", b": keepalive\n", b"data: d"]
    assert split_body(body, "events") == [b"data: a\n\n", b"data: b\r\n\r\n", b"id: 1\rdata: c\r\r",
                                          b": keepalive\ndata: d"]
    assert split_body(body, "events", 3) == [b"data: a\n\ndata: b\r\n\r\nid: 1\rdata: c\r\r",
                                             b": keepalive\ndata: d"]
    assert split_body(body, "bytes") == [bytes([c]) for c in body]
    for split in ("lines", "events", "bytes"):
        for n in (1, 2, 5):
            assert b"".join(split_body(body, split, n)) == body
    with pytest.raises(ValueError):
        split_body(body, "words")
    with pytest.raises(ValueError):
        Response(body, per_read=0)
    with pytest.raises(ValueError):
        Response(body, ending="close")
