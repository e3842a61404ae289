"""Resumable runs: each SSE frame a run sends gets an ``id:`` and goes into the event log
(:mod:`hookstream._stores.runlog`), and a client that lost its connection reads the rest from there
(docs/agui-server.md, "Resuming a stream").

Frame ids are ``<runId>:<seq>``, ``seq`` counting the run's frames from 1 (SSE ``id`` field, HTML
Living Standard "Server-sent events"; a client sends the last one it read back as ``Last-Event-ID``).
:class:`Recorder` numbers and logs a live run's frames within the bounds of
:class:`~hookstream_server.limits.ServerLimits` (``event_log_events``, ``event_log_bytes``; past
either the run is marked truncated and the rest is not logged), and marks the run ended, expiring
``event_log_seconds`` later. :func:`tail` reads a logged run from a frame on: what is logged, then,
polling the log every :data:`POLL_SECONDS`, what the run appends until it ends, whichever worker
process runs it.

Keep-alive (``ServerLimits.ping_seconds``): a server learns that a client left only when a write to it
fails, and a quiet run (a long model call, a pending MCP elicitation) writes nothing. So a stream that
has said nothing for ``ping_seconds`` sends the SSE comment :data:`PING` (``: ping``, which SSE
clients ignore: HTML Living Standard, "Server-sent events", 9.2.6), and the response thread is freed
a few pings after its client left. :func:`tail` pings between its polls; a live run is produced by a
:class:`Pump` on a thread of its own (from a pool of reused daemon threads, :data:`POOL_IDLE_SECONDS`),
so that the response thread can ping while the run is quiet.

Thread safety: a :class:`Recorder` belongs to one response (its frames come from one thread at a
time); :func:`tail` is a generator for one response; a :class:`Pump` has one producer (its pool
thread) and one consumer (the response thread), and :meth:`Pump.detach` may be called from any thread.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from hookstream.errors import AGUIInputError

from .limits import ServerLimits
from .runlog import RunLog

__all__ = ["PING", "POLL_SECONDS", "POOL_IDLE_SECONDS", "Pump", "Recorder", "Released", "parse_last_event_id", "tail"]

log = logging.getLogger("hookstream.agui")

POLL_SECONDS = 0.05
"""Seconds between two reads of the log while a resumed stream waits for the run's next frames."""
PING = b": ping\n\n"
"""The SSE comment a quiet stream sends every ``ServerLimits.ping_seconds``."""
POOL_IDLE_SECONDS = 60.0
"""Seconds an idle thread of the pumps' pool waits for another run before it ends."""
LOGGED_WAIT_SECONDS = 30.0
"""Seconds a frame waits to be written to the log before it is sent anyway (``log_then_send``)."""
_MAX_QUEUED = 1 << 20  # bytes a pump holds for a slow client before the run waits for it
_SEQ = re.compile(r"[0-9]{1,12}")


def _id_line(run_id: str, seq: int) -> bytes:
    return b"id: " + run_id.encode() + b":" + str(seq).encode() + b"\n"


