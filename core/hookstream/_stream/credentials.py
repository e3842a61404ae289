"""Credentials that expire: a bearer token fetched on first use and refreshed before it runs out.

Cloud providers authorise with short-lived tokens (Microsoft Entra ID access tokens for Azure
OpenAI, Google OAuth 2.0 access tokens for Vertex AI, about an hour each). A provider object lives
longer than that (a batch of ten thousand chats, a server), so the token is fetched lazily and again
whenever fewer than ``refresh_margin`` seconds are left, never per request.

Thread safety: one :class:`RefreshingToken` is shared by every thread a provider serves; a refresh
happens under a lock, once, while the other threads wait for it (they would all need the new token).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .._secrets import Secret

__all__ = ["RefreshingToken"]


class RefreshingToken:
    """A bearer token from ``fetch``, cached until ``refresh_margin`` seconds before it expires.

    ``fetch()`` returns ``(token, expires_at)``: the token text and its expiry as a Unix time in
    seconds (``None``: never expires). It is called on the first :meth:`get`, and again when the cached
    token is within ``refresh_margin`` seconds (default 300) of ``expires_at``. Whatever ``fetch``
    raises passes through :meth:`get` (nothing is cached then). ``clock`` returns the current Unix time
    in seconds (tests pass their own). The token never appears in a ``repr``.

    Raises :class:`TypeError` at construction when ``fetch`` is not callable or ``refresh_margin`` is
    not a number.
    """

    __slots__ = ("_clock", "_expires_at", "_fetch", "_lock", "_token", "fetches", "refresh_margin")

    def __init__(
        self,
        fetch: Callable[[], tuple[str, float | None]],
        *,
        refresh_margin: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not callable(fetch):
            raise TypeError(f"fetch must be callable, not {type(fetch).__name__}")
        if isinstance(refresh_margin, bool) or not isinstance(refresh_margin, (int, float)):
            raise TypeError(f"refresh_margin must be seconds (a number), not {type(refresh_margin).__name__}")
        self._fetch = fetch
        self._clock = clock
        self.refresh_margin = float(refresh_margin)
        self._token: Secret | None = None
        self._expires_at: float | None = None
        self._lock = threading.Lock()
        self.fetches = 0
        """How many times ``fetch`` was called (a token fetched once per hour, not per request)."""

    def get(self) -> Secret:
        """The current token as a :class:`~hookstream.plugin.Secret`, refreshed first when it is
        missing or about to expire."""
        with self._lock:
            if self._token is None or self._stale():
                token, expires_at = self._fetch()
                self.fetches += 1
                self._token = Secret(token)
                self._expires_at = expires_at
            return self._token

    def _stale(self) -> bool:
        return self._expires_at is not None and self._clock() >= self._expires_at - self.refresh_margin

    def redact(self, text: str) -> str:
        """``text`` with the current token masked as ``***``."""
        token = self._token
        return token.redact(text) if token is not None else text

    def __repr__(self) -> str:
        return f"RefreshingToken(expires_at={self._expires_at!r})"
