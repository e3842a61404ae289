"""hookstream-toolsearch: tool search for runs with many tools (``docs/tool-search.md``).

:class:`ToolSearch` is the run plugin (registered as ``tool-search``: ``chat(..., plugins=["tool-search"])``,
``hookstream chat ... --tool-search``); :class:`ToolIndex` the BM25 ranking it searches with.

Names load on first use (PEP 562): every ``hookstream`` process loads the entry point
(``hookstream_toolsearch.plugin``), which imports this package, and most never search tools (the ranking
imports numpy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .search import DEFAULT_THRESHOLD, STATE_KEY, ToolIndex, ToolSearch, words

__all__ = ["DEFAULT_THRESHOLD", "STATE_KEY", "ToolIndex", "ToolSearch", "words"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {name: "hookstream_toolsearch.search" for name in __all__})
