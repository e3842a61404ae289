"""A real loopback HTTP server that plays provider response bodies, for tests and ``hookstream replay``.

Each request gets the next scripted :class:`Response` (the last one repeats). A body is sent with
chunked transfer encoding, either whole or split into pieces (``fragment=(lo, hi)`` random sizes in
bytes, seeded), flushing each piece as a real network would. Every request is captured
(:attr:`LoopbackServer.requests`: method, path, headers, parsed JSON body). A ``check`` callable can
refuse a request: it returns an error text and the server answers 400 with it.

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
import socketserver
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

__all__ = ["CapturedRequest", "LoopbackServer", "Response"]


@attrs.define(slots=True)
class Response:
    """One scripted answer: ``status``, raw ``body`` bytes, extra ``headers``; ``fragment`` = (lo, hi)
    splits the body into random pieces of lo..hi bytes; ``delay`` seconds between pieces."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = attrs.Factory(dict)
    content_type: str = "text/event-stream"
    fragment: tuple[int, int] | None = None
    delay: float = 0.0
    pieces: Sequence[bytes] | None = None
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

            def log_message(self, *args: Any) -> None:
                pass

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
                if resp.writer is not None:
                    self.send_header("Connection", "close")
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
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_GET = _serve

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="hookstream-loopback", daemon=True
        )
        self._thread.start()
        return self

    def _pieces(self, resp: Response) -> Sequence[bytes]:
        if resp.pieces is not None:
            return resp.pieces
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
