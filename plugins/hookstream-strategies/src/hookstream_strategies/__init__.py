"""Chunk strategies for hookstream's stream processor, beyond the core's Immediate.

Registered by name through the ``hookstream`` entry-point group (``hookstream_strategies.plugin``):
``punctuation``, ``batch``, ``word-boundary``, ``debounce``, ``throttle``, ``composite``. Each class
follows :class:`hookstream.strategies.ChunkStrategy` (``should_emit(chunk, accumulated)``,
``reset()``); the timer-driven ones also take ``attach(flush)``.
"""

from __future__ import annotations

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
