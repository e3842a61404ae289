"""Time limits of a run and the watchdog thread that enforces the ones a socket timeout cannot.

``connect`` and ``read`` are handed to requests (socket level). ``first_event``, ``idle``, ``step`` and
``run`` are measured on the events the provider adapter yields, not on socket reads, so SSE keepalive
comments (``: keepalive``) and Anthropic ``ping`` events, which produce no event, never reset them.
``tool`` bounds each tool call (a tool's own ``Tool.timeout`` wins).

The per-event cost is one ``time.monotonic()`` store in ``hookstream._stream.call.ModelCall``; a single
:class:`Watchdog` thread per run polls those stamps and aborts the call (closing its socket) when a
limit is passed. No lock and no timer object is touched per event.

Thread safety: a :class:`Timeouts` is an immutable value. A :class:`Watchdog` is started and stopped by
the engine's thread; it only reads plain attributes written by that thread (atomic under the GIL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from .._errors import StreamTimeoutError

__all__ = ["Timeouts", "Watchdog"]


@attrs.define(slots=True, frozen=True)
class Timeouts:
    """Time limits in seconds; ``None`` disables one.

    * ``connect``: TCP/TLS connect (requests), retried like a connect error.
    * ``read``: one socket read (requests); keepalives reset it, so it is only a last-resort guard.
    * ``first_event``: from sending a request to the adapter's first event after ``RUN_STARTED``
      (falls back to ``idle`` when unset).
    * ``idle``: between two parsed events while the engine waits for the next one (the time the caller
      spends handling an event is not counted).
    * ``step``: one model call, request to final event.
    * ``run``: the whole run, tools included.
    * ``tool``: each tool call (default for tools without their own ``timeout``); a tool past it gives
      the model an error result and the run goes on.

    Every limit except ``tool`` ends the run with :class:`~hookstream.errors.StreamTimeoutError` whose
    ``limit`` names it.
    """

    connect: float | None = 10.0
    read: float | None = 300.0
    first_event: float | None = None
    idle: float | None = None
    step: float | None = None
    run: float | None = None
    tool: float | None = None

    @classmethod
    def coerce(cls, value: Timeouts | dict[str, Any] | None) -> Timeouts:
        """A :class:`Timeouts` from itself, a dict of its fields, or ``None`` (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, Timeouts):
            return value
        return cls(**value)

    @property
    def watched(self) -> bool:
        """True when a limit needs the watchdog thread."""
        return any(v is not None for v in (self.first_event, self.idle, self.step, self.run))

    def poll_interval(self) -> float:
        limits = [v for v in (self.first_event, self.idle, self.step, self.run) if v is not None]
        return min(0.1, max(0.005, min(limits) / 20)) if limits else 0.1


class Watchdog:
    """Polls the current model call's stamps and the run clock; on a passed limit, calls ``on_timeout``
    with the typed error (the engine then aborts the call and cancels running tools)."""

    def __init__(
        self,
        timeouts: Timeouts,
        current_call: Callable[[], Any],
        on_timeout: Callable[[StreamTimeoutError], None],
    ) -> None:
        self.timeouts = timeouts
        self._current_call = current_call
        self._on_timeout = on_timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started_at = time.monotonic()

    def start(self) -> Watchdog:
        self.started_at = time.monotonic()
        if self.timeouts.watched:
            self._thread = threading.Thread(target=self._watch, name="hookstream-watchdog", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    def check(self, now: float | None = None) -> StreamTimeoutError | None:
        """The limit passed at ``now`` (monotonic seconds), or None."""
        t = self.timeouts
        now = time.monotonic() if now is None else now
        if t.run is not None and now - self.started_at > t.run:
            return StreamTimeoutError("run", t.run)
        call = self._current_call()
        if call is None:
            return None
        sent = call.sent_at
        if sent is None:
            return None
        if t.step is not None and now - sent > t.step:
            return StreamTimeoutError("step", t.step)
        last = call.last_event_at
        if last is None:
            first = t.first_event if t.first_event is not None else t.idle
            if first is not None and now - sent > first:
                return StreamTimeoutError("first_event" if t.first_event is not None else "idle", first)
        elif t.idle is not None and now - last > t.idle:
            return StreamTimeoutError("idle", t.idle)
        return None

    def _watch(self) -> None:
        interval = self.timeouts.poll_interval()
        while not self._stop.wait(interval):
            err = self.check()
            if err is not None:
                self._on_timeout(err)
                return
