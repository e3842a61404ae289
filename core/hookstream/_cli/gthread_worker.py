"""gunicorn's ``gthread`` worker with a deadline on reading each request (slowloris).

A ``gthread`` worker parses a request's headers on one of its threads with blocking reads, so a client
that trickles its headers or body a byte at a time holds a thread for as long as it likes; a few dozen
such sockets stop a worker (gunicorn's docs advise a buffering proxy in front). This worker counts from
the moment a request arrives (its connection is handed to the thread pool, queued or not): its headers
must be read within :data:`HEADER_DEADLINE` seconds, and then its body at :data:`MIN_BODY_RATE` bytes
per second or faster (Apache's ``mod_reqtimeout`` rule: the deadline moves with the bytes received, so
a large upload on a slow link is fine and a byte-a-second trickle is not); past either, the socket is
shut down and the thread freed. :func:`read_body_first` (the application
wrapper ``serve --workers`` installs) reads the body inside the deadline and then lifts it, so a long
event stream is never cut. Counting from arrival, not from when a thread takes the request, means slow
sockets queued behind each other are all cut at once instead of one thread-load at a time; a request
whose headers are all in when a thread takes it gets a fresh deadline then (queued behind slow senders,
it is taken the moment they are cut, which is when its own deadline passes too).

What is left: while slow senders hold every thread, a good request waits up to the deadline (measured in
``benchmarks/bench_serve_attack.py``); waitress (``--workers 1``) buffers requests itself and never
gives a thread to an incomplete one.

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

from gunicorn.workers.gthread import _DEFER, ThreadWorker

__all__ = ["HEADER_DEADLINE", "MIN_BODY_RATE", "REQUEST_DEADLINE", "HookstreamWorker", "read_body_first"]

HEADER_DEADLINE = 3.0
"""Seconds a client has, from its request's arrival, to send the request line and headers."""
REQUEST_DEADLINE = 10.0
"""Seconds a whole request waiting in the queue for a thread is given again each time it is checked."""
MIN_BODY_RATE = 32 * 1024
"""Bytes per second a request body must arrive at, at least (after :data:`HEADER_DEADLINE`)."""
_BODY_PIECE = 64 * 1024

_local = threading.local()


class _Deadlines:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, tuple[float, Any]] = {}  # key -> (deadline, gunicorn connection)
        self._next = 0
        threading.Thread(target=self._reap, name="hookstream-request-deadlines", daemon=True).start()

    def add(self, conn: Any, seconds: float) -> int:
        with self._lock:
            self._next += 1
            self._open[self._next] = (time.monotonic() + seconds, conn)
            return self._next

    def lift(self, key: int) -> None:
        with self._lock:
            self._open.pop(key, None)

    def move(self, key: int, at: float) -> None:
        """Set ``key``'s deadline to ``at`` (``time.monotonic()`` seconds), if it is still open."""
        with self._lock:
            if key in self._open:
                self._open[key] = (at, self._open[key][1])

    def _reap(self) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self._lock:
                expired = [(k, c) for k, (at, c) in self._open.items() if at <= now]
            for key, conn in expired:
                if not getattr(conn, "_hs_taken", False) and _headers_waiting(conn.sock):
                    # A whole request queued behind busy threads is not the slow sender: it waits its turn.
                    self.move(key, now + REQUEST_DEADLINE)
                    continue
                with self._lock:
                    # A thread that took the request since the snapshot may have moved its deadline
                    # (HookstreamWorker.handle): only a deadline still passed is acted on.
                    entry = self._open.get(key)
                    if entry is None or entry[0] > now:
                        continue
                    del self._open[key]
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns; gunicorn closes it
                except OSError:
                    pass


def _headers_waiting(sock: socket.socket) -> bool:
    """Whether a request's complete headers sit unread in ``sock``'s receive buffer (peeked, not read)."""
    try:
        data = sock.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return False
    return b"\r\n\r\n" in data


_deadlines: _Deadlines | None = None
_deadlines_lock = threading.Lock()


def _table() -> _Deadlines:
    global _deadlines
    with _deadlines_lock:
        if _deadlines is None:  # per worker process: created after the fork
            _deadlines = _Deadlines()
        return _deadlines


class HookstreamWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """``gthread`` with per-request read deadlines (see the module docstring)."""

    def enqueue_req(self, conn: Any) -> None:
        # Called on the worker's main thread when a request arrives (new or kept-alive connection) and
        # again for a deferred one; the first call of a request starts its clock.
        if getattr(conn, "_hs_key", None) is None:
            conn._hs_arrived = time.monotonic()
            conn._hs_taken = False
            conn._hs_key = _table().add(conn, HEADER_DEADLINE)
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        _local.conn = conn
        key = getattr(conn, "_hs_key", None)
        if key is not None and _headers_waiting(conn.sock):
            # A whole request taken as its deadline passes (queued behind slow senders that were just cut,
            # which freed this thread) is read now: it must not be cut while this thread parses it. Moved
            # before it is marked taken, so the reaper sees the new deadline once it sees it taken.
            _table().move(key, time.monotonic() + HEADER_DEADLINE)
        conn._hs_taken = True
        result: Any = None
        try:
            result = super().handle(conn)
            return result
        finally:
            _local.conn = None
            conn._hs_taken = False
            if result is not _DEFER:
                key, conn._hs_key = getattr(conn, "_hs_key", None), None
                if key is not None:
                    _table().lift(key)


def _body_deadline(received: int, piece: int) -> None:
    """The request may take until it has ``received + piece`` body bytes at :data:`MIN_BODY_RATE`."""
    conn = getattr(_local, "conn", None)
    key = getattr(conn, "_hs_key", None)
    if conn is not None and key is not None:
        _table().move(key, conn._hs_arrived + HEADER_DEADLINE + (received + piece) / MIN_BODY_RATE)


def lift_deadline() -> None:
    """The request on this thread has been read: no deadline from now on (the response may stream)."""
    conn = getattr(_local, "conn", None)
    key = getattr(conn, "_hs_key", None)
    if conn is not None and key is not None:
        _table().lift(key)
        conn._hs_key = None


def read_body_first(app: Callable[..., Iterable[bytes]], max_body: int) -> Callable[..., Iterable[bytes]]:
    """``app`` behind a wrapper that reads the request body (at most ``max_body`` bytes, more is left
    for ``app`` to refuse by its ``Content-Length``) while the deadline holds, then lifts it."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if 0 < length <= max_body:
            pieces: list[bytes] = []
            got = 0
            try:
                while got < length:
                    n = min(_BODY_PIECE, length - got)
                    _body_deadline(got, n)
                    piece = environ["wsgi.input"].read(n)
                    if not piece:
                        break
                    pieces.append(piece)
                    got += len(piece)
            except OSError:
                pass
            environ["wsgi.input"] = io.BytesIO(b"".join(pieces))
            if got < length:  # cut off by the deadline: the application answers 400
                environ["CONTENT_LENGTH"] = str(got)
        lift_deadline()
        return app(environ, start_response)

    return wrapped
