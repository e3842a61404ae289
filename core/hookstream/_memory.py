"""Conversation memory: the store protocol the engine saves each step into, and an in-memory store.

The engine calls :meth:`ConversationStore.load` once when a run starts (the stored history goes before
the new input) and :meth:`ConversationStore.save` with the messages that are new since the last save.
A step's assistant message and its tool results are saved together, before the next step's request
is sent, never after; an assistant message whose tool calls still wait for approval or a client is
saved only once the resumed run has their results, so a stored history is always paired.

Thread safety: the engine calls a store from the thread that iterates the run; a store shared by
several runs must be thread-safe (:class:`InMemoryStore` is).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._messages import Message

__all__ = ["ConversationStore", "InMemoryStore"]


@runtime_checkable
class ConversationStore(Protocol):
    """Where a conversation (``thread_id``) lives between runs."""

    def load(self, thread_id: str) -> list[Message]:
        """The stored messages of ``thread_id`` in order (empty when unknown)."""
        ...

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append ``messages`` to ``thread_id``'s history; a message whose ``id`` the thread already
        holds is skipped (saving is idempotent by message id; messages without an id always append)."""
        ...


class InMemoryStore:
    """A dict of message lists guarded by a lock; for tests and single-process apps."""

    def __init__(self) -> None:
        self._threads: dict[str, list[Message]] = {}
        self._ids: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def load(self, thread_id: str) -> list[Message]:
        with self._lock:
            return list(self._threads.get(thread_id, ()))

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        with self._lock:
            history = self._threads.setdefault(thread_id, [])
            seen = self._ids.setdefault(thread_id, set())
            for m in messages:
                if m.id is None or m.id not in seen:
                    history.append(m)
                if m.id is not None:
                    seen.add(m.id)
