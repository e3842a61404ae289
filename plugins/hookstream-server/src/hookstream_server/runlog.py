"""The event log of a server's runs: every SSE frame a run sends, kept so a client that lost its
connection reads the rest (``hookstream serve``, docs/agui-server.md "Resuming a stream").

A run is identified by ``(thread_id, run_id)``. :meth:`RunLog.start` opens it with its owner (the
principal id that started it; ``None`` on a server without authentication) and its protocol
(``"agui"`` or ``"ui"``, the AI SDK UI message stream), refusing ids logged for another owner or of a
run still going, :meth:`RunLog.append` adds frame ``seq``
(1, 2, ... in order, the SSE ``data`` bytes of one frame), :meth:`RunLog.update` marks the run ended
or truncated (past the log's bounds: what follows is not logged) and sets when it expires (Unix
seconds). :meth:`RunLog.read` returns the run (``None`` once expired) and its frames after ``seq``.

Implementations: :class:`MemoryRunLog` (one process), and a SQL store's log (:func:`run_log_of`:
:class:`SQLRunLog` on the store's :class:`~hookstream.stores.SQLDatabase`, tables ``hookstream_runs`` and
``hookstream_run_events`` beside the conversation store's), shared by every worker process. The SQL log
writes on one background thread per process,
batching what the runs appended in the last :data:`FLUSH_SECONDS`: a run's thread only queues its
frames, and the frames one run appended within a batch become one row (``first_seq``..``seq``, their
sizes and their bytes), which is what keeps the log's cost per event small (measured in
``benchmarks/bench_serve.py``); a reader on another worker sees a frame at most about that late.
Expired runs are deleted every :data:`SWEEP_SECONDS`.

Thread safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
from hookstream.stores import SQLDatabase

__all__ = ["FLUSH_SECONDS", "SWEEP_SECONDS", "LoggedRun", "MemoryRunLog", "RunLog", "SQLRunLog", "run_log_of"]

FLUSH_SECONDS = 0.25
"""Seconds the SQL log's writer waits to batch frames before it writes them."""
SWEEP_SECONDS = 10.0
"""Seconds between two deletions of expired runs."""

log = logging.getLogger("hookstream.agui")

RUNS = "hookstream_runs"
EVENTS = "hookstream_run_events"


@attrs.frozen(slots=True)
class LoggedRun:
    """A logged run as :meth:`RunLog.read` and :meth:`RunLog.latest` return it."""

    thread_id: str
    run_id: str
    owner: str | None
    protocol: str
    ended: bool
    truncated: bool
    expires_at: float


@runtime_checkable
class RunLog(Protocol):
    """Where a server keeps its runs' frames (see the module docstring)."""

    def start(self, thread_id: str, run_id: str, owner: str | None, protocol: str, expires_at: float) -> bool:
        """Open a run's log (an ended run of the same owner with the same ids is replaced); ``False``
        (nothing changed) when the ids are logged for another owner or their run is still going. Only
        the run that opened an entry appends to it."""
        ...

    def append(self, thread_id: str, run_id: str, seq: int, data: bytes) -> None:
        """Add frame ``seq`` of the run."""
        ...

    def update(self, thread_id: str, run_id: str, *, ended: bool, truncated: bool, expires_at: float) -> None:
        """Mark the run ended and/or truncated; it expires at ``expires_at`` (Unix seconds)."""
        ...

    def read(self, thread_id: str, run_id: str, after: int) -> tuple[LoggedRun, list[tuple[int, bytes]]] | None:
        """The run and its frames with ``seq > after`` in order; ``None`` when unknown or expired."""
        ...

    def latest(self, thread_id: str, protocol: str, owner: str | None) -> LoggedRun | None:
        """The thread's most recently started run of ``protocol`` by ``owner`` that has not expired, or
        ``None``."""
        ...


