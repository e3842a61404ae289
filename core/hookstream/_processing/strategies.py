"""Chunk strategies decide when the stream processor publishes accumulated text.

A strategy is any object with ``should_emit(chunk, accumulated) -> bool`` and ``reset() -> None``
(:class:`ChunkStrategy`). The core ships :class:`ImmediateStrategy` (publish every delta), the default;
the ``hookstream-strategies`` distribution adds punctuation, batch, word-boundary, debounce, throttle
and composite strategies. The protocol is TanStack AI's ``ChunkStrategy`` (``shouldEmit(chunk,
accumulated)``, ``reset()``).

Linear cost. ``accumulated`` is the full text of the current segment, as in TanStack. Building that
string afresh per delta would be quadratic, so the processor grows one ``str`` with ``+=`` while it
holds the only reference (CPython then resizes the string in place: amortised O(len(chunk)) per delta,
checked by ``benchmarks/bench_processor.py``), and passes that same object. Reading it is free; a
strategy must not keep a reference to ``accumulated`` after ``should_emit`` returns (that forces a copy
on the next delta). Most strategies only look at ``chunk``.

Timer-driven strategies (debounce, a throttle's trailing edge) may also define ``attach(flush)``: the
processor calls it once with a thread-safe ``flush()`` that publishes the pending text; the strategy
may call it from its own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["ChunkStrategy", "ImmediateStrategy", "TimedChunkStrategy"]


@runtime_checkable
class ChunkStrategy(Protocol):
    """When to publish text.

    ``should_emit(chunk, accumulated)``: ``chunk`` is the newest text delta, ``accumulated`` the text
    of the current segment so far, ``chunk`` included (do not keep a reference to it). Return True to
    publish now; text held back is published at the next True, before any non-text event, at the end
    of the segment and at the end of the stream, so no strategy can lose text.

    ``reset()``: called when a text segment ends (``TEXT_MESSAGE_START``/``END``, a tool part, the
    end of the stream); clear counters and cancel timers.
    """

    def should_emit(self, chunk: str, accumulated: str) -> bool: ...

    def reset(self) -> None: ...


@runtime_checkable
class TimedChunkStrategy(ChunkStrategy, Protocol):
    """A strategy that publishes from a timer: ``attach(flush)`` receives the processor's thread-safe
    flush function, which it may call from any thread."""

    def attach(self, flush: Callable[[], None]) -> None: ...


class ImmediateStrategy:
    """Publish every delta at once (the default)."""

    __slots__ = ()

    def should_emit(self, chunk: str, accumulated: str) -> bool:
        return True

    def reset(self) -> None:
        pass
