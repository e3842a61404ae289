"""What one principal may ask of a server: runs at once, runs per minute, request size, run length.

:class:`ServerLimits` holds the numbers (defaults suit one small team; ``hookstream serve`` flags set
them); :class:`PrincipalLimits` enforces the per-principal ones: a count of the principal's requests
being served (runs streaming, and every request whose body is still being read: a slow body holds a
thread as a run does) and a :class:`~hookstream.RateLimiter` (``rpm``) per principal. The count is kept
in memory shared by the processes forked from the one that built it (``hookstream serve --workers N``
builds the application before gunicorn forks), so ``max_concurrent_runs`` holds across a server's
workers; the rate limit is counted per worker process (a principal may start up to N times
``runs_per_minute`` across N workers).

Answers when a limit is passed (``hookstream._server.agui``): ``429 Too Many Requests`` with
``Retry-After`` in whole seconds (RFC 6585 section 4, RFC 9110 section 10.2.3) for the run limits,
``413 Content Too Large`` for a request with too many messages or message bytes, and a run past
``max_run_seconds`` is cancelled and ends with ``RUN_ERROR`` code :data:`RUN_TIMEOUT` (not the
``RUN_FINISHED`` outcome ``cancelled`` of a client's own cancel) by :class:`TimedRun`; the deadlines of
every run are kept by :class:`RunDeadlines`: one thread per process, not a :class:`threading.Timer` each
(starting a thread waits for it to run, which with 64 runs at once on one GIL put ~12 ms before each
run's first event).

Reading a request (both servers ``hookstream serve`` runs, docs/agui-server.md "Limits"): its request
line and headers must arrive within :data:`HEADER_SECONDS` of its first byte, its body at
:data:`MIN_BODY_RATE` or faster after that, and the whole request within :data:`REQUEST_READ_SECONDS`
(Apache ``mod_reqtimeout``'s rule plus a cap, so that neither a byte-a-second trickle nor a body kept
just above the rate holds a connection or thread for long). ``hookstream._cli.gthread_worker`` and
``hookstream._cli.waitress_channel`` enforce them.

Thread safety: :class:`PrincipalLimits` is shared by all request threads of a process and by the
processes forked from it; each process changes only its own row of the shared count (under one lock),
each principal's rate limiter under its own lock. :class:`RunDeadlines` may be shared
by any threads (one lock); its callbacks run on its own thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import math
import mmap
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from hookstream import RateLimiter
from hookstream.events import BaseEvent, RunError, RunFinished
from hookstream.plugin import Permit

__all__ = ["HEADER_SECONDS", "MIN_BODY_RATE", "REQUEST_READ_SECONDS", "RUN_TIMEOUT", "PrincipalLimits",
           "RunDeadlines", "ServerLimits", "SharedCounts", "TimedRun", "request_read_deadline"]

HEADER_SECONDS = 3.0
"""Seconds a client has, from its request's first byte, to send the request line and headers."""
MIN_BODY_RATE = 32 * 1024
"""Bytes per second a request body must arrive at, at least (counted from :data:`HEADER_SECONDS`)."""
REQUEST_READ_SECONDS = 120.0
"""Seconds a whole request (headers and body) may take to arrive, however fast its bytes come: a
32 MiB body needs 2.2 Mbit/s."""
RUN_TIMEOUT = "run_timeout"
"""The ``RUN_ERROR`` code of a run cancelled for passing ``max_run_seconds``."""


def request_read_deadline(started: float, body_bytes: int) -> float:
    """When a request whose first byte came at ``started`` (seconds, any clock) must have its first
    ``body_bytes`` body bytes: :data:`HEADER_SECONDS` plus the body at :data:`MIN_BODY_RATE`, and never
    later than :data:`REQUEST_READ_SECONDS` after ``started``."""
    return started + min(HEADER_SECONDS + body_bytes / MIN_BODY_RATE, REQUEST_READ_SECONDS)


