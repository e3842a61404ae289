"""``Stream.finish``: after the provider's last event the body's rest is read (bounded) so the connection
goes back to the session's pool; a late ``abort`` cannot reach a connection the pool may have lent out.
Real recorded OpenAI body (the shared corpus) over the loopback server, which counts connections."""

from __future__ import annotations

from pathlib import Path

import requests
from hookstream._stream.transport import HTTPRequest, open_stream
from hookstream.testing import LoopbackServer, Response, require_corpus

TEXT = (require_corpus(Path(__file__)) / "openai-chat__text.sse").read_bytes()


def _request(srv: LoopbackServer) -> HTTPRequest:
    return HTTPRequest(srv.url + "/v1/chat/completions", {"stream": True})


def _until_done(stream: object) -> None:
    for sse in stream.events():  # type: ignore[attr-defined]
        if sse.data.strip() == "[DONE]":
            return  # as the OpenAI adapter: the rest of the body (the chunked end) unread
    raise AssertionError("no [DONE]")


def test_finish_returns_the_connection_and_a_late_abort_leaves_it_alone() -> None:
    with LoopbackServer([Response(TEXT, split="events")]) as srv, requests.Session() as session:
        stream = open_stream(session, _request(srv))
        _until_done(stream)
        assert stream.finish() is True
        stream.abort()  # e.g. a watchdog that fires late: the pooled connection must survive it
        again = open_stream(session, _request(srv))
        _until_done(again)
        assert again.finish() is True
        assert (len(srv.requests), srv.connections) == (2, 1)


def test_finish_with_no_budget_closes_the_connection() -> None:
    with LoopbackServer([Response(TEXT)]) as srv, requests.Session() as session:
        stream = open_stream(session, _request(srv))
        _until_done(stream)
        assert stream.finish(max_bytes=0) is False
        _until_done(open_stream(session, _request(srv)))
        assert srv.connections == 2


def test_finish_after_abort_closes_without_reading() -> None:
    # A cancel mid-stream: finish() does not read on, the connection is closed.
    with LoopbackServer([Response(TEXT, split="events", delay=0.01)]) as srv, requests.Session() as session:
        stream = open_stream(session, _request(srv))
        next(iter(stream.events()))
        stream.abort()
        assert stream.finish() is False
        _until_done(open_stream(session, _request(srv)))
        assert srv.connections == 2