@attrs.define(slots=True)
class _MemRun:
    info: LoggedRun
    started: float
    frames: list[bytes] = attrs.Factory(list)
    size: int = 0  # bytes of its frames


class MemoryRunLog:
    """A :class:`RunLog` in this process's memory (``clock``: Unix seconds, for tests).

    Runs are keyed by ``(thread_id, run_id)`` and carry their owner: :meth:`start` refuses ids that are
    logged for another principal or still running (without a store nothing else keeps one principal
    off another's thread ids). ``total_bytes`` and ``principal_bytes`` cap the frames' bytes kept for
    all runs and for one owner's runs: an append past either first drops the oldest ended runs (of that
    owner, for its cap), and when only running runs are left the appending run is marked truncated
    instead (the rest of it is not logged)."""

    def __init__(self, clock: Callable[[], float] = time.time, *, total_bytes: int | None = None,
                 principal_bytes: int | None = None) -> None:
        self._runs: dict[tuple[str, str], _MemRun] = {}  # in start order: the oldest first
        self._lock = threading.Lock()
        self._clock = clock
        self._swept = 0.0
        self._caps = (total_bytes, principal_bytes)
        self._total = 0
        self._owned: dict[str | None, int] = {}  # bytes per owner

    def start(self, thread_id: str, run_id: str, owner: str | None, protocol: str, expires_at: float) -> bool:
        now = self._clock()
        key = (thread_id, run_id)
        with self._lock:
            self._sweep(now)
            old = self._runs.get(key)
            if old is not None and old.info.expires_at >= now and (old.info.owner != owner or not old.info.ended):
                return False
            if old is not None:
                self._drop(key)
            info = LoggedRun(thread_id, run_id, owner, protocol, False, False, expires_at)
            self._runs[key] = _MemRun(info, now)
        return True

    def append(self, thread_id: str, run_id: str, seq: int, data: bytes) -> None:
        with self._lock:
            run = self._runs.get((thread_id, run_id))
            if run is None or run.info.truncated or seq != len(run.frames) + 1:
                return
            if not self._room(run, len(data)):
                run.info = attrs.evolve(run.info, truncated=True)
                return
            run.frames.append(data)
            run.size += len(data)
            self._total += len(data)
            self._owned[run.info.owner] = self._owned.get(run.info.owner, 0) + len(data)

    def _room(self, run: _MemRun, size: int) -> bool:
        """Whether ``size`` more bytes of ``run`` fit the caps, once the oldest ended runs are dropped."""
        total, per_owner = self._caps
        owner = run.info.owner
        for cap, mine in ((per_owner, True), (total, False)):
            while cap is not None and (self._owned.get(owner, 0) if mine else self._total) + size > cap:
                victim = next((k for k, r in self._runs.items()
                               if r.info.ended and r.size and (not mine or r.info.owner == owner)), None)
                if victim is None:
                    return False
                self._drop(victim)
        return True

    def _drop(self, key: tuple[str, str]) -> None:
        run = self._runs.pop(key)
        self._total -= run.size
        left = self._owned.get(run.info.owner, 0) - run.size
        if left > 0:
            self._owned[run.info.owner] = left
        else:
            self._owned.pop(run.info.owner, None)

    def kept_bytes(self) -> int:
        """Bytes of frames kept, of all runs."""
        with self._lock:
            return self._total

    def kept_bytes_of(self, owner: str | None) -> int:
        """Bytes of frames kept of ``owner``'s runs."""
        with self._lock:
            return self._owned.get(owner, 0)

    def update(self, thread_id: str, run_id: str, *, ended: bool, truncated: bool, expires_at: float) -> None:
        with self._lock:
            run = self._runs.get((thread_id, run_id))
            if run is not None:  # a run truncated by the caps stays truncated
                run.info = attrs.evolve(run.info, ended=ended, truncated=truncated or run.info.truncated,
                                        expires_at=expires_at)

    def read(self, thread_id: str, run_id: str, after: int) -> tuple[LoggedRun, list[tuple[int, bytes]]] | None:
        now = self._clock()
        with self._lock:
            run = self._runs.get((thread_id, run_id))
            if run is None or run.info.expires_at < now:
                return None
            return run.info, [(i + 1, f) for i, f in enumerate(run.frames) if i + 1 > after]

    def latest(self, thread_id: str, protocol: str, owner: str | None) -> LoggedRun | None:
        now = self._clock()
        with self._lock:
            runs = [r for (t, _), r in self._runs.items() if t == thread_id and r.info.protocol == protocol
                    and r.info.owner == owner and r.info.expires_at >= now]
        return max(runs, key=lambda r: r.started).info if runs else None

    def _sweep(self, now: float) -> None:
        if now - self._swept < SWEEP_SECONDS:
            return
        self._swept = now
        for key in [k for k, r in self._runs.items() if r.info.expires_at < now]:
            self._drop(key)