class Recorder:
    """Numbers a live run's frames (``id: <runId>:<seq>``) and appends them to ``log``.

    ``continuing``: the run goes on from what ``log`` holds under its ids (a run recovered after its
    process died, :meth:`hookstream_server.agui._App.run_detached`): the log entry is kept (opened only
    when absent), the run's frames that equal the logged ones, in order, are not logged again, and the
    first that differs (or follows them) is logged as the next ``seq``. A frame that differs from a
    logged one (the call in flight at the crash, run again, said something else): the logged part's
    open messages, tool calls and reasoning are ended first (per ``protocol``: AG-UI events or AI SDK UI
    message chunks, :data:`_GRAMMARS`), and the ids the run reuses from the logged part are renamed, so
    the log stays one valid run of its protocol.

    ``log_then_send``: :meth:`sent` waits until the frame about to be sent is written to the log (a SQL
    log's :meth:`~hookstream_server.runlog.SQLRunLog.wait_written`), so a client never holds a frame a
    crash kept out of the log."""

    __slots__ = ("_align", "_bytes", "_clock", "_ended", "_fix", "_grammar", "_limits", "_log", "_opened", "_run_id",
                 "_seq", "_thread_id", "_tickets", "log_then_send", "opened", "truncated")

    def __init__(self, log: RunLog, limits: ServerLimits, thread_id: str, run_id: str, owner: str | None,
                 protocol: str, clock: Callable[[], float] = time.time, *, continuing: bool = False,
                 log_then_send: bool = False) -> None:
        """``clock``: Unix seconds (the log's expiry times), for tests."""
        self._log, self._limits, self._clock = log, limits, clock
        self._thread_id, self._run_id = thread_id, run_id
        self._seq = self._bytes = 0
        self._ended = False
        self.truncated = False
        self._align: list[bytes] | None = None  # logged frames the run is expected to send again
        self._fix: _Divergence | None = None
        self._grammar = _GRAMMARS.get(protocol, _GRAMMARS["agui"])
        self._opened = _Open(self._grammar)  # what the run's frames sent again have left open
        self._tickets: collections.deque[int] = collections.deque()
        self.log_then_send = log_then_send and callable(getattr(log, "wait_written", None))
        # A run whose process dies is never marked ended: it expires once it could no longer be running.
        longest = (limits.max_run_seconds or 86_400.0) + (limits.detached_run_seconds or 0.0)
        expires_at = clock() + longest + limits.event_log_seconds
        got = log.read(thread_id, run_id, 0) if continuing else None
        if got is not None and got[0].owner == owner and got[0].protocol == protocol:
            info, frames = got
            self._align = [data for _, data in frames]
            self._bytes = sum(len(d) for d in self._align)
            self.truncated = info.truncated
            log.update(thread_id, run_id, ended=False, truncated=info.truncated, expires_at=expires_at)
            self.opened = True
        else:
            self.opened = got is None and log.start(thread_id, run_id, owner, protocol, expires_at)
        """``False`` when the log refused the run's ids (another principal's, or a run still going):
        the caller refuses the run; nothing is logged."""
        if not self.opened:
            self.truncated = self._ended = True

    def frame(self, data: bytes) -> bytes:
        """``data`` (one SSE frame) with its ``id:`` line, logged."""
        align = self._align
        if align is not None and self._seq >= len(align):
            align = self._align = None  # every logged frame came again: what follows is new
        if align is None:  # a live run, or past the logged frames
            fix = self._fix
            out = self._one(data if fix is None else fix.rename(data))
        elif data == align[self._seq]:
            self._seq += 1  # sent before the crash, and logged: not again
            self._opened.see(data)
            if self.log_then_send:
                self._tickets.append(0)
            return _id_line(self._run_id, self._seq) + data
        else:  # diverged: renamed from now on, nothing more to align
            fix = self._fix = _Divergence(self._grammar, align, self._opened.pending)
            self._align = None
            self._seq = len(align)
            out = b"".join(self._one(f) for f in [*fix.closing(), *map(fix.rename, [*fix.resent, data])])
        if self.log_then_send:
            self._tickets.append(self._log.ticket())  # type: ignore[attr-defined]
        return out

    def _one(self, data: bytes) -> bytes:
        self._seq += 1
        if self._fix is not None and self._grammar.number is not None:
            data = self._fix.numbered(data, self._seq - 1)
        if not self.truncated:
            self._bytes += len(data)
            if self._seq > self._limits.event_log_events or self._bytes > self._limits.event_log_bytes:
                self.truncated = True
                self._log.update(self._thread_id, self._run_id, ended=False, truncated=True,
                                 expires_at=self._clock() + self._limits.event_log_seconds)
            else:
                self._log.append(self._thread_id, self._run_id, self._seq, data)
        return _id_line(self._run_id, self._seq) + data

    def sent(self) -> None:
        """The oldest frame :meth:`frame` returned is about to be sent: with ``log_then_send``, wait until
        it is in the log (at most :data:`LOGGED_WAIT_SECONDS`; the run's thread goes on meanwhile, so the
        frames of every run that came in the while are written together)."""
        if not self.log_then_send:
            return
        try:
            ticket = self._tickets.popleft()
        except IndexError:
            return
        if ticket and not self._log.wait_written(ticket, LOGGED_WAIT_SECONDS):  # type: ignore[attr-defined]
            log.warning("run %s: a frame was not logged within %.0f s; sending it anyway", self._run_id,
                        LOGGED_WAIT_SECONDS)

    def end(self) -> None:
        """The run's response is done: no frame follows; the log expires ``event_log_seconds`` from now."""
        if self._ended:
            return
        self._ended = True
        self._log.update(self._thread_id, self._run_id, ended=True, truncated=self.truncated,
                         expires_at=self._clock() + self._limits.event_log_seconds)


