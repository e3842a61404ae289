"""Conversation memory: the store protocol the engine saves each step into, and an in-memory store.

The engine calls :meth:`ConversationStore.load` once when a run starts (the stored history goes before
the new input) and :meth:`ConversationStore.save` with the messages that are new since the last save.
A step's assistant message and its tool results are saved together, before the next step's request
is sent, never after; an assistant message whose tool calls still wait for approval or a client is
saved only once the resumed run has their results, so a stored history is always paired.

A store that a server shares between users also keeps each thread's owner (:class:`OwnedStore`,
:meth:`~OwnedStore.claim`): the principal that created it. The built-in stores all do.

Thread safety: the engine calls a store from the thread that iterates the run; a store shared by
several runs must be thread-safe (:class:`InMemoryStore` is).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._messages import Message

__all__ = ["ConversationStore", "InMemoryStore", "OwnedStore"]


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


@runtime_checkable
class OwnedStore(ConversationStore, Protocol):
    """A conversation store that knows who owns each thread (what ``hookstream serve`` with
    authentication needs; ``docs/agui-server.md``, "What a principal can see")."""

    def claim(self, thread_id: str, owner: str | None) -> bool:
        """Whether ``owner`` (a principal id; ``None``: an unauthenticated server) may use
        ``thread_id``. A thread nobody holds yet becomes ``owner``'s, atomically: of two principals
        claiming a new thread at once, exactly one gets it. A thread stored before owners were kept
        (messages and no owner) has no owner and is open to ``None`` only."""
        ...


class InMemoryStore:
    """A dict of message lists guarded by a lock; for tests and single-process apps. Keeps owners
    (:class:`OwnedStore`)."""

    def __init__(self) -> None:
        self._threads: dict[str, list[Message]] = {}
        self._ids: dict[str, set[str]] = {}
        self._owners: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def claim(self, thread_id: str, owner: str | None) -> bool:
        with self._lock:
            if thread_id not in self._owners:
                # A thread saved before it was claimed (by an engine run, not the server) has no owner.
                self._owners[thread_id] = None if thread_id in self._threads else owner
            return self._owners[thread_id] == owner

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