_Op = tuple[str, tuple[Any, ...]]


class SQLRunLog:
    """A :class:`RunLog` in the database of a SQL conversation store (``db``, the store's ``database()``).
    Creates its tables when absent, at construction."""

    def __init__(self, db: SQLDatabase, clock: Callable[[], float] = time.time) -> None:
        self._connect, self._write, self._mark, self._clock = db.connect, db.write, db.placeholder, clock
        self._blob = db.blob
        self._cond = threading.Condition()
        self._ops: list[_Op] = []
        self._pid: int | None = None
        self._queued = self._written = 0  # operations queued and written in this process (tickets)
        self._urgent = False  # someone waits for a write: no batching delay
        self._swept = 0.0
        self._ready = False
        m = self._mark
        self._sql: dict[str, list[tuple[str, tuple[int, ...]]]] = {
            "start": [(f"DELETE FROM {EVENTS} WHERE thread_id = {m} AND run_id = {m}", (0, 1)),
                      (f"INSERT INTO {RUNS} (thread_id, run_id, owner, protocol, ended, truncated, started_at, "
                       f"expires_at) VALUES ({m}, {m}, {m}, {m}, 0, 0, {m}, {m}) ON CONFLICT (thread_id, run_id) "
                       "DO UPDATE SET owner = excluded.owner, protocol = excluded.protocol, ended = 0, "
                       "truncated = 0, started_at = excluded.started_at, expires_at = excluded.expires_at",
                       (0, 1, 2, 3, 5, 4))],
            "append": [(f"INSERT INTO {EVENTS} (thread_id, run_id, seq, first_seq, sizes, data) VALUES "
                        f"({m}, {m}, {m}, {m}, {m}, {m}) ON CONFLICT (thread_id, run_id, seq) DO NOTHING",
                        (0, 1, 2, 3, 4, 5))],
            "update": [(f"UPDATE {RUNS} SET ended = {m}, truncated = {m}, expires_at = {m} "
                        f"WHERE thread_id = {m} AND run_id = {m}", (2, 3, 4, 0, 1))],
        }
        with self._write() as conn:
            if db.dialect == "postgresql":
                # Two workers creating the tables at once would both pass IF NOT EXISTS: serialise them.
                conn.execute("SELECT pg_advisory_xact_lock(4242016)")
            self._schema(conn)

    def _schema(self, conn: Any) -> None:
        """Create the log's tables when absent."""
        conn.execute(f"CREATE TABLE IF NOT EXISTS {RUNS} (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
                     "owner TEXT, protocol TEXT NOT NULL, ended INTEGER NOT NULL, truncated INTEGER NOT NULL, "
                     "started_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL, "
                     "PRIMARY KEY (thread_id, run_id))")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {EVENTS} (thread_id TEXT NOT NULL, run_id TEXT NOT NULL, "
                     f"seq INTEGER NOT NULL, first_seq INTEGER NOT NULL, sizes TEXT NOT NULL, data {self._blob} "
                     "NOT NULL, PRIMARY KEY (thread_id, run_id, seq))")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {RUNS}_expires ON {RUNS} (expires_at)")

    # -- writing: queued, written by the process's writer thread ------------------------------------

    def _queue(self, op: _Op) -> None:
        with self._cond:
            if self._pid != os.getpid():  # first use in this process (a gunicorn worker forked after build)
                self._pid, self._ops = os.getpid(), []
                self._queued = self._written = 0
                threading.Thread(target=self._writer, name="hookstream-run-log", daemon=True).start()
            self._ops.append(op)
            self._queued += 1
            if len(self._ops) == 1:
                self._cond.notify_all()

    def ticket(self) -> int:
        """The number of operations this process has queued so far: :meth:`wait_written` of it returns
        once every one of them is in the database."""
        with self._cond:
            return self._queued if self._pid == os.getpid() else 0

    def wait_written(self, ticket: int, timeout: float | None = None) -> bool:
        """Wait until the operations up to ``ticket`` (:meth:`ticket`) are written (a group commit: the
        writer skips its batching delay while someone waits, and writes what every run queued meanwhile
        in one transaction). Returns ``False`` after ``timeout`` seconds without that. A write that failed
        counts as written (the log is best effort: its failure is logged)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._written < ticket and self._pid == os.getpid():
                self._urgent = True
                self._cond.notify_all()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return self._written >= ticket

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything this process queued so far is written (:meth:`wait_written`)."""
        return self.wait_written(self.ticket(), timeout)

    def start(self, thread_id: str, run_id: str, owner: str | None, protocol: str, expires_at: float) -> bool:
        # Always opens: with a SQL store every thread belongs to one principal (the server claims it before
        # a run starts), so another principal never reaches a thread's run ids.
        self._queue(("start", (thread_id, run_id, owner, protocol, expires_at, self._clock())))
        return True

    def append(self, thread_id: str, run_id: str, seq: int, data: bytes) -> None:
        self._queue(("append", (thread_id, run_id, seq, data)))

    def update(self, thread_id: str, run_id: str, *, ended: bool, truncated: bool, expires_at: float) -> None:
        self._queue(("update", (thread_id, run_id, int(ended), int(truncated), expires_at)))

    def _writer(self) -> None:
        while True:
            with self._cond:
                while not self._ops:
                    self._cond.wait()
                # Let the runs' next frames join this batch, unless a frame's sender waits for it.
                self._cond.wait_for(lambda: self._urgent, FLUSH_SECONDS)
                ops, self._ops = self._ops, []
                self._urgent = False
            try:
                self._flush(ops)
            except Exception:  # the log is best effort: a failed write must not stop later ones
                log.exception("writing the run event log failed")
            with self._cond:
                self._written += len(ops)
                self._cond.notify_all()

    def _flush(self, ops: Sequence[_Op]) -> None:
        now = self._clock()
        with self._write() as conn:
            for kind, group in _groups(ops):
                if kind == "append":
                    group = _chunks(group)
                for sql, order in self._sql[kind]:
                    rows = [tuple(args[i] for i in order) for args in group]
                    if kind == "start":  # a DELETE per run: few
                        rows = list(dict.fromkeys(rows))
                    conn.cursor().executemany(sql, rows)
            if now - self._swept >= SWEEP_SECONDS:
                self._swept = now
                m = self._mark
                # The expired runs by their index, then their frames by primary key: no scan of the frames.
                expired = conn.execute(f"SELECT thread_id, run_id FROM {RUNS} WHERE expires_at < {m}",
                                       (now,)).fetchall()
                if expired:
                    for table in (EVENTS, RUNS):
                        conn.cursor().executemany(f"DELETE FROM {table} WHERE thread_id = {m} AND run_id = {m}",
                                                  [tuple(r) for r in expired])

    # -- reading --------------------------------------------------------------------------------------

    def read(self, thread_id: str, run_id: str, after: int) -> tuple[LoggedRun, list[tuple[int, bytes]]] | None:
        m = self._mark
        conn = self._connect()
        row = conn.execute(f"SELECT owner, protocol, ended, truncated, expires_at FROM {RUNS} "
                           f"WHERE thread_id = {m} AND run_id = {m} AND expires_at >= {m}",
                           (thread_id, run_id, self._clock())).fetchone()
        if row is None:
            return None
        info = LoggedRun(thread_id, run_id, row[0], row[1], bool(row[2]), bool(row[3]), float(row[4]))
        rows = conn.execute(f"SELECT first_seq, sizes, data FROM {EVENTS} WHERE thread_id = {m} AND run_id = {m} "
                            f"AND seq > {m} ORDER BY seq", (thread_id, run_id, after)).fetchall()
        frames: list[tuple[int, bytes]] = []
        for first, sizes, data in rows:
            data, at = bytes(data), 0
            for seq, size in enumerate(map(int, sizes.split(",")), int(first)):
                if seq > after:
                    frames.append((seq, data[at:at + size]))
                at += size
        return info, frames

    def latest(self, thread_id: str, protocol: str, owner: str | None) -> LoggedRun | None:
        m = self._mark
        who, args = ("owner IS NULL", ()) if owner is None else (f"owner = {m}", (owner,))
        row = self._connect().execute(
            f"SELECT run_id, owner, ended, truncated, expires_at FROM {RUNS} WHERE thread_id = {m} AND "
            f"protocol = {m} AND {who} AND expires_at >= {m} ORDER BY started_at DESC LIMIT 1",
            (thread_id, protocol, *args, self._clock())).fetchone()
        if row is None:
            return None
        return LoggedRun(thread_id, row[0], row[1], protocol, bool(row[2]), bool(row[3]), float(row[4]))


