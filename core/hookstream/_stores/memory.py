"""Conversation memory: the store protocol the engine saves each step into, and an in-memory store.

The engine calls :meth:`ConversationStore.load` once when a run starts (the stored history goes before
the new input) and :meth:`ConversationStore.save` with the messages that are new since the last save.
A step's assistant message and its tool results are saved together, before the next step's request
is sent, never after. An assistant message whose tool calls wait for approval or a client is saved
with the interrupted run, so a later run resumes from the thread alone; the engine never sends such a
history unpaired (it resumes the calls, or answers calls followed by newer messages with an error
result: ``hookstream._agentloop.engine``).

A store that a server shares between users also keeps each thread's owner (:class:`OwnedStore`,
:meth:`~OwnedStore.claim`): the principal that created it, and which pending tool calls have been
answered (:meth:`~OwnedStore.claim_answers`), so one approval answered by several requests at once runs
once. The built-in stores all do.

Thread safety: the engine calls a store from the thread that iterates the run; a store shared by
several runs must be thread-safe (:class:`InMemoryStore` is).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from .._messages import Message

__all__ = ["ConversationStore", "InMemoryStore", "OwnedStore", "ThreadInfo", "thread_title"]


@runtime_checkable
class ConversationStore(Protocol):
    """Where a conversation (``thread_id``) lives between runs."""

    def load(self, thread_id: str) -> list[Message]:
        """The stored messages of ``thread_id`` in order (empty when unknown)."""
        ...

    # The built-in stores also have ``list_threads(limit, before) -> list[ThreadInfo]`` and
    # ``delete(thread_id) -> bool``: optional for a store of your own (the CLI's ``logs`` needs them).

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append ``messages`` to ``thread_id``'s history; a message whose ``id`` the thread already
        holds is skipped (saving is idempotent by message id; messages without an id always append)."""
        ...


@attrs.frozen(slots=True)
class ThreadInfo:
    """One stored conversation, as :meth:`InMemoryStore.list_threads` (and the SQLite and PostgreSQL
    stores) list it: ``id``; ``title`` (the first user message's text, at most 80 characters, or
    ``""``); ``created`` and ``updated`` (Unix seconds of its first and last saved message; ``None``
    for messages saved before a store kept times); ``message_count``."""

    id: str
    title: str
    created: float | None
    updated: float | None
    message_count: int


def thread_title(messages: Sequence[Message]) -> str:
    """A conversation's title: its first user message's text, on one line, at most 80 characters."""
    for m in messages:
        if m.role == "user":
            text = " ".join(m.text.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return ""


@runtime_checkable
class OwnedStore(ConversationStore, Protocol):
    """A conversation store that knows who owns each thread (what ``hookstream serve`` with
    authentication needs; ``docs/agui-server.md``, "What a principal can see"). A store may also offer
    ``may_claim(thread_id, owner) -> bool``, whether :meth:`claim` would succeed, reading only (the
    built-in stores do): the server then claims a thread only once its request passed every check.

    A store should also offer ``claim_answers(thread_id, call_ids) -> bool`` (the built-in stores do;
    :meth:`InMemoryStore.claim_answers`): the server claims the pending calls a request answers (an
    approval, a denial, a frontend tool's result, or calls a new message leaves behind) before its run
    starts, and answers ``409`` when another request claimed one first. Without it the server keeps the
    claims in its process's memory: then one pending call answered on two worker processes at once may
    run twice (docs/agui-server.md, "Deployment")."""

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
        self._times: dict[str, tuple[float, float]] = {}  # thread -> (first save, last save), Unix seconds
        self._answered: dict[str, set[str]] = {}  # thread -> tool call ids whose answer was claimed
        self._lock = threading.Lock()

    def list_threads(self, limit: int = 50, before: float | None = None) -> list[ThreadInfo]:
        """The ``limit`` most recently updated threads, newest first; with ``before`` (Unix seconds),
        only threads last updated before it (the next page: pass the last one's ``updated``)."""
        with self._lock:
            rows = [ThreadInfo(t, thread_title(ms), *self._times.get(t, (0.0, 0.0)), len(ms))
                    for t, ms in self._threads.items()]
        rows = [r for r in rows if before is None or (r.updated or 0.0) < before]
        rows.sort(key=lambda r: r.updated or 0.0, reverse=True)
        return rows[:limit]

    def delete(self, thread_id: str) -> bool:
        """Forget ``thread_id`` (its messages and owner); whether it existed."""
        with self._lock:
            self._ids.pop(thread_id, None)
            self._owners.pop(thread_id, None)
            self._times.pop(thread_id, None)
            self._answered.pop(thread_id, None)
            return self._threads.pop(thread_id, None) is not None

    def claim_answers(self, thread_id: str, call_ids: Sequence[str]) -> bool:
        """Mark the pending tool calls ``call_ids`` of ``thread_id`` answered, all or none, atomically:
        ``True`` when none was claimed before (now all are), ``False`` when one was (nothing is marked).
        Of several requests answering one pending call at once exactly one gets ``True``: the one whose
        run may execute it. A claim is kept until the thread is deleted."""
        with self._lock:
            answered = self._answered.setdefault(thread_id, set())
            if answered.intersection(call_ids):
                return False
            answered.update(call_ids)
            return True

    def claim(self, thread_id: str, owner: str | None) -> bool:
        with self._lock:
            if thread_id not in self._owners:
                # A thread saved before it was claimed (by an engine run, not the server) has no owner.
                self._owners[thread_id] = None if thread_id in self._threads else owner
            return self._owners[thread_id] == owner

    def may_claim(self, thread_id: str, owner: str | None) -> bool:
        """Whether :meth:`claim` would give ``owner`` the thread now, without claiming it (what a server
        checks before it reads the thread, so a request it then refuses claims nothing)."""
        with self._lock:
            if thread_id in self._owners:
                return self._owners[thread_id] == owner
            return owner is None or thread_id not in self._threads

    def load(self, thread_id: str) -> list[Message]:
        with self._lock:
            return list(self._threads.get(thread_id, ()))

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        with self._lock:
            now = time.time()
            first = self._times.get(thread_id, (now, now))[0]
            self._times[thread_id] = (first, now)
            history = self._threads.setdefault(thread_id, [])
            seen = self._ids.setdefault(thread_id, set())
            for m in messages:
                if m.id is None or m.id not in seen:
                    history.append(m)
                if m.id is not None:
                    seen.add(m.id)
