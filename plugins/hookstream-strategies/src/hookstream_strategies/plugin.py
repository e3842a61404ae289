"""The ``hookstream`` entry point of this distribution: registers the chunk strategies by name, each
imported on first use (every hookstream process loads this entry point; few use a strategy)."""

from __future__ import annotations

from hookstream.plugin import ChunkStrategyRegistrar, hookimpl

# Registered name -> "module:class".
STRATEGIES = {
    "punctuation": "hookstream_strategies.text:PunctuationStrategy",
    "batch": "hookstream_strategies.batch:BatchStrategy",
    "word-boundary": "hookstream_strategies.text:WordBoundaryStrategy",
    "debounce": "hookstream_strategies.timed:DebounceStrategy",
    "throttle": "hookstream_strategies.timed:ThrottleStrategy",
    "composite": "hookstream_strategies.composite:CompositeStrategy",
}


@hookimpl
def hookstream_register_chunk_strategies(register: ChunkStrategyRegistrar) -> None:
    for name, ref in STRATEGIES.items():
        register(name, ref)
