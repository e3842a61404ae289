"""A client-side rate limiter: requests per minute and tokens per minute, shared by many threads.

A sliding-window log, not a token bucket: every admitted request is kept as ``(time, tokens)`` for
``window`` seconds, and a new one is admitted only when the requests and tokens inside the last
``window`` seconds, plus its own, stay under ``rpm * window / 60`` and ``tpm * window / 60``. The
window is 10 seconds (longer when ``rpm`` is so low that 10 seconds would hold less than one request),
and its request cap is rounded down to a whole number, so the caps hold over *any* 10-second window
and therefore over any minute, without the burst at the start of each minute that a per-minute window
allows (OpenAI's "Rate limits" guide says limits may be quantized, enforced over shorter periods such
as 1,000 requests per second for 60,000 per minute).

Tokens are not known before a request is answered: :meth:`RateLimiter.acquire` takes an estimate
and returns a :class:`Permit` whose :meth:`~RateLimiter.settle` later replaces the estimate with the
real count (the entry keeps its time). An estimate at or above the real count keeps the token cap
exact; an under-estimate lets one window run over by the difference, which later admissions then
wait out. A request larger than a whole window's token share is admitted alone, when the window
holds nothing else (otherwise it could never run).

:meth:`RateLimiter.pause` is for HTTP 429: no request is admitted by any thread until the pause
ends (``Retry-After``, RFC 9110 section 10.2.3, as the server gave it).

Thread safety: every method may be called from any thread; waiting threads sleep on a condition
variable and are woken by :meth:`settle` and :meth:`pause`. The clock is injectable (tests drive
:meth:`try_acquire` with a fake clock instead of sleeping).
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs

__all__ = ["Limiter", "Permit", "RateLimiter"]

DEFAULT_WINDOW = 10.0


class Limiter(Protocol):
    """What a batch needs of a rate limiter: :class:`RateLimiter`, or a proxy to one in another process
    (``hookstream-ray`` keeps one in a Ray actor, so the caps hold across worker processes). Permits
    are opaque to the caller: whatever ``acquire`` returned is handed back to ``settle``."""

    rpm: float | None
    tpm: float | None

    def acquire(self, tokens: int = 0, *, cancelled: threading.Event | None = None) -> Any: ...

    def settle(self, permit: Any, tokens: int) -> None: ...

    def pause(self, seconds: float) -> None: ...


@attrs.define(slots=True, eq=False)
class Permit:
    """One admitted request: when (limiter clock, seconds) and how many tokens it counts for."""

    time: float
    tokens: int


class RateLimiter:
    """Keeps requests per minute (``rpm``) and tokens per minute (``tpm``) under their caps.

    ``None`` means no cap. ``window`` is the sliding window in seconds (default 10; raised to
    ``60 / rpm`` when that is longer, so a window admits at least one request); the requests a
    window admits are ``rpm * window / 60`` rounded down. ``margin`` (seconds, default 0) keeps each
    admitted request counted that much longer than the window: the provider counts a request when it
    arrives, and when the time from admission to arrival varies (another process, a network hop) a
    request admitted just as the window frees up can arrive inside the same provider-side window as
    one that was slow to arrive. ``clock`` returns seconds (default ``time.monotonic``). Raises
    :class:`ValueError` for a cap below 1, a window not above 0 or a negative margin.
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        window: float = DEFAULT_WINDOW,
        margin: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, cap in (("rpm", rpm), ("tpm", tpm)):
            if cap is not None and cap < 1:
                raise ValueError(f"{name} must be at least 1, got {cap}")
        if window <= 0:
            raise ValueError(f"window must be above 0 seconds, got {window}")
        if margin < 0:
            raise ValueError(f"margin must be at least 0 seconds, got {margin}")
        self.request_cap: int | None = None
        if rpm is not None:
            window = max(window, 60.0 / rpm)
            # Rounded down: a stretched window (10.2 s for 17 at 100 rpm) would let a minute hold
            # six windows' worth, over the per-minute cap.
            self.request_cap = max(1, math.floor(rpm * window / 60.0 + 1e-9))
        self.rpm = rpm
        self.tpm = tpm
        self.window = window
        self.margin = margin
        self._span = window + margin  # how long an entry stays in the log
        self.token_cap = None if tpm is None else tpm * window / 60.0
        self._clock = clock
        self._log: collections.deque[Permit] = collections.deque()
        self._tokens = 0  # sum of tokens in _log
        self._paused_until = float("-inf")
        self._cond = threading.Condition()
        self.pauses = 0
        """How many times :meth:`pause` was called (429 responses seen)."""

    def _expire(self, now: float) -> None:
        while self._log and self._log[0].time <= now - self._span:
            self._tokens -= self._log.popleft().tokens

    def try_acquire(self, tokens: int = 0) -> Permit | float:
        """Admit one request of ``tokens`` estimated tokens now: its :class:`Permit`, or the seconds
        to wait before asking again (never admits then)."""
        with self._cond:
            return self._try(max(0, tokens))

    def _try(self, tokens: int) -> Permit | float:
        now = self._clock()
        if now < self._paused_until:
            return self._paused_until - now
        self._expire(now)
        wait = 0.0
        if self.request_cap is not None and len(self._log) + 1 > self.request_cap:
            # The oldest entries must leave the window until one more request fits.
            k = len(self._log) + 1 - self.request_cap
            wait = self._log[k - 1].time + self._span - now
        if self.token_cap is not None and self._log and self._tokens + tokens > self.token_cap:
            excess, t = self._tokens + tokens - self.token_cap, now
            for p in self._log:
                excess -= p.tokens
                t = p.time
                if excess <= 0:
                    break
            wait = max(wait, t + self._span - now)
        if wait > 0:
            return wait
        permit = Permit(now, tokens)
        self._log.append(permit)
        self._tokens += tokens
        return permit

    def acquire(self, tokens: int = 0, *, cancelled: threading.Event | None = None) -> Permit | None:
        """Block until a request of ``tokens`` estimated tokens may be sent; its :class:`Permit`
        (``None`` when ``cancelled`` was set while waiting)."""
        with self._cond:
            while True:
                got = self._try(max(0, tokens))
                if isinstance(got, Permit):
                    return got
                if cancelled is not None and cancelled.is_set():
                    return None
                # Woken early by settle()/pause(); a short cap keeps ``cancelled`` responsive.
                self._cond.wait(min(got, 0.5))

    def settle(self, permit: Permit, tokens: int) -> None:
        """Replace ``permit``'s token estimate with the real count (0 for a refused request)."""
        with self._cond:
            tokens = max(0, tokens)
            if any(p is permit for p in self._log):
                self._tokens += tokens - permit.tokens
            permit.tokens = tokens
            self._cond.notify_all()

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` from now (a 429's ``Retry-After``); a longer pause already
        running is kept."""
        with self._cond:
            self.pauses += 1
            self._paused_until = max(self._paused_until, self._clock() + max(0.0, seconds))
            self._cond.notify_all()

    def usage(self) -> tuple[int, int]:
        """Requests and tokens inside the current window."""
        with self._cond:
            self._expire(self._clock())
            return len(self._log), self._tokens

    def __repr__(self) -> str:
        return f"RateLimiter(rpm={self.rpm}, tpm={self.tpm}, window={self.window})"
