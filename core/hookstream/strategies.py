"""Chunk strategies decide when the stream processor publishes accumulated text.

A strategy is any object with ``should_emit(chunk, accumulated) -> bool`` and ``reset() -> None``
(:class:`ChunkStrategy`). The core ships :class:`ImmediateStrategy` (publish every delta), the default;
the ``hookstream-strategies`` distribution adds punctuation, batch, word-boundary, debounce, throttle
and composite strategies.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ChunkStrategy", "ImmediateStrategy"]


@runtime_checkable
class ChunkStrategy(Protocol):
    """When to publish text. ``chunk`` is the newest delta; ``accumulated`` the text of the current
    segment so far (including ``chunk``). Return True to publish now."""

    def should_emit(self, chunk: str, accumulated: str) -> bool: ...

    def reset(self) -> None: ...


class ImmediateStrategy:
    """Publish every delta at once (the default)."""

    __slots__ = ()

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        return True

    def reset(self) -> None:
        pass
