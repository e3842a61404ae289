"""hookstream-cache: a response cache for hookstream runs, keyed on the canonical provider request and
stored in SQLite (``docs/cache.md``).

:class:`Cache` is the run plugin (registered as ``cache``: ``chat(..., plugins=["cache"])``,
``hookstream chat ... --cache``); :class:`ResponseStore` the SQLite file (:func:`default_path`: the user
cache directory); :func:`request_key` the key a call's response is filed under.

Names load on first use (PEP 562): every ``hookstream`` process loads the entry point
(``hookstream_cache.plugin``), which imports this package, and most never use the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .cache import Cache, request_key
    from .store import CacheStats, ResponseStore, StoredResponse, default_path, store_for

__all__ = ["Cache", "CacheStats", "ResponseStore", "StoredResponse", "default_path", "request_key", "store_for"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {
    "Cache": "hookstream_cache.cache",
    "request_key": "hookstream_cache.cache",
    **{name: "hookstream_cache.store" for name in ("CacheStats", "ResponseStore", "StoredResponse", "default_path",
                                                   "store_for")},
})
