"""Composite strategy: publish when any child strategy says so.

Thread safety: as safe as its children; one instance per processor.
"""

from __future__ import annotations

from collections.abc import Callable

from hookstream import ChunkStrategy

__all__ = ["CompositeStrategy"]


def _build(child: ChunkStrategy | str) -> ChunkStrategy:
    if isinstance(child, str):
        from hookstream.plugin import resolve_strategy

        return resolve_strategy(child)
    return child


class CompositeStrategy:
    """Publish when any child says so. Every child sees every delta (no short-circuit), so counting
    children such as ``batch`` stay exact. Children are objects or registered names; by default
    ``punctuation`` or ``batch`` (every 5 deltas), i.e. at a clause end and at least every fifth delta.
    """

    __slots__ = ("children",)

    def __init__(self, *children: ChunkStrategy | str) -> None:
        if not children:
            from .batch import BatchStrategy
            from .text import PunctuationStrategy

            children = (PunctuationStrategy(), BatchStrategy(5))
        self.children: list[ChunkStrategy] = [_build(c) for c in children]

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        votes = [child.should_emit(chunk, accumulated) for child in self.children]
        return any(votes)

    def reset(self) -> None:
        for child in self.children:
            child.reset()

    def attach(self, flush: Callable[[], None]) -> None:
        """Pass the processor's flush to timer-driven children."""
        for child in self.children:
            attach = getattr(child, "attach", None)
            if callable(attach):
                attach(flush)
