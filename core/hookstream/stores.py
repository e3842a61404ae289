"""Conversation stores: where ``chat(..., memory=store, thread_id=...)`` and the server
(``make_app(store=...)``) keep each thread's messages between runs, and :class:`OwnedStore` each thread's
owner; :class:`SQLDatabase` is a SQL store's database for an application's own tables (the server keeps its
run event log there).

:class:`ConversationStore` is the protocol; :class:`InMemoryStore` (one process), :class:`SQLiteStore` and
:class:`PostgresStore` implement it, and :func:`open_store` opens one from a URL (``memory:``,
``sqlite:///path``, ``postgresql://...``). :class:`ThreadInfo` describes a stored thread; :class:`History`
says how much of a thread is sent to the model (all, the last N messages, a token budget, a summary).
:func:`dumps_message` and :func:`loads_message` are the stores' JSON form of one message.

Names load on first use (PEP 562), so ``import hookstream.stores`` loads no database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._stores.codec import dumps_message, loads_message
    from ._stores.history import History
    from ._stores.memory import ConversationStore, InMemoryStore, OwnedStore, ThreadInfo
    from ._stores.sql import PostgresStore, SQLDatabase, SQLiteStore, open_store

_SOURCES = {
    "hookstream._stores.codec": ("dumps_message", "loads_message"),
    "hookstream._stores.history": ("History",),
    "hookstream._stores.memory": ("ConversationStore", "InMemoryStore", "OwnedStore", "ThreadInfo"),
    "hookstream._stores.sql": ("PostgresStore", "SQLDatabase", "SQLiteStore", "open_store"),
}

__getattr__, __dir__ = lazy_attributes(__name__, {name: module for module, names in _SOURCES.items() for name in names})

__all__ = [
    "ConversationStore",
    "History",
    "InMemoryStore",
    "OwnedStore",
    "PostgresStore",
    "SQLDatabase",
    "SQLiteStore",
    "ThreadInfo",
    "dumps_message",
    "loads_message",
    "open_store",
]
