"""A real loopback HTTP server that plays provider response bodies, for tests and ``hookstream replay``.

Each request gets the next scripted :class:`Response` (the last one repeats). A body is sent with
chunked transfer encoding, either whole or split into pieces, flushing each piece as a real network
would: ``fragment=(lo, hi)`` random sizes in bytes (seeded), ``split`` one byte, one line or one SSE
event per piece (:func:`split_body`, ``per_read`` units joined per piece), or explicit ``pieces``.
The client reads at most one HTTP chunk per read (``http.client`` ``read1``), so each piece reaches
it as one read or fewer when TCP delivers it in parts, never merged with the next one. ``ending``
says how the body ends: the terminating chunk, a TCP FIN without it, or a TCP RST. Every request is captured
(:attr:`LoopbackServer.requests`: method, path, headers, parsed JSON body), and so is every accepted
TCP connection (:attr:`LoopbackServer.connections`: a client that keeps its connection alive sends its
next request on the same one). A ``check`` callable can refuse a request: it returns an error text and
the server answers 400 with it.

Usage::

    with LoopbackServer([Response(body)]) as srv:
        chat(get_model("openai:gpt-4o", base_url=srv.url + "/v1", api_key="test"), "hi")

Thread safety: the server runs on its own threads; ``requests`` is appended under a lock and may be
read once the client call returned.
"""

from __future__ import annotations

import http.server
import json
import random
import re
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

__all__ = ["ENDINGS", "SPLITS", "CapturedRequest", "LoopbackServer", "Response", "split_body"]

SPLITS: tuple[str, ...] = ("bytes", "lines", "events")
"""Units :func:`split_body` cuts a body into: one byte, one line, one SSE event."""

ENDINGS: tuple[str, ...] = ("complete", "fin", "rst")
"""How a :class:`Response` body ends: ``complete`` (the terminating zero-length chunk, RFC 9112
section 7.1), ``fin`` (TCP FIN without the terminating chunk: the client sees a dropped connection),
``rst`` (TCP RST: an abortive close, ``SO_LINGER`` 0)."""

# After each blank line that ends an SSE event: LF LF, CR LF CR LF, CR CR.
_EVENT_END = re.compile(b"\r\n\r\n|\n\n|\r\r")


def split_body(body: bytes, split: str, per_read: int = 1) -> list[bytes]:
    """``body`` cut into pieces of ``per_read`` units each (the last piece may hold fewer).

    ``split`` is one of :data:`SPLITS`: ``"bytes"`` single bytes; ``"lines"`` lines with their line
    ending (LF, CR LF or CR, as ``bytes.splitlines(keepends=True)``), so the blank line that ends an
    SSE event is a piece of its own; ``"events"`` SSE events, each with the blank line that ends it
    (a last event without one is a piece too). Joining the pieces gives ``body`` back. Raises
    :class:`ValueError` for an unknown ``split`` or ``per_read`` < 1.
    """
    if per_read < 1:
        raise ValueError(f"per_read must be at least 1, not {per_read}")
    if split == "bytes":
        units = [body[i : i + 1] for i in range(len(body))]
    elif split == "lines":
        units = body.splitlines(keepends=True)
    elif split == "events":
        units, k = [], 0
        for m in _EVENT_END.finditer(body):
            units.append(body[k : m.end()])
            k = m.end()
        if k < len(body):
            units.append(body[k:])
    else:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    if per_read == 1:
        return units
    return [b"".join(units[i : i + per_read]) for i in range(0, len(units), per_read)]


@attrs.define(slots=True)
class Response:
    """One scripted answer: ``status``, raw ``body`` bytes, extra ``headers``.

    How the body is cut into HTTP chunks (the first that is set wins): ``pieces`` as given;
    ``split`` (one of :data:`SPLITS`, ``per_read`` units per chunk, see :func:`split_body`);
    ``fragment`` = (lo, hi) random pieces of lo..hi bytes (seeded by the server); else the body whole.
    ``delay`` seconds between pieces. ``ending`` is one of :data:`ENDINGS` (``writer`` ignores it).
    Raises :class:`ValueError` for an unknown ``split`` or ``ending``, or ``per_read`` < 1.
    """

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = attrs.Factory(dict)
    content_type: str = "text/event-stream"
    fragment: tuple[int, int] | None = None
    delay: float = 0.0
    pieces: Sequence[bytes] | None = None
    split: str | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.in_(SPLITS)))
    per_read: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    ending: str = attrs.field(default="complete", validator=attrs.validators.in_(ENDINGS))
    writer: Callable[[Any, Any], None] | None = None
    """Writes the whole body itself, called with (the handler's ``wfile``, its socket) after the
    headers: chunk framing, pauses and dropping the connection are its job (see
    :mod:`hookstream.testing.faults`). The connection is closed after it returns."""


