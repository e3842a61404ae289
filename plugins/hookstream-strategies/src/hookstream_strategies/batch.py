"""Batch strategy: publish every N deltas.

Thread safety: keeps a counter; one instance per processor.
"""

from __future__ import annotations

__all__ = ["BatchStrategy"]


class BatchStrategy:
    """Publish on every ``size``-th delta of a segment (held text is still published at the end of
    the segment by the processor). Raises :class:`ValueError` when ``size`` < 1."""

    __slots__ = ("count", "size")

    def __init__(self, size: int = 5) -> None:
        if size < 1:
            raise ValueError(f"batch size must be at least 1, not {size}")
        self.size = size
        self.count = 0

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        self.count += 1
        if self.count >= self.size:
            self.count = 0
            return True
        return False

    def reset(self) -> None:
        self.count = 0