def _sse(ev: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(ev, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


@attrs.frozen
class _Grammar:
    """What a protocol's frames open and end, for a continuing run that diverged from its log: the
    events that open something (their type -> the field naming it; ``None``: one at a time), the
    events that end it (their type -> the opening type), the event that ends an open one (made from
    its opening event), and the id fields renamed in the frames sent again. Optional: ``starts``, the
    path of the id an opening event starts when it is not its naming field; ``number``, a field
    numbering each frame from 0 (set to its frame number in the log less one from the divergence on:
    OpenAI's ``sequence_number``); ``index``, a
    field indexing what the run opens (shifted past the logged ones in the frames sent again);
    ``encode``, how an event is framed."""

    opens: dict[str, str | None]
    closes: dict[str, str]
    closing: Callable[[dict[str, Any]], dict[str, Any]]
    renamed: tuple[tuple[str, ...], ...]  # paths of id fields
    starts: tuple[str, ...] | None = None
    number: str | None = None
    index: str | None = None
    encode: Callable[[dict[str, Any]], bytes] = _sse

    def ident(self, ev: dict[str, Any]) -> tuple[str, str] | None:
        """``(opening type, id)`` of what ``ev`` opens or ends, else ``None``."""
        kind = str(ev.get("type"))
        opening = kind if kind in self.opens else self.closes.get(kind)
        if opening is None:
            return None
        field = self.opens[opening]
        return opening, "" if field is None else str(ev.get(field))


_AGUI_ENDS = {"TEXT_MESSAGE_START": "TEXT_MESSAGE_END", "TOOL_CALL_START": "TOOL_CALL_END",
              "REASONING_START": "REASONING_END", "REASONING_MESSAGE_START": "REASONING_MESSAGE_END",
              "STEP_STARTED": "STEP_FINISHED"}
_AGUI_FIELDS = {"TEXT_MESSAGE_START": "messageId", "TOOL_CALL_START": "toolCallId", "REASONING_START": "messageId",
                "REASONING_MESSAGE_START": "messageId", "STEP_STARTED": "stepName"}


def _agui_closing(ev: dict[str, Any]) -> dict[str, Any]:
    field = _AGUI_FIELDS[ev["type"]]
    return {"type": _AGUI_ENDS[ev["type"]], field: ev.get(field)}


_UI_ENDS = {"text-start": "text-end", "reasoning-start": "reasoning-end", "start-step": "finish-step"}


def _ui_closing(ev: dict[str, Any]) -> dict[str, Any]:
    if ev["type"] == "tool-input-start":  # the AI SDK's end of a call whose input never completed
        return {"type": "tool-input-error", "toolCallId": ev.get("toolCallId"), "toolName": ev.get("toolName"),
                "input": "", "errorText": "the call was cut off: its model call was sent again"}
    return {"type": _UI_ENDS[ev["type"]], **({"id": ev["id"]} if "id" in ev else {})}


def _responses_closing(ev: dict[str, Any]) -> dict[str, Any]:
    item = ev.get("item")
    return {"type": "response.output_item.done", "output_index": ev.get("output_index"),
            "item": {**(item if isinstance(item, dict) else {}), "status": "incomplete"}}


def _responses_frame(ev: dict[str, Any]) -> bytes:
    return f"event: {ev.get('type')}\n".encode() + _sse(ev)


_GRAMMARS = {
    "agui": _Grammar(dict(_AGUI_FIELDS), {end: start for start, end in _AGUI_ENDS.items()}, _agui_closing,
                     (("messageId",), ("toolCallId",), ("parentMessageId",))),
    # The AI SDK UI message stream (hookstream_server.ui_message_stream).
    "ui": _Grammar({"text-start": "id", "reasoning-start": "id", "tool-input-start": "toolCallId",
                    "start-step": None},
                   {**{end: start for start, end in _UI_ENDS.items()},
                    "tool-input-available": "tool-input-start", "tool-input-error": "tool-input-start"}, _ui_closing,
                   # A text part's hookstream message id names its step when a client sends it back.
                   (("id",), ("toolCallId",), ("providerMetadata", "hookstream", "messageId"))),
    # A background OpenAI response (hookstream_server.openai_compat): output items by output_index, each
    # event's sequence_number its frame's number less one (what starting_after counts: OpenAI's from 0).
    "responses": _Grammar({"response.output_item.added": "output_index"},
                          {"response.output_item.done": "response.output_item.added"}, _responses_closing,
                          (("item", "id"), ("item_id",)), starts=("item", "id"), number="sequence_number",
                          index="output_index", encode=_responses_frame),
}
"""Per protocol (the run event log's ``protocol``): what its frames open and end."""


def _event(frame: bytes) -> dict[str, Any] | None:
    """The event (or chunk) of an SSE frame (``data: {json}``), ``None`` for another frame."""
    data = b"".join(line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:"))
    try:
        ev = json.loads(data) if data else None
    except ValueError:
        return None
    return ev if isinstance(ev, dict) else None


class _Open:
    """What a run's frames left open (messages, tool calls, reasoning, steps: in the order opened, each
    by its opening event), and the frames since nothing was."""

    __slots__ = ("grammar", "opened", "pending")

    def __init__(self, grammar: _Grammar) -> None:
        self.grammar = grammar
        self.opened: dict[tuple[str, str], dict[str, Any]] = {}  # (opening type, id) -> the opening event
        self.pending: list[bytes] = []

    def see(self, frame: bytes) -> None:
        ev = _event(frame) or {}
        key = self.grammar.ident(ev)
        if key is not None:
            if key[0] == ev.get("type"):
                self.opened[key] = ev
            else:
                self.opened.pop(key, None)
        self.pending = [*self.pending, frame] if self.opened else []


class _Divergence:
    """A continuing run that sent something else than its log holds: ends what the logged frames left
    open, then sends the run's frames since it last had nothing open again (``resent``), renaming every
    message and tool call id they start that the log already started (``<id>-<n>``)."""

    def __init__(self, grammar: _Grammar, logged: list[bytes], resent: list[bytes]) -> None:
        self.grammar = grammar
        self.resent = resent
        self._logged = _Open(grammar)
        self._started: set[str] = set()
        self._base = 0  # past the logged frames' indexes (grammar.index)
        for frame in logged:
            self._logged.see(frame)
            ev = _event(frame) or {}
            key = grammar.ident(ev)
            if key is not None:
                self._started.add(key[1] if grammar.starts is None else str(_at(ev, grammar.starts)))
            at = ev.get(grammar.index) if grammar.index is not None else None
            if isinstance(at, int):
                self._base = max(self._base, at + 1)
        self._shift: int | None = None
        self._names: dict[str, str] = {}
        self._suffix = f"-{len(logged)}"

    def closing(self) -> list[bytes]:
        """The events that end what the logged frames left open, the last opened first."""
        return [self.grammar.encode(self.grammar.closing(ev)) for ev in reversed(self._logged.opened.values())]

    def numbered(self, frame: bytes, seq: int) -> bytes:
        """``frame`` with the grammar's numbering field set to ``seq`` (its number in the log less one)."""
        field = self.grammar.number
        ev = _event(frame) if field is not None else None
        if field is None or ev is None or ev.get(field) == seq:
            return frame
        return self.grammar.encode({**ev, field: seq})

    def rename(self, frame: bytes) -> bytes:
        ev = _event(frame)
        if ev is None:
            return frame
        grammar = self.grammar
        field = grammar.opens.get(str(ev.get("type")))
        starts = grammar.starts or (field,) if field is not None else None
        if starts is not None and starts in grammar.renamed:
            ident = str(_at(ev, starts))
            if ident in self._started:
                self._names.setdefault(ident, ident + self._suffix)
        out = ev
        for path in grammar.renamed:
            value = _at(ev, path)
            if isinstance(value, str) and value in self._names:
                out = _replaced(out, path, self._names[value])
        at = ev.get(grammar.index) if grammar.index is not None else None
        if isinstance(at, int):  # the logged part's items keep their indexes; the new ones follow them
            if self._shift is None:
                self._shift = max(0, self._base - at)
            if self._shift:
                out = {**out, str(grammar.index): at + self._shift}
        return frame if out is ev else grammar.encode(out)


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _replaced(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with ``value`` at ``path`` (which exists)."""
    head, *rest = path
    return {**doc, head: _replaced(doc[head], tuple(rest), value) if rest else value}


def parse_last_event_id(value: str | None, run_id: str) -> int:
    """The ``seq`` of a ``Last-Event-ID`` (``<runId>:<seq>``) of ``run_id``; 0 when ``value`` is empty
    or ``None`` (from the first frame). Raises :class:`AGUIInputError` for another run's id or another
    form."""
    if not value:
        return 0
    run, _, seq = value.rpartition(":")
    if run != run_id or not _SEQ.fullmatch(seq):  # ASCII digits only: str.isdigit takes "²", int() does not
        raise AGUIInputError(f"Last-Event-ID {value[:200]!r} is not '<runId>:<seq>' of run {run_id!r}")
    return int(seq)


def tail(log: RunLog, thread_id: str, run_id: str, after: int, ping_seconds: float | None = None,
         wait_seconds: float | None = None) -> Iterator[bytes]:
    """The run's frames after ``after`` with their ``id:`` lines, each once, in order, until the run has
    ended (or its log was truncated, or it expired, or a frame is missing: never a gap, or no frame
    came for ``wait_seconds``). :data:`PING` after every ``ping_seconds`` without a frame."""
    quiet = said = time.monotonic()  # since the last frame, since the last write
    while True:
        got = log.read(thread_id, run_id, after)
        if got is None:
            return
        info, frames = got
        for seq, data in frames:
            if seq != after + 1:
                return
            after = seq
            yield _id_line(run_id, seq) + data
        now = time.monotonic()
        if frames:
            quiet = said = now
            continue
        if info.ended or info.truncated or (wait_seconds is not None and now - quiet >= wait_seconds):
            return
        if ping_seconds is not None and now - said >= ping_seconds:
            said = now
            yield PING
        time.sleep(POLL_SECONDS)


class Released:
    """A WSGI response body (``body``'s bytes) that runs ``release`` once when the server closes it (a
    resumed stream's count, a run's hold), after closing ``body``. Thread safety: one server thread."""

    def __init__(self, body: Iterator[bytes], release: Callable[[], None]) -> None:
        self._body, self._release = body, release

    def __iter__(self) -> Iterator[bytes]:
        return self._body

    def close(self) -> None:
        release, self._release = self._release, lambda: None
        try:
            getattr(self._body, "close", lambda: None)()
        finally:
            release()


class Pump:
    """Produces a live run's frames (``source``) on a pool thread and hands them to the response thread:
    each ``next()`` returns its next frame, or :data:`PING` after
    ``ping_seconds`` without a frame (``None``: it waits), and ends when ``source`` has ended
    (re-raising what ``source`` raised). ``on_end`` runs on the pool thread once ``source`` is done,
    before the response sees its end. :meth:`detach` (the client left) drops what is queued and lets
    ``source`` run on unread (whoever cancels it). At most about 1 MiB waits for a slow client; then
    ``source`` waits for it."""

    def __init__(self, source: Iterator[bytes], ping_seconds: float | None, on_end: Callable[[], None]) -> None:
        self._source, self._ping, self._on_end = source, ping_seconds, on_end
        self._cond = threading.Condition()
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._done = self._detached = False
        self._error: BaseException | None = None
        # The run goes on with the context variables of the request, as when the request thread ran it.
        _POOL.submit(functools.partial(contextvars.copy_context().run, self._run))

    @property
    def done(self) -> bool:
        """Whether ``source`` has ended."""
        with self._cond:
            return self._done

    def _run(self) -> None:
        try:
            for frame in self._source:
                with self._cond:
                    while self._queued > _MAX_QUEUED and not self._detached:
                        self._cond.wait()
                    if not self._detached:
                        self._queue.append(frame)
                        self._queued += len(frame)
                        self._cond.notify_all()
        except BaseException as exc:  # handed to the response thread, which the server reports
            self._error = exc
        finally:
            try:
                self._on_end()
            finally:
                with self._cond:
                    self._done = True
                    self._cond.notify_all()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        with self._cond:
            while not self._queue and not self._done:
                if not self._cond.wait(self._ping):
                    return PING
            if self._queue:  # one frame a chunk, as the run yields them (written at once by the server)
                out = self._queue.popleft()
                self._queued -= len(out)
                self._cond.notify_all()
                return out
        if self._error is not None and not self._detached:
            raise self._error
        raise StopIteration

    def detach(self) -> bool:
        """No one reads on: drop what is queued; ``source`` runs on. Returns whether it had ended."""
        with self._cond:
            self._detached = True
            self._queue.clear()
            self._queued = 0
            self._cond.notify_all()
            return self._done


class _Pool:
    """Daemon threads reused from run to run (a thread's start waits for it to be scheduled: ~12 ms each
    with 64 runs starting at once on one GIL); one that waited :data:`POOL_IDLE_SECONDS` for work ends.
    Daemon threads: a run still going never holds the process's exit. A forked process starts afresh."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], object] | None]] = []
        self._pid = os.getpid()

    def submit(self, job: Callable[[], object]) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._idle = os.getpid(), []
            inbox = self._idle.pop() if self._idle else None
        if inbox is not None:
            inbox.put(job)
            return
        inbox = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(target=self._work, args=(inbox,), name="hookstream-run", daemon=True).start()

    def _work(self, inbox: queue.SimpleQueue[Callable[[], object] | None]) -> None:
        while True:
            try:
                job = inbox.get(timeout=POOL_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                job = inbox.get()  # taken for a job just now: it is on its way
            if job is None:
                return
            try:
                job()
            except BaseException:  # a job's own failure is its business: the thread serves the next
                log.exception("a run's pump failed")
            with self._lock:
                if self._pid == os.getpid():
                    self._idle.append(inbox)


_POOL = _Pool()