@attrs.define(slots=True)
class CapturedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-body is normal here


def _end_body(wfile: Any, sock: socket.socket, ending: str) -> None:
    if ending == "complete":
        wfile.write(b"0\r\n\r\n")
        wfile.flush()
    elif ending == "fin":
        wfile.flush()
        sock.shutdown(socket.SHUT_WR)
    elif ending == "rst":
        _reset(wfile, sock)
    else:
        raise ValueError(f"unknown ending {ending!r}; known: {', '.join(ENDINGS)}")


def _reset(wfile: Any, sock: socket.socket, drain_timeout: float = 5.0) -> None:
    """Flush ``wfile`` and close ``sock`` with a TCP RST (``SO_LINGER`` on, timeout 0).

    An abortive close drops whatever is still in the send queue, so first wait (up to
    ``drain_timeout`` seconds) until the peer acknowledged every byte written: the RST then comes after
    all of the body, as when a proxy resets a connection it has finished relaying. Linux only
    (``SIOCOUTQ``); elsewhere the reset is sent at once.
    """
    wfile.flush()
    deadline = time.monotonic() + drain_timeout
    while _unacked(sock) > 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _unacked(sock: socket.socket) -> int:
    try:
        import fcntl
        import termios

        buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")  # SIOCOUTQ on Linux
        return int(struct.unpack("i", buf)[0])
    except (ImportError, OSError, AttributeError):
        return 0


class LoopbackServer:
    """Serves scripted responses on 127.0.0.1; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        responses: Sequence[Response] | Response | bytes,
        *,
        seed: int = 0,
        check: Callable[[int, CapturedRequest], str | None] | None = None,
    ) -> None:
        if isinstance(responses, bytes):
            responses = [Response(responses)]
        elif isinstance(responses, Response):
            responses = [responses]
        self.responses = list(responses)
        self.check = check
        self.requests: list[CapturedRequest] = []
        self.connections = 0
        """TCP connections accepted so far (read it once the client call returned)."""
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._count = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> LoopbackServer:
        """Start serving (a started server is returned as it is, so ``with started_server:`` works)."""
        if self._server is not None:
            return self
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As providers' servers: without it, each answer on a kept-alive connection waits up to 40 ms
            # for the client's delayed ACK of the headers before its first chunk goes out (Nagle).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with outer._lock:  # one handler per accepted connection, however many requests it serves
                    outer.connections += 1

            def _serve(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                req = CapturedRequest(self.command, self.path, dict(self.headers), body)
                with outer._lock:
                    index = outer._count
                    outer._count += 1
                    outer.requests.append(req)
                    resp = outer.responses[min(index, len(outer.responses) - 1)]
                    pieces = outer._pieces(resp)
                problem = outer.check(index, req) if outer.check else None
                if problem is not None:
                    data = json.dumps({"error": {"message": problem, "type": "invalid_request_error"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                if resp.writer is not None or resp.ending != "complete":
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if resp.writer is not None:
                    self.close_connection = True
                    try:
                        self.wfile.flush()
                        resp.writer(self.wfile, self.connection)
                    except OSError:  # the client went away: normal for fault scripts
                        pass
                    return
                try:
                    for piece in pieces:
                        if piece:
                            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                            self.wfile.flush()
                        if resp.delay:
                            time.sleep(resp.delay)
                    _end_body(self.wfile, self.connection, resp.ending)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_GET = _serve

        self._server = _Server(("127.0.0.1", 0), Handler)
        # stop() waits up to one poll interval; replay-heavy tests start hundreds of servers.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), name="hookstream-loopback", daemon=True
        )
        self._thread.start()
        return self

    def _pieces(self, resp: Response) -> Sequence[bytes]:
        if resp.pieces is not None:
            return resp.pieces
        if resp.split is not None:
            return split_body(resp.body, resp.split, resp.per_read)
        if resp.fragment is None:
            return [resp.body]
        lo, hi = resp.fragment
        out, k = [], 0
        while k < len(resp.body):
            m = self._rng.randint(lo, hi)
            out.append(resp.body[k : k + m])
            k += m
        return out

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
