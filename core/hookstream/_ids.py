"""The one id scheme: ``{prefix}_{16 hex digits}`` (``msg_3f2a9c0d1e4b5a67``, ``run_...``, ``thread_...``).

64 random bits from :func:`uuid.uuid4` per id: collisions are negligible within a conversation or a
store, and the prefix says what an id names when it shows up in a log or an AG-UI event.

Thread safety: a pure function; call it from any thread.
"""

from __future__ import annotations

import uuid

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A fresh id such as ``msg_3f2a9c0d1e4b5a67`` (``prefix``, an underscore, 16 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"
