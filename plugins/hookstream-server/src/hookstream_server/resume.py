"""Resumable runs: each SSE frame a run sends gets an ``id:`` and goes into the event log
(:mod:`hookstream._stores.runlog`), and a client that lost its connection reads the rest from there
(docs/agui-server.md, "Resuming a stream").

Frame ids are ``<runId>:<seq>``, ``seq`` counting the run's frames from 1 (SSE ``id`` field, HTML
Living Standard "Server-sent events"; a client sends the last one it read back as ``Last-Event-ID``).
:class:`Recorder` numbers and logs a live run's frames within the bounds of
:class:`~hookstream._server.limits.ServerLimits` (``event_log_events``, ``event_log_bytes``; past
either the run is marked truncated and the rest is not logged), and marks the run ended, expiring
``event_log_seconds`` later. :func:`tail` reads a logged run from a frame on: what is logged, then,
polling the log every :data:`POLL_SECONDS`, what the run appends until it ends, whichever worker
process runs it.

Thread safety: a :class:`Recorder` belongs to one response (its frames come from one thread at a
time); :func:`tail` is a generator for one response.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from hookstream.errors import AGUIInputError
from hookstream.stores import RunLog

from .limits import ServerLimits

__all__ = ["POLL_SECONDS", "Recorder", "parse_last_event_id", "tail"]

POLL_SECONDS = 0.05
"""Seconds between two reads of the log while a resumed stream waits for the run's next frames."""


def _id_line(run_id: str, seq: int) -> bytes:
    return b"id: " + run_id.encode() + b":" + str(seq).encode() + b"\n"


class Recorder:
    """Numbers a live run's frames (``id: <runId>:<seq>``) and appends them to ``log``."""

    __slots__ = ("_bytes", "_clock", "_ended", "_limits", "_log", "_run_id", "_seq", "_thread_id", "truncated")

    def __init__(self, log: RunLog, limits: ServerLimits, thread_id: str, run_id: str, owner: str | None,
                 protocol: str, clock: Callable[[], float] = time.time) -> None:
        """``clock``: Unix seconds (the log's expiry times), for tests."""
        self._log, self._limits, self._clock = log, limits, clock
        self._thread_id, self._run_id = thread_id, run_id
        self._seq = self._bytes = 0
        self._ended = False
        self.truncated = False
        # A run whose process dies is never marked ended: it expires once it could no longer be running.
        longest = (limits.max_run_seconds or 86_400.0) + (limits.detached_run_seconds or 0.0)
        log.start(thread_id, run_id, owner, protocol, clock() + longest + limits.event_log_seconds)

    def frame(self, data: bytes) -> bytes:
        """``data`` (one SSE frame) with its ``id:`` line, logged."""
        self._seq += 1
        if not self.truncated:
            self._bytes += len(data)
            if self._seq > self._limits.event_log_events or self._bytes > self._limits.event_log_bytes:
                self.truncated = True
                self._log.update(self._thread_id, self._run_id, ended=False, truncated=True,
                                 expires_at=self._clock() + self._limits.event_log_seconds)
            else:
                self._log.append(self._thread_id, self._run_id, self._seq, data)
        return _id_line(self._run_id, self._seq) + data

    def end(self) -> None:
        """The run's response is done: no frame follows; the log expires ``event_log_seconds`` from now."""
        if self._ended:
            return
        self._ended = True
        self._log.update(self._thread_id, self._run_id, ended=True, truncated=self.truncated,
                         expires_at=self._clock() + self._limits.event_log_seconds)


def parse_last_event_id(value: str | None, run_id: str) -> int:
    """The ``seq`` of a ``Last-Event-ID`` (``<runId>:<seq>``) of ``run_id``; 0 when ``value`` is empty
    or ``None`` (from the first frame). Raises :class:`AGUIInputError` for another run's id or another
    form."""
    if not value:
        return 0
    run, _, seq = value.rpartition(":")
    if run != run_id or not seq.isdigit() or len(seq) > 12:
        raise AGUIInputError(f"Last-Event-ID {value[:200]!r} is not '<runId>:<seq>' of run {run_id!r}")
    return int(seq)


def tail(log: RunLog, thread_id: str, run_id: str, after: int) -> Iterator[bytes]:
    """The run's frames after ``after`` with their ``id:`` lines, each once, in order, until the run has
    ended (or its log was truncated, or it expired, or a frame is missing: never a gap)."""
    while True:
        got = log.read(thread_id, run_id, after)
        if got is None:
            return
        info, frames = got
        for seq, data in frames:
            if seq != after + 1:
                return
            after = seq
            yield _id_line(run_id, seq) + data
        if not frames:
            if info.ended or info.truncated:
                return
            time.sleep(POLL_SECONDS)
