"""AG-UI threads kept in a conversation store: merging a request's messages into the stored history by
message id, and saving what each run adds, so any worker process can serve any turn.

Merging (:func:`merge`): a stored message and an incoming one are the same message when they share the
AG-UI message ``id``, a tool call id (an assistant message), or a tool call id answered (a tool result;
results already stored are dropped from an incoming ``tool`` message). The model receives the stored
history followed by the incoming messages not already in it, so a client that POSTs the whole history
and one that POSTs only its new message (same ``threadId``) give the same request.

Ids of what a run produces come from its AG-UI events, the way ``@ag-ui/client`` builds its messages:
an assistant message takes the first id its step announced (``TEXT_MESSAGE_START.messageId``,
``TOOL_CALL_START.parentMessageId`` or else that call's id, ``REASONING_START.messageId``), a tool
message the ``TOOL_CALL_RESULT`` ``messageId`` of its first result. A client echoing those messages
back is therefore recognised.

What is saved, and when: the request's new messages when the run starts; the run's own messages
(assistant turns, tool results) when it ends, before its ``RUN_FINISHED`` or ``RUN_ERROR`` event is
sent (a client may POST its next turn as soon as it reads that event; when that save fails, the run
ends with ``RUN_ERROR`` code ``store_unavailable`` instead of ``RUN_FINISHED``), however it ends: finished,
interrupted (the assistant
message with the pending tool calls is saved, so a ``resume`` POST on another worker finds it),
cancelled or failed (the history the engine kept). A worker that dies mid-run loses that run's
steps, not the thread.

Thread safety: a :class:`ThreadKeeper` holds only its store (which must be thread-safe); each request
gets its own :class:`StoredRun`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
from hookstream import Message
from hookstream.errors import StoreUnavailableError
from hookstream.events import (
    BaseEvent,
    ReasoningStart,
    RunError,
    RunFinished,
    StepStarted,
    TextMessageStart,
    ToolCallResult,
    ToolCallStart,
)
from hookstream.stores import ConversationStore

__all__ = ["StoreUnavailableError", "StoredRun", "ThreadKeeper", "agui_ids", "assign_ids", "coalesce", "merge",
           "message_keys", "stored_tool_calls"]

log = logging.getLogger("hookstream.agui")


def message_keys(message: Message) -> set[str]:
    """What identifies ``message`` in a thread: its id, its tool call ids, the call ids it answers."""
    keys = {f"call:{c.id}" for c in message.tool_calls}
    keys.update(f"result:{r.tool_call_id}" for r in message.tool_results)
    if message.id is not None:
        keys.add(f"id:{message.id}")
    return keys


def merge(history: Sequence[Message], incoming: Sequence[Message], fresh_ids: bool = True) -> list[Message]:
    """The messages of ``incoming`` that ``history`` does not hold, in order (see the module docstring).
    With ``fresh_ids``, an incoming message without an id gets a fresh one (it cannot be recognised
    later)."""
    seen: set[str] = set()
    for m in history:
        seen |= message_keys(m)
    new: list[Message] = []
    for m in incoming:
        if m.role == "tool":
            parts = [p for p in m.parts if f"result:{getattr(p, 'tool_call_id', '')}" not in seen]
            if not parts:
                continue
            m = attrs.evolve(m, parts=parts, id=m.id)
        elif message_keys(m) & seen:
            continue
        if m.id is None and fresh_ids:
            m = attrs.evolve(m, id=f"msg-{uuid.uuid4().hex}")
        seen |= message_keys(m)
        new.append(m)
    return new


def agui_ids(raw: Sequence[Any], messages: list[Message]) -> None:
    """Give each of ``messages`` (:func:`~hookstream.server.messages_from_agui` of ``raw``) the ``id`` of the
    AG-UI message it came from: roles are matched in order (UI-only roles skipped; consecutive ``tool``
    messages, which became one message, give it the first one's id)."""
    family = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
    j = 0
    for m in messages:
        while j < len(raw) and (not isinstance(raw[j], dict) or family.get(raw[j].get("role")) != m.role):
            j += 1
        if j >= len(raw):
            return
        ident = raw[j].get("id")
        if isinstance(ident, str) and ident and m.id is None:
            m.id = ident
        j += 1
        if m.role == "tool":
            while j < len(raw) and isinstance(raw[j], dict) and raw[j].get("role") == "tool":
                j += 1


@attrs.define(slots=True)
class _StepIds:
    ident: str | None = None  # the assistant message id the step's events announced
    calls: set[str] = attrs.Factory(set)


def assign_ids(produced: Sequence[Message], events: Sequence[BaseEvent]) -> None:
    """Give the messages a run produced the ids its events announced (see the module docstring); a
    message the events do not explain gets a fresh id."""
    steps: list[_StepIds] = []
    in_replay = False
    result_ids: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, StepStarted):
            in_replay = ev.step_name == "resume"
            steps.append(_StepIds())
        elif in_replay or not steps:
            continue
        elif isinstance(ev, TextMessageStart):
            steps[-1].ident = steps[-1].ident or ev.message_id
        elif isinstance(ev, ToolCallStart):
            steps[-1].ident = steps[-1].ident or ev.parent_message_id or ev.tool_call_id
            steps[-1].calls.add(ev.tool_call_id)
        elif isinstance(ev, ReasoningStart):
            steps[-1].ident = steps[-1].ident or ev.message_id
        elif isinstance(ev, ToolCallResult):
            result_ids.setdefault(ev.tool_call_id, ev.message_id)
    pending = [s for s in steps if s.ident is not None]
    for m in produced:
        if m.id is not None:
            continue
        if m.role == "assistant":
            calls = {c.id for c in m.tool_calls}
            # The step that streamed this message: the one with its tool calls, else the next one
            # that streamed anything (a step that streamed nothing left no message).
            at = next((i for i, s in enumerate(pending) if calls and calls <= s.calls), 0 if pending else None)
            if at is not None:
                m.id = pending[at].ident
                del pending[: at + 1]
        elif m.role == "tool" and m.tool_results:
            m.id = result_ids.get(m.tool_results[0].tool_call_id)
        if m.id is None:
            m.id = f"msg-{uuid.uuid4().hex}"