def _positive(instance: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TypeError(f"{attribute.name} must be a positive number or None, not {value!r}")


@attrs.frozen(slots=True)
class ServerLimits:
    """Per-principal and per-request limits of an AG-UI server; ``None`` turns one off.

    * ``max_concurrent_runs``: runs of one principal streaming at once (per worker process).
    * ``runs_per_minute``: runs one principal may start in any minute (sliding window).
    * ``max_messages``: messages in one ``RunAgentInput``.
    * ``max_message_bytes``: bytes of the request body's ``messages`` (JSON), in total.
    * ``max_run_seconds``: wall-clock seconds a run may take; then it is cancelled and ends with
      ``RUN_ERROR`` code :data:`RUN_TIMEOUT` (``run_timeout``).
    * ``max_body_bytes``: the request body, in bytes (larger: ``413`` before it is read).
    * ``event_log_events``, ``event_log_bytes``: what the event log keeps of one run (frames, and
      bytes of their SSE ``data``); past either, the rest of the run is not logged and the run can no
      longer be resumed (docs/agui-server.md, "Resuming a stream").
    * ``event_log_seconds``: how long a run's log is kept after the run ends.
    * ``detached_run_seconds``: how long a run whose client disconnected keeps going (its events
      logged, for a client that reconnects) before it is cancelled; ``None``: until it ends. A client
      that leaves while its run is quiet is noticed at the next ping (``ping_seconds``).
    * ``ping_seconds``: seconds of silence after which a live or resumed stream sends an SSE comment
      (``: ping``), so that a client that left is noticed (the write fails) and its thread freed;
      ``None``: no pings (a client gone from a quiet run holds its thread until the run ends).
    * ``max_resume_streams``: resumed streams (``GET .../runs/{runId}/events``, ``GET
      /api/chat/{id}/stream``) of one principal open at once (per worker process); past it ``429``.
    * ``resume_wait_seconds``: how long a resumed stream waits for its run's next frame; then it ends
      (the client reconnects with ``Last-Event-ID``).
    * ``event_log_total_bytes``, ``event_log_principal_bytes``: what the in-memory event log (a server
      without a SQL store) keeps of all runs, and of one principal's runs, in bytes of SSE ``data``;
      past either the oldest ended runs are dropped first (their resume answers ``404``), and a run
      that still does not fit is no longer logged (its resume answers ``410``).
    * ``max_queued_messages``: steering messages one run holds waiting for its next step.

    ``max_concurrent_runs`` also counts the principal's requests whose body is being read, and a
    steering message counts against ``runs_per_minute``; ``max_messages`` and ``max_message_bytes``
    bound each steering message and the conversation it joins (docs/agui-server.md, "Limits").

    Raises :class:`TypeError` at construction for a value that is not a positive number or ``None``.
    """

    max_concurrent_runs: int | None = attrs.field(default=4, validator=_positive)
    runs_per_minute: float | None = attrs.field(default=60, validator=_positive)
    max_messages: int | None = attrs.field(default=1000, validator=_positive)
    max_message_bytes: int | None = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    max_run_seconds: float | None = attrs.field(default=600.0, validator=_positive)
    max_body_bytes: int = attrs.field(default=32 * 1024 * 1024, validator=_positive)
    event_log_events: int = attrs.field(default=10_000, validator=_positive)
    event_log_bytes: int = attrs.field(default=8 * 1024 * 1024, validator=_positive)
    event_log_seconds: float = attrs.field(default=300.0, validator=_positive)
    detached_run_seconds: float | None = attrs.field(default=60.0, validator=_positive)
    max_queued_messages: int | None = attrs.field(default=64, validator=_positive)
    ping_seconds: float | None = attrs.field(default=15.0, validator=_positive)
    max_resume_streams: int | None = attrs.field(default=4, validator=_positive)
    resume_wait_seconds: float = attrs.field(default=300.0, validator=_positive)
    event_log_total_bytes: int = attrs.field(default=256 * 1024 * 1024, validator=_positive)
    event_log_principal_bytes: int = attrs.field(default=32 * 1024 * 1024, validator=_positive)


class PrincipalLimits:
    """The run limits of :class:`ServerLimits`, counted per principal id (``None``: everyone of an
    unauthenticated server counts as one principal). :meth:`start` is :meth:`hold` then :meth:`admit`; a
    request whose body is still to be read is held first (refused at once past ``max_concurrent_runs``)
    and admitted once it is read."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self._running = SharedCounts()
        self._rates: dict[str | None, RateLimiter] = {}
        self._streams: dict[str | None, int] = {}  # resumed streams open, which hold a thread each
        self._lock = threading.Lock()

    def start(self, principal: str | None) -> float | None:
        """Count a new run of ``principal``: ``None`` when it may start (call :meth:`finish` when it
        ends), else the seconds to wait before trying again (nothing counted)."""
        wait = self.hold(principal)
        if wait is None:
            wait = self.admit(principal)
            if wait is not None:
                self.finish(principal)
        return wait

    def hold(self, principal: str | None) -> float | None:
        """Count one request of ``principal`` toward ``max_concurrent_runs`` (no rate permit): ``None``
        when it fits (call :meth:`finish` when it is done), else the seconds to wait (nothing counted)."""
        if not self._running.acquire(principal, self.limits.max_concurrent_runs):
            return 1.0  # a run ends at an unknown time: ask again soon
        return None

    def hold_always(self, principal: str | None) -> None:
        """Count one run of ``principal`` toward ``max_concurrent_runs`` even past it (a run admitted
        before, going on in another process: :meth:`hookstream_server.agui._App.run_detached`); call
        :meth:`finish` when it ends."""
        self._running.acquire(principal, None)

    def admit(self, principal: str | None) -> float | None:
        """Take one of ``principal``'s ``runs_per_minute`` permits: ``None`` when one was free, else the
        seconds until one is."""
        limits = self.limits
        if limits.runs_per_minute is None:
            return None
        with self._lock:
            rate = self._rates.get(principal)
            if rate is None:
                if len(self._rates) > 10_000:  # forget principals that have not run for a window
                    self._rates = {p: r for p, r in self._rates.items() if r.usage()[0]}
                # A one-minute window: a principal may start its whole minute's runs at once, as users expect.
                rate = self._rates[principal] = RateLimiter(rpm=limits.runs_per_minute, window=60.0)
        got = rate.try_acquire()
        return None if isinstance(got, Permit) else got

    def finish(self, principal: str | None) -> None:
        """One request of ``principal`` counted by :meth:`hold` or :meth:`start` is done (however it ended)."""
        self._running.release(principal)

    def open_stream(self, principal: str | None) -> bool:
        """Count a resumed stream of ``principal``: ``False`` when it has ``max_resume_streams`` open
        (nothing counted), else ``True`` (call :meth:`close_stream` when it ends)."""
        cap = self.limits.max_resume_streams
        with self._lock:
            open_ = self._streams.get(principal, 0)
            if cap is not None and open_ >= cap:
                return False
            self._streams[principal] = open_ + 1
        return True

    def close_stream(self, principal: str | None) -> None:
        """One resumed stream of ``principal`` ended."""
        with self._lock:
            left = self._streams.get(principal, 0) - 1
            if left > 0:
                self._streams[principal] = left
            else:
                self._streams.pop(principal, None)

    def running(self, principal: str | None) -> int:
        """Requests of ``principal`` counted now (runs streaming, bodies being read), in every process
        sharing the count."""
        return self._running.count(principal)


class SharedCounts:
    """How many requests each principal has in progress, summed over this process and the processes
    forked from the one that made the object (gunicorn workers of a preloaded application).

    An anonymous shared memory map of :data:`ROWS` rows, one per process (a process takes a free row,
    or the row of a process that has died, on its first count; its counts die with it); a row holds
    :data:`SLOTS` counters, a principal's being the one its keyed BLAKE2b hash names. Two principals
    whose hashes meet share a count (1 in 8,192 pairs; never less than either's own), and a process that
    finds no row counts in its own memory only. Counting one more and reading the sum happen under a
    lock of the process (threads) and a POSIX record lock of a shared file (processes; the system drops
    it when its process dies), so two requests racing for the last place never both get it, nor are
    both refused. Thread-safe; fork-safe (a child takes its own row)."""

    ROWS = 64
    SLOTS = 8192

    def __init__(self) -> None:
        width = self.SLOTS + 1  # cell 0 of a row: the pid of the process that owns it
        self._width = width
        self._map = mmap.mmap(-1, 4 * self.ROWS * width)
        self._cells = memoryview(self._map).cast("i")
        self._key = os.urandom(16)
        # POSIX record locks belong to a process and go when it dies: claiming a row cannot be left locked.
        self._claims = tempfile.TemporaryFile()
        self._lock = threading.Lock()
        self._pid = 0
        self._row = -1
        self._local: dict[int, int] = {}

    def _slot(self, principal: str | None) -> int:
        digest = hashlib.blake2b((principal or "").encode("utf-8", "surrogatepass"), key=self._key,
                                 digest_size=4).digest()
        return 1 + int.from_bytes(digest, "big") % self.SLOTS

    @contextlib.contextmanager
    def _processes(self) -> Iterator[None]:
        """The lock of every process sharing the map (nothing where there is no ``fcntl``: one process)."""
        if fcntl is None:
            yield
            return
        fd = self._claims.fileno()
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)

    def _own_row(self) -> int:
        """This process's row (taken on first use in a process); -1 when none is free. Under ``_lock``."""
        pid = os.getpid()
        if self._pid == pid:
            return self._row
        self._pid, self._row, self._local = pid, -1, {}
        if fcntl is None:  # Windows: no fork, no workers: this process's own counts are the counts
            return -1
        with self._processes():
            for row in range(self.ROWS):
                base = row * self._width
                owner = self._cells[base]
                if owner == 0 or not _alive(owner):
                    self._cells[base + 1:base + self._width] = memoryview(bytes(4 * self.SLOTS)).cast("i")
                    self._cells[base] = pid
                    self._row = row
                    break
        return self._row

    def _add(self, slot: int, n: int) -> None:
        row = self._own_row()
        if row < 0:
            self._local[slot] = self._local.get(slot, 0) + n
        else:
            self._cells[row * self._width + slot] += n

    def _sum(self, slot: int) -> int:
        if self._row < 0:
            return self._local.get(slot, 0)
        total = 0
        cells, width = self._cells, self._width
        for row in range(self.ROWS):
            owner = cells[row * width]
            if owner == 0:
                continue
            n = cells[row * width + slot]
            if n > 0 and (row == self._row or _alive(owner)):
                total += n
        return total

    def acquire(self, principal: str | None, limit: int | None) -> bool:
        """Count one more request of ``principal`` unless that passes ``limit`` (``None``: no limit)."""
        slot = self._slot(principal)
        with self._lock:
            self._own_row()
            with self._processes():
                if limit is not None and self._sum(slot) >= limit:
                    return False
                self._add(slot, 1)
        return True

    def release(self, principal: str | None) -> None:
        """One request of ``principal`` is done."""
        slot = self._slot(principal)
        with self._lock:
            row = self._own_row()
            current = self._local.get(slot, 0) if row < 0 else self._cells[row * self._width + slot]
            if current > 0:
                self._add(slot, -1)

    def count(self, principal: str | None) -> int:
        """Requests of ``principal`` counted now, in every process sharing this object."""
        slot = self._slot(principal)
        with self._lock:
            self._own_row()
            return self._sum(slot)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


class RunDeadlines:
    """Calls each callback once its deadline passes, all on one daemon thread per process (started on the
    first :meth:`add` in that process: a gunicorn worker forked after the application was built gets its
    own). Callbacks should be short (``stream.cancel``); one that raises is ignored."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._callbacks: dict[int, Callable[[], Any]] = {}
        self._ids = itertools.count()
        self._pid: int | None = None

    def add(self, seconds: float, callback: Callable[[], Any]) -> int:
        """Call ``callback`` in ``seconds`` (monotonic) unless :meth:`cancel` is given the returned key first."""
        with self._cond:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._heap, self._callbacks = [], {}
                threading.Thread(target=self._run, name="hookstream-run-deadlines", daemon=True).start()
            key = next(self._ids)
            self._callbacks[key] = callback
            heapq.heappush(self._heap, (time.monotonic() + seconds, key))
            if self._heap[0][1] == key:
                self._cond.notify()
        return key

    def cancel(self, key: int) -> None:
        """Forget ``key``'s callback (nothing when it has run or was cancelled)."""
        with self._cond:
            self._callbacks.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] not in self._callbacks:
                        heapq.heappop(self._heap)  # cancelled
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    if wait is not None and wait <= 0:
                        break
                    self._cond.wait(wait)
                _, key = heapq.heappop(self._heap)
                callback = self._callbacks.pop(key)
            try:
                callback()
            except Exception:  # a deadline's callback must not stop the others'
                pass


class TimedRun:
    """A run's event stream that is cancelled after ``seconds`` and then ends with ``RUN_ERROR`` code
    :data:`RUN_TIMEOUT` (message naming the limit, the run's usage kept) in place of the ``RUN_FINISHED``
    (outcome ``cancelled``) or ``RUN_ERROR`` its cancel produced; a run that ends on its own first is
    unchanged. ``stream`` is anything iterable of events with ``cancel()`` (a ``RunStream``).
    :meth:`close` forgets the deadline (call it when the response is done); ``cancel`` from any thread."""

    def __init__(self, stream: Any, seconds: float, deadlines: RunDeadlines) -> None:
        self._stream = stream
        self._seconds = seconds
        self._expired = False
        self._deadlines = deadlines
        self._key: int | None = deadlines.add(seconds, self._expire)

    def _expire(self) -> None:
        self._expired = True
        self._stream.cancel()

    def cancel(self) -> None:
        self._stream.cancel()

    def close(self) -> None:
        key, self._key = self._key, None
        if key is not None:
            self._deadlines.cancel(key)

    def __iter__(self) -> Iterator[BaseEvent]:
        for ev in self._stream:
            if self._expired and _ends_cancelled(ev):
                yield RunError(f"the run took longer than max_run_seconds ({self._seconds:g} s) and was cancelled",
                               code=RUN_TIMEOUT, usage=getattr(ev, "usage", None))
                return
            yield ev


def _ends_cancelled(ev: BaseEvent) -> bool:
    if isinstance(ev, RunError):
        return True
    return isinstance(ev, RunFinished) and ev.outcome is not None and ev.outcome.type == "cancelled"


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
