"""The transport's parser of chunked bodies (``_dechunked``) against urllib3's ``read_chunked`` on the
same bytes, cut into reads at every size: the same body, the same errors after the same bytes, and the
response left closed with its connection released, as urllib3 leaves it. And the private attribute of
urllib3 it reads (docs/architecture.md, "Decisions that differ"): a urllib3 release that moves it fails
here, not silently in the benchmarks."""

from __future__ import annotations

import gzip
import http.client
import io
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import urllib3
from hookstream._stream.transport import _dechunked, _unencoded_chunked_source, open_stream
from hookstream.plugin import HTTPRequest
from hookstream.testing import LoopbackServer, Response
from urllib3.exceptions import ProtocolError

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


class _Pieces(io.RawIOBase):
    """A socket that delivers ``pieces`` one per read."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if not self._pieces:
            return 0
        piece = self._pieces.pop(0)
        n = min(len(b), len(piece))
        b[:n] = piece[:n]
        if n < len(piece):
            self._pieces.insert(0, piece[n:])
        return n


class _Sock:
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_Pieces(self._pieces))


def response(wire: bytes, size: int) -> urllib3.HTTPResponse:
    """urllib3's response over ``HEAD + wire``, the body's bytes arriving ``size`` at a time."""
    pieces = [HEAD] + [wire[i:i + size] for i in range(0, len(wire), size)]
    original = http.client.HTTPResponse(_Sock(pieces), method="POST")  # type: ignore[arg-type]
    original.begin()
    return urllib3.HTTPResponse(body=original, headers=dict(original.getheaders()), status=original.status,
                                preload_content=False, original_response=original)


def ours(resp: urllib3.HTTPResponse) -> Iterator[bytes]:
    original = _unencoded_chunked_source(resp)
    assert original is not None
    return _dechunked(resp, original)


def collect(reads: Iterator[bytes]) -> tuple[bytes, type[BaseException] | None]:
    out = []
    try:
        for data in reads:
            assert data, "no empty read is passed on"
            out.append(data)
    except ProtocolError as exc:
        return b"".join(out), type(exc)
    return b"".join(out), None


def chunked(*parts: bytes, ext: bytes = b"", trailer: bytes = b"") -> bytes:
    return b"".join(b"%x%s\r\n%s\r\n" % (len(p), ext, p) for p in parts) + b"0\r\n" + trailer + b"\r\n"


EVENTS = [b'data: {"text": "Hel"}\n\n', b'event: x\ndata: {"text": "lo \xe2\x9c\x93"}\n\n', b"data: [DONE]\n\n"]
WIRES = {
    "events": chunked(*EVENTS),
    "extension and trailer": chunked(*EVENTS, ext=b";name=value", trailer=b"X-Trailer: 1\r\n"),
    "upper-case hex, one large chunk": chunked(b"x" * 300, b"y" * 7).replace(b"12c\r\n", b"12C\r\n"),
}
SIZES = [1, 2, 3, 5, 7, 64, 65536]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(WIRES))
def test_same_body_as_urllib3_at_every_read_size(name: str, size: int) -> None:
    wire = WIRES[name]
    mine, theirs = response(wire, size), response(wire, size)
    assert collect(ours(mine)) == collect(theirs.read_chunked()) != (b"", None)
    for resp in (mine, theirs):  # the body read to its end: closed, the connection released
        assert resp.isclosed() and resp.connection is None


def test_chunks_that_arrive_together_are_passed_on_in_one_piece() -> None:
    assert list(ours(response(chunked(*EVENTS), 65536))) == [b"".join(EVENTS)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("bad", [b"zz", b"", b"-5", b"1" * 70000], ids=["not hex", "empty", "negative", "too long"])
def test_bad_size_line_raises_after_the_chunks_before_it(bad: bytes, size: int) -> None:
    wire = chunked(*EVENTS[:2]).removesuffix(b"0\r\n\r\n") + bad + b"\r\nnot a chunk\r\n"
    body, error = collect(ours(response(wire, size)))
    assert (body, error) == (b"".join(EVENTS[:2]), ProtocolError)
    if bad in (b"zz", b""):  # urllib3 fails the other two with a ValueError of http.client's reads
        assert collect(response(wire, size).read_chunked()) == (body, error)


@pytest.mark.parametrize("size", SIZES)
def test_body_cut_inside_a_chunk_raises_after_what_arrived(size: int) -> None:
    wire = chunked(*EVENTS)[:-20]
    body, error = collect(ours(response(wire, size)))
    assert error is ProtocolError
    theirs, their_error = collect(response(wire, size).read_chunked())
    # urllib3 passes on whole chunks only; the bytes of the cut one are kept here too (the framing
    # drops an unfinished event either way).
    assert their_error is ProtocolError and body.startswith(theirs) and wire.startswith(b"%x\r\n" % len(EVENTS[0]))
    assert b"".join(EVENTS).startswith(body) and len(body) > len(theirs)


def test_bytes_past_the_body_close_the_connection() -> None:
    resp = response(chunked(*EVENTS) + b"HTTP/1.1 200 OK\r\n", 65536)
    closed = []
    resp.close = lambda: closed.append(True)  # type: ignore[method-assign]
    assert collect(ours(resp)) == (b"".join(EVENTS), None)
    assert closed == [True]


def test_a_requests_response_takes_the_fast_path() -> None:
    """urllib3's private ``HTTPResponse._fp`` (the http.client response, whose ``fp`` is the socket's
    buffered reader) is what ``_dechunked`` reads. Without it the transport falls back to urllib3's
    ``read_chunked``: the same bytes, but text streams about 0.3x of the floor slower (docs/performance.md)."""
    with LoopbackServer([Response(b"".join(EVENTS), split="events")]) as srv, requests.Session() as session:
        stream = open_stream(session, HTTPRequest(srv.url + "/v1/chat/completions", {}))
        original = _unencoded_chunked_source(stream.response.raw)
        assert isinstance(original, http.client.HTTPResponse), (
            "urllib3 no longer keeps the http.client response in HTTPResponse._fp: update "
            "_unencoded_chunked_source and docs/architecture.md ('Decisions that differ')")
        assert b"".join(stream.reads()) == b"".join(EVENTS)
        assert stream.response.raw.isclosed() and stream.response.raw.connection is None


def test_a_compressed_body_goes_through_urllib3() -> None:
    body = gzip.compress(b"".join(EVENTS))
    served = Response(pieces=[body[:10], body[10:]], headers={"Content-Encoding": "gzip"})
    with LoopbackServer([served]) as srv, requests.Session() as session:
        stream = open_stream(session, HTTPRequest(srv.url + "/v1/chat/completions", {}))
        assert _unencoded_chunked_source(stream.response.raw) is None
        assert b"".join(stream.reads()) == b"".join(EVENTS)