_ID_EVENTS = (StepStarted, TextMessageStart, ToolCallStart, ReasoningStart, ToolCallResult, RunFinished, RunError)


def coalesce(history: Sequence[Message]) -> list[Message]:
    """``history`` with consecutive ``tool`` messages joined into one (id of the first), the form the
    engine and the provider adapters expect; the store keeps them as saved."""
    out: list[Message] = []
    for m in history:
        if m.role == "tool" and out and out[-1].role == "tool":
            out[-1] = attrs.evolve(out[-1], parts=[*out[-1].parts, *m.parts], id=out[-1].id)
        else:
            out.append(m)
    return out


def stored_tool_calls(history: Sequence[Message]) -> list[dict[str, Any]]:
    """The stored tool calls as AG-UI ``toolCalls`` entries, so a ``tool`` message that answers one can
    be read without its assistant message in the request."""
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_raw or "{}"}}
            for m in history for c in m.tool_calls]


class StoredRun:
    """A run's event stream that saves the run's messages in the store when it ends."""

    def __init__(self, store: ConversationStore, thread_id: str, sent: Sequence[Message], stream: Any) -> None:
        self._store = store
        self._thread_id = thread_id
        self._sent = list(sent)
        self._stream = stream
        self._events: list[BaseEvent] = []
        self._saved = False

    def __iter__(self) -> Iterator[BaseEvent]:
        source = iter(self._stream)
        try:
            for ev in source:
                if isinstance(ev, _ID_EVENTS):  # only what assign_ids reads: content deltas are not kept
                    self._events.append(ev)
                if isinstance(ev, (RunFinished, RunError)):
                    # Saved before the client sees the run end: its next POST, on whichever worker,
                    # must find this run's messages.
                    failed = self._save()
                    if failed is not None and isinstance(ev, RunFinished):
                        # Never a finished run (or one waiting for an answer) the thread does not hold:
                        # an approval would then find no pending call and the model would be asked again.
                        ev = RunError(f"conversation store unavailable: {type(failed).__name__}: the run's "
                                      "messages were not saved", code=StoreUnavailableError.code, usage=ev.usage)
                yield ev
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()  # a disconnected client: the engine ends the run (cancelled) before we read it
            self._save()

    def cancel(self) -> None:
        self._stream.cancel()

    def add_message(self, content: Any, **limits: Any) -> bool:
        """Steer the run (:meth:`hookstream.ChatStream.add_message`, ``limits`` its keywords); ``False``
        when its stream takes no message. The message is saved with the run's others when it ends."""
        add = getattr(self._stream, "add_message", None)
        return bool(add(content, **limits)) if add is not None else False

    def _save(self) -> Exception | None:
        """Save the run's messages (once); what the store raised, else ``None``."""
        if self._saved:
            return None
        self._saved = True
        result = getattr(self._stream, "result", None)
        if result is None:
            log.warning("run stream %s has no result(); thread %s keeps only its inputs",
                        type(self._stream).__name__, self._thread_id)
            return None
        # The engine keeps the message objects it was given; anything else is the run's own.
        sent = {id(m) for m in self._sent}
        try:
            # A resumed run rebuilds the tool message after the assistant with the results it already
            # had: only results the thread does not hold yet are new.
            produced = merge(self._sent, [m for m in result().messages if id(m) not in sent], fresh_ids=False)
            assign_ids(produced, self._events)
            self._store.save(self._thread_id, produced)
        except Exception as exc:
            log.exception("saving thread %s failed", self._thread_id)
            return exc
        return None


@attrs.define(slots=True)
class ThreadKeeper:
    """Keeps AG-UI threads in ``store`` (see the module docstring)."""

    store: ConversationStore

    def history(self, thread_id: str) -> list[Message]:
        """The stored conversation of ``thread_id`` in the form the model receives (:func:`coalesce`).
        Raises :class:`StoreUnavailableError`."""
        try:
            return coalesce(self.store.load(thread_id))
        except Exception as exc:
            raise StoreUnavailableError(f"conversation store unavailable: {type(exc).__name__}") from exc

    def wrap(self, thread_id: str, sent: Sequence[Message], new: Sequence[Message], stream: Any) -> StoredRun:
        """Save ``new`` (the request's messages the store does not hold yet) and return ``stream`` (of a
        run given the conversation ``sent``) saving what the run adds when it ends. Raises
        :class:`StoreUnavailableError`."""
        if new:
            try:
                self.store.save(thread_id, new)
            except Exception as exc:
                raise StoreUnavailableError(f"conversation store unavailable: {type(exc).__name__}") from exc
        return StoredRun(self.store, thread_id, sent, stream)
