"""The ``hookstream`` entry point of this distribution: registers the chunk strategies by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl

from .batch import BatchStrategy
from .composite import CompositeStrategy
from .text import PunctuationStrategy, WordBoundaryStrategy
from .timed import DebounceStrategy, ThrottleStrategy


@hookimpl
def hookstream_register_chunk_strategies(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("punctuation", PunctuationStrategy)
    register("batch", BatchStrategy)
    register("word-boundary", WordBoundaryStrategy)
    register("debounce", DebounceStrategy)
    register("throttle", ThrottleStrategy)
    register("composite", CompositeStrategy)
