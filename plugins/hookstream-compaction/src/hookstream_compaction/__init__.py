"""hookstream-compaction: compaction during a run, sized to the model's context window
(``docs/compaction.md``).

:class:`Compaction` is the run plugin (registered as ``compaction``: ``chat(..., plugins=["compaction"])``,
``hookstream chat ... --compact``); before a request that would pass ``max_fraction`` of the window it
drops old tool results, summarises older turns (with a ``summary_model``), then slides a window, never
separating a tool call from its result, and reports each compaction as a ``CUSTOM`` event :data:`EVENT`
(:class:`CompactionReport`). :func:`estimate` is the default token counter; :func:`context_window_of`
reads the catalogue. Errors: :class:`ContextWindowUnknown`.

Names load on first use (PEP 562): every ``hookstream`` process loads the entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .compaction import EVENT, Compaction, CompactionReport, Tier, TokenCounter, context_window_of, estimate
    from .errors import CompactionError, ContextWindowUnknown

__all__ = ["EVENT", "Compaction", "CompactionError", "CompactionReport", "ContextWindowUnknown", "Tier",
           "TokenCounter", "context_window_of", "estimate"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {
    **{name: "hookstream_compaction.compaction" for name in ("EVENT", "Compaction", "CompactionReport", "Tier",
                                                             "TokenCounter", "context_window_of", "estimate")},
    **{name: "hookstream_compaction.errors" for name in ("CompactionError", "ContextWindowUnknown")},
})
