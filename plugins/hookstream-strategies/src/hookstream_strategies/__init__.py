"""Chunk strategies for hookstream's stream processor, beyond the core's Immediate.

Registered by name through the ``hookstream`` entry-point group (``hookstream_strategies.plugin``):
``punctuation``, ``batch``, ``word-boundary``, ``debounce``, ``throttle``, ``composite``. Each class
follows :class:`hookstream.strategies.ChunkStrategy` (``should_emit(chunk, accumulated)``,
``reset()``); the timer-driven ones also take ``attach(flush)``.

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .batch import BatchStrategy
    from .composite import CompositeStrategy
    from .text import PunctuationStrategy, WordBoundaryStrategy
    from .timed import DebounceStrategy, ThrottleStrategy
    from .timers import ManualScheduler, Scheduler, ThreadScheduler

__all__ = [
    "BatchStrategy",
    "CompositeStrategy",
    "DebounceStrategy",
    "ManualScheduler",
    "PunctuationStrategy",
    "Scheduler",
    "ThreadScheduler",
    "ThrottleStrategy",
    "WordBoundaryStrategy",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "BatchStrategy": "hookstream_strategies.batch",
    "CompositeStrategy": "hookstream_strategies.composite",
    "PunctuationStrategy": "hookstream_strategies.text",
    "WordBoundaryStrategy": "hookstream_strategies.text",
    "DebounceStrategy": "hookstream_strategies.timed",
    "ThrottleStrategy": "hookstream_strategies.timed",
    **dict.fromkeys(("ManualScheduler", "Scheduler", "ThreadScheduler"), "hookstream_strategies.timers"),
})