def _chunks(appends: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``(thread_id, run_id, seq, data)`` appends as one row per run and run of consecutive frames:
    ``(thread_id, run_id, last seq, first seq, "size,size,...", the frames' bytes)``."""
    rows: list[tuple[Any, ...]] = []
    open_: dict[tuple[str, str], list[Any]] = {}
    for thread_id, run_id, seq, data in appends:
        chunk = open_.get((thread_id, run_id))
        if chunk is None or chunk[0] + 1 != seq:
            if chunk is not None:
                rows.append(_row(thread_id, run_id, chunk))
            chunk = open_[(thread_id, run_id)] = [seq, seq, [], []]
        chunk[0] = seq  # the last seq so far
        chunk[2].append(str(len(data)))
        chunk[3].append(data)
    rows.extend(_row(t, r, c) for (t, r), c in open_.items())
    return rows


def _row(thread_id: str, run_id: str, chunk: list[Any]) -> tuple[Any, ...]:
    last, first, sizes, frames = chunk
    return (thread_id, run_id, last, first, ",".join(sizes), b"".join(frames))


def _groups(ops: Sequence[_Op]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """Consecutive operations of one kind, in order (one ``executemany`` each)."""
    kind: str | None = None
    group: list[tuple[Any, ...]] = []
    for k, args in ops:
        if k != kind and group:
            yield str(kind), group
            group = []
        kind = k
        group.append(args)
    if group:
        yield str(kind), group


_LOGS: weakref.WeakKeyDictionary[Any, SQLRunLog] = weakref.WeakKeyDictionary()
_LOGS_LOCK = threading.Lock()


def run_log_of(store: Any) -> SQLRunLog | None:
    """The event log in ``store``'s database (one per store object), or ``None`` for a store without a
    SQL database (``database()``: :class:`~hookstream.stores.SQLiteStore`, ``PostgresStore``)."""
    database = getattr(store, "database", None)
    if not callable(database):
        return None
    with _LOGS_LOCK:
        found = _LOGS.get(store)
        if found is None:
            found = _LOGS[store] = SQLRunLog(database())
        return found
