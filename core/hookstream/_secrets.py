"""API keys as values that never show themselves, and the header names that carry them.

Every place that could print a key (a repr, an exception, a log line, a recording) goes through
:class:`Secret` or :data:`SECRET_HEADERS`.

Thread safety: immutable values; share freely.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SECRET_HEADERS", "Secret"]

# x-amz-security-token: the session token of temporary AWS credentials (SigV4), as secret as the key.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization",
                            "x-amz-security-token"})


class Secret:
    """An API key that never shows itself: ``repr``/``str`` give ``'***'``; :meth:`reveal` gives the key."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself, for the one place that needs it: the request's auth header or URL."""
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by ``***`` (servers echo a wrong key in
        their error text). Only the key itself is masked, not the same letters inside a longer word (a
        key ``fake`` leaves the host ``fake-model.invalid`` readable): an occurrence next to a letter,
        digit, ``_`` or ``-`` is part of another token. Keys shorter than 4 characters are left alone:
        masking them would mangle ordinary words and they protect nothing."""
        key = self._value
        if len(key) < 4 or key not in text:
            return text
        return re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(key)}(?![A-Za-z0-9_-])", "***", text)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")


_SECRET_HEADERS = SECRET_HEADERS
