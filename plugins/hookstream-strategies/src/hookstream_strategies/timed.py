"""Time-based strategies: debounce and throttle. These are where the processor becomes threaded.

Both publish from a timer through the ``flush`` the processor hands to ``attach(flush)``: the
processor's flush takes the processor's lock, so ``on_text_update`` and ``on_messages_change`` then
arrive on the timer thread. Each strategy guards its own fields with its own lock and never holds it
while calling ``flush`` (so a timer firing while the processor is busy cannot deadlock). A timer that
lost a race with a new delta or a ``reset`` sees a stale token and does nothing.

Times are in milliseconds in the constructors; the scheduler (:mod:`hookstream_strategies.timers`)
works in seconds. Pass a :class:`~hookstream_strategies.timers.ManualScheduler` to test with a
controllable clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .timers import Cancellable, Scheduler, ThreadScheduler

__all__ = ["DebounceStrategy", "ThrottleStrategy"]


class _Timed:
    def __init__(self, ms: float, scheduler: Scheduler | None) -> None:
        if ms <= 0:
            raise ValueError(f"interval must be positive milliseconds, not {ms}")
        self.interval = ms / 1000.0
        self.scheduler: Scheduler = scheduler if scheduler is not None else ThreadScheduler()
        self._lock = threading.Lock()
        self._flush: Callable[[], None] | None = None
        self._handle: Cancellable | None = None
        self._token: object | None = None

    def attach(self, flush: Callable[[], None]) -> None:
        """Receive the processor's thread-safe flush; without it, held text waits for the segment end."""
        self._flush = flush

    def _arm(self, delay: float) -> None:
        # Caller holds self._lock.
        token = self._token = object()
        self._handle = self.scheduler.call_later(delay, lambda: self._fire(token))

    def _disarm(self) -> None:
        # Caller holds self._lock.
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._token = None

    def _fire(self, token: object) -> None:
        with self._lock:
            if token is not self._token:
                return
            if not self._due():
                return
            self._handle = None
            self._token = None
            flush = self._flush
        if flush is not None:
            flush()

    def _due(self) -> bool:
        return True

    def reset(self) -> None:
        with self._lock:
            self._disarm()


class DebounceStrategy(_Timed):
    """Publish once no delta came for ``ms`` milliseconds (from the timer thread); never publishes on
    a delta itself. One timer per quiet period: it re-arms itself for the remaining time if deltas
    kept coming, instead of being rescheduled on every delta."""

    def __init__(self, ms: float = 50.0, scheduler: Scheduler | None = None) -> None:
        super().__init__(ms, scheduler)
        self._last = 0.0

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        with self._lock:
            self._last = self.scheduler.now()
            if self._token is None and self._flush is not None:
                self._arm(self.interval)
        return False

    def _due(self) -> bool:
        # Caller holds self._lock.
        wait = self._last + self.interval - self.scheduler.now()
        if wait > 1e-9:
            self._arm(wait)
            return False
        return True


class ThrottleStrategy(_Timed):
    """At most one publish per ``ms`` milliseconds: the first delta publishes at once, later ones
    within the interval are merged and published when the interval is over (a trailing flush from
    the timer thread), or earlier by the processor before any non-text event."""

    def __init__(self, ms: float = 100.0, scheduler: Scheduler | None = None) -> None:
        super().__init__(ms, scheduler)
        self._last: float | None = None

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        with self._lock:
            now = self.scheduler.now()
            if self._last is None or now - self._last >= self.interval:
                self._last = now
                self._disarm()
                return True
            if self._token is None and self._flush is not None:
                self._arm(self._last + self.interval - now)
            return False

    def _due(self) -> bool:
        # Caller holds self._lock.
        self._last = self.scheduler.now()
        return True

    def reset(self) -> None:
        with self._lock:
            self._disarm()
            self._last = None
