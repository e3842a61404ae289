"""Clocks and timers for the time-based strategies: the real one (threads) and a manual one for tests.

A :class:`Scheduler` has ``now() -> float`` (seconds, monotonic) and ``call_later(delay_s, fn) ->
handle`` where ``handle.cancel()`` stops ``fn`` from running if it has not started.

Thread safety: :class:`ThreadScheduler` runs each ``fn`` on a timer thread (``threading.Timer``, one
per pending call; the strategies keep at most one pending call each). :class:`ManualScheduler` runs
them on the thread that calls :meth:`ManualScheduler.advance`; it is meant for one test thread.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Cancellable", "ManualScheduler", "Scheduler", "ThreadScheduler"]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now(self) -> float: ...

    def call_later(self, delay: float, fn: Callable[[], None]) -> Cancellable: ...


class ThreadScheduler:
    """``time.monotonic`` and daemon ``threading.Timer`` threads."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, fn: Callable[[], None]) -> Cancellable:
        timer = threading.Timer(max(delay, 0.0), fn)
        timer.daemon = True
        timer.start()
        return timer


class _ManualCall:
    __slots__ = ("cancelled", "fn", "when")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """A controllable clock: time moves only through :meth:`advance`, which runs the calls that fall
    due, in time order, on the calling thread."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = start
        self._heap: list[tuple[float, int, _ManualCall]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.time

    def call_later(self, delay: float, fn: Callable[[], None]) -> Cancellable:
        call = _ManualCall(self.time + max(delay, 0.0), fn)
        heapq.heappush(self._heap, (call.when, next(self._seq), call))
        return call

    @property
    def pending(self) -> int:
        """Calls scheduled and neither run nor cancelled."""
        return sum(1 for _, _, c in self._heap if not c.cancelled)

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``, running every call that falls due on the way."""
        end = self.time + seconds
        while self._heap and self._heap[0][0] <= end:
            when, _, call = heapq.heappop(self._heap)
            self.time = max(self.time, when)
            if not call.cancelled:
                call.fn()
        self.time = end
