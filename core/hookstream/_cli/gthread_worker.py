"""gunicorn's ``gthread`` worker with a deadline on reading each request (slowloris).

A ``gthread`` worker parses a request's headers on one of its threads with blocking reads, so a client
that trickles its headers or body a byte at a time holds a thread for as long as it likes; a few dozen
such sockets stop a worker (gunicorn's docs advise a buffering proxy in front). This worker gives every
request :data:`REQUEST_DEADLINE` seconds from the moment a thread takes it until its headers and body
are read: past it, the socket is shut down and the thread freed. :func:`read_body_first` (the
application wrapper ``serve --workers`` installs) reads the body inside the deadline and then lifts it,
so a long event stream is never cut.

Thread safety: one :class:`_Deadlines` per worker process, shared by its threads under a lock; a single
daemon thread shuts expired sockets down.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

__all__ = ["REQUEST_DEADLINE", "HookstreamWorker", "read_body_first"]

REQUEST_DEADLINE = 10.0
"""Seconds a client has, from the moment a worker thread takes its request, to send headers and body."""

_local = threading.local()


class _Deadlines:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, tuple[float, socket.socket]] = {}
        self._next = 0
        threading.Thread(target=self._reap, name="hookstream-request-deadlines", daemon=True).start()

    def add(self, sock: socket.socket, seconds: float) -> int:
        with self._lock:
            self._next += 1
            self._open[self._next] = (time.monotonic() + seconds, sock)
            return self._next

    def lift(self, key: int) -> None:
        with self._lock:
            self._open.pop(key, None)

    def _reap(self) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self._lock:
                expired = [k for k, (at, _) in self._open.items() if at <= now]
                socks = [self._open.pop(k)[1] for k in expired]
            for s in socks:
                try:
                    s.shutdown(socket.SHUT_RDWR)  # the blocked read returns; gunicorn closes the connection
                except OSError:
                    pass


_deadlines: _Deadlines | None = None
_deadlines_lock = threading.Lock()


def _table() -> _Deadlines:
    global _deadlines
    with _deadlines_lock:
        if _deadlines is None:  # per worker process: created after the fork
            _deadlines = _Deadlines()
        return _deadlines


class HookstreamWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """``gthread`` with a per-request read deadline (see the module docstring)."""

    def handle(self, conn: Any) -> Any:
        key = _table().add(conn.sock, REQUEST_DEADLINE)
        _local.key = key
        try:
            return super().handle(conn)
        finally:
            _local.key = None
            _table().lift(key)


def lift_deadline() -> None:
    """The request on this thread has been read: no deadline from now on (the response may stream)."""
    key = getattr(_local, "key", None)
    if key is not None:
        _table().lift(key)
        _local.key = None


def read_body_first(app: Callable[..., Iterable[bytes]], max_body: int) -> Callable[..., Iterable[bytes]]:
    """``app`` behind a wrapper that reads the request body (at most ``max_body`` bytes, more is left
    for ``app`` to refuse by its ``Content-Length``) while the deadline holds, then lifts it."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if 0 < length <= max_body:
            try:
                body = environ["wsgi.input"].read(length)
            except OSError:
                body = b""
            environ["wsgi.input"] = io.BytesIO(body)
            if len(body) < length:  # cut off by the deadline: the application answers 400/408
                environ["CONTENT_LENGTH"] = str(len(body))
        lift_deadline()
        return app(environ, start_response)

    return wrapped
