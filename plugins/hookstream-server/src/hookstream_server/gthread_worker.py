"""gunicorn's ``gthread`` worker with a deadline on reading each request (slowloris).

A ``gthread`` worker parses a request's headers on one of its threads with blocking reads, so a client
that trickles its headers or body a byte at a time holds a thread for as long as it likes; a few dozen
such sockets stop a worker (gunicorn's docs advise a buffering proxy in front). This worker counts from
the moment a request arrives (its connection is handed to the thread pool, queued or not) and holds it
to the rule of :func:`hookstream_server.limits.request_read_deadline`: headers within
``HEADER_SECONDS`` (3 s), the body at ``MIN_BODY_RATE`` (32 KiB/s) or faster, the whole request within
``REQUEST_READ_SECONDS`` (120 s) whatever its rate; past it, the socket is shut down and the thread
freed. :func:`read_deadline` (the application wrapper ``serve --workers`` installs) lets the application
read the body itself, under the deadline, and lifts the deadline when the response starts, so a long
event stream is never cut; the application authenticates from the headers first, so a request without
a valid credential is answered ``401`` and its connection closed without its body being read.

Counting from arrival, not from when a thread takes the request, means slow sockets queued behind each
other are all cut at once instead of one thread-load at a time; a request whose headers are all in
when a thread takes it gets a fresh deadline then (queued behind slow senders, it is taken the moment
they are cut, which is when its own deadline passes too).

What is left: while slow senders hold every thread, a good request waits up to ``HEADER_SECONDS``
(measured in ``benchmarks/bench_serve_attack.py``); waitress (``--workers 1``) reads requests on its
I/O thread and never gives a thread to an incomplete one (``hookstream_server.waitress_channel``).

Authenticated slow bodies: a request with a valid credential is read on its thread at up to the rate
above, for up to 120 s; the application counts it toward its principal's ``max_concurrent_runs`` from
before its body is read (``hookstream_server.limits.PrincipalLimits.hold``, shared by the workers), so
one principal holds at most that many threads of the whole server and its next request is answered
``429`` at once. A worker whose threads have all been held for :data:`HELD_SECONDS` or more stops
accepting connections (they wait in the listen backlog for a worker with a free thread) instead of
queueing them behind the held ones.

Thread safety: one :class:`_Deadlines` per worker process, shared by its threads under a lock; a single
daemon thread shuts expired sockets down.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gunicorn.workers.gthread import _DEFER, ThreadWorker

from .limits import HEADER_SECONDS, request_read_deadline

__all__ = ["HELD_SECONDS", "QUEUED_SECONDS", "HookstreamWorker", "lift_deadline", "read_deadline"]

HELD_SECONDS = 0.25
"""Seconds a thread must have held its request before a worker whose threads are all so held stops
accepting connections."""
QUEUED_SECONDS = 10.0
"""Seconds a whole request waiting in the queue for a thread is given again each time it is checked."""
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
                    self.move(key, now + QUEUED_SECONDS)
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

    _hs_pool: set[Any] | None = None  # connections handed to the thread pool and not finished (main thread)

    def enqueue_req(self, conn: Any) -> None:
        # Called on the worker's main thread when a request arrives (new or kept-alive connection) and
        # again for a deferred one; the first call of a request starts its clock.
        if getattr(conn, "_hs_key", None) is None:
            conn._hs_arrived = time.monotonic()
            conn._hs_taken = False
            conn._hs_key = _table().add(conn, HEADER_SECONDS)
        if self._hs_pool is None:
            self._hs_pool = set()
        conn._hs_began = None
        self._hs_pool.add(conn)
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        if self._hs_pool is not None:
            self._hs_pool.discard(conn)
        super().finish_request(conn, fs)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        # Every thread held for HELD_SECONDS or more (slow bodies, long runs): a new connection would wait
        # behind them, so it is left in the listen backlog for a worker with a free thread. Threads busy
        # only briefly (requests answered at once) do not stop accepting: that would take connections one
        # by one through this loop. Checked at least every HELD_SECONDS.
        if self._accepting and self._held():
            self.set_accept_enabled(False)
        super().wait_for_and_dispatch_events(min(timeout, HELD_SECONDS))

    def _held(self) -> bool:
        pool = self._hs_pool or ()
        now = time.monotonic()
        held = sum(1 for c in pool if c._hs_began is not None and now - c._hs_began >= HELD_SECONDS)
        return held >= int(self.cfg.threads)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled and not self._held())

    def handle(self, conn: Any) -> Any:
        _local.conn = conn
        key = getattr(conn, "_hs_key", None)
        if key is not None and _headers_waiting(conn.sock):
            # A whole request taken as its deadline passes (queued behind slow senders that were just cut,
            # which freed this thread) is read now: it must not be cut while this thread parses it. Moved
            # before it is marked taken, so the reaper sees the new deadline once it sees it taken.
            conn._hs_arrived = time.monotonic()  # its body's deadline counts from here too
            _table().move(key, conn._hs_arrived + HEADER_SECONDS)
        conn._hs_taken = True
        conn._hs_began = time.monotonic()
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


def lift_deadline() -> None:
    """The request on this thread has been read: no deadline from now on (the response may stream)."""
    conn = getattr(_local, "conn", None)
    key = getattr(conn, "_hs_key", None)
    if conn is not None and key is not None:
        _table().lift(key)
        conn._hs_key = None


class _DeadlineInput:
    """``wsgi.input`` read in pieces, the request's deadline moved before each piece to when that piece
    is due (:func:`hookstream_server.limits.request_read_deadline`); counts what was read."""

    def __init__(self, raw: Any, length: int) -> None:
        self._raw = raw
        self.length = length
        self.got = 0

    def _due(self, piece: int) -> None:
        conn = getattr(_local, "conn", None)
        key = getattr(conn, "_hs_key", None)
        if conn is not None and key is not None:
            _table().move(key, request_read_deadline(conn._hs_arrived, self.got + piece))

    def read(self, size: int | None = -1) -> bytes:
        want = self.length - self.got if size is None or size < 0 else min(size, self.length - self.got)
        pieces: list[bytes] = []
        while want > 0:
            n = min(_BODY_PIECE, want)
            self._due(n)
            piece = self._raw.read(n)
            if not piece:
                break
            pieces.append(piece)
            self.got += len(piece)
            want -= len(piece)
        self._done_reading()
        return b"".join(pieces)

    def readline(self, size: int | None = -1) -> bytes:
        self._due(_BODY_PIECE)
        line = bytes(self._raw.readline(size if size is not None and size >= 0 else _BODY_PIECE))
        self.got += len(line)
        self._done_reading()
        return line

    def _done_reading(self) -> None:
        # The whole request is in: what follows (authorisation, the store, the trust rule) is the server's
        # own work, which under load can take longer than the read deadline; only a client that is slow
        # to send may be cut (a 200-conversation load test on PostgreSQL lost runs before this).
        if self.got >= self.length:
            lift_deadline()

    def readlines(self, hint: int | None = -1) -> list[bytes]:
        return list(self)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def read_deadline(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """``app`` with its request body read under the request's deadline, and the deadline lifted when
    ``app`` starts its response (the body has been read by then; a long event stream is never cut).
    The body is read only when and as ``app`` reads it, so an application that answers from the headers
    (``401`` without a valid credential, ``413`` from ``Content-Length``) never waits for a body: such
    an answer, given with the body unread, closes the connection (gunicorn would otherwise read the
    rest of the body to reach the next request)."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            length = max(0, int(environ.get("CONTENT_LENGTH") or 0))
        except ValueError:
            length = 0
        body = _DeadlineInput(environ["wsgi.input"], length)
        environ["wsgi.input"] = body

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            lift_deadline()
            if body.got < body.length:
                # gunicorn's Response (start_response is its bound method): close after this answer.
                force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
                if callable(force_close):
                    force_close()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return wrapped
