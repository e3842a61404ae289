"""The ``durable`` run plugin: :class:`Durable` makes a run a DBOS workflow identified by its id.

What is exactly once and what is at least once (``docs/durable.md``):

* a **model call that completed** (its events ended with ``RUN_FINISHED`` and its raw body replays to
  ``RUN_FINISHED`` through the adapter, as the response cache requires) is journaled as a DBOS step
  before the engine goes on; run again under the same id, it is not sent: the stored raw body is parsed
  by the same adapter (``ModelCallContext.parse_body``), so the run gets the same events, text, tool
  calls and usage, and the same message ids (derived from the run id and the step, not made up by the
  adapter: a replay regenerates the very frames a served run logged);
* a **tool call that completed** (any result, an error result too) is journaled with its result and
  the events its tool streamed while it ran (``ToolContext.emit``, ``add_usage``: progress, a nested
  agent's run; as AG-UI JSON, up to ``Durable.max_tool_stream`` bytes); run again, the tool does not run:
  the stored events are streamed again, in order, and the stored result is used;
* the **call in flight** when the process died (sent but not journaled) runs again: at least once. A
  tool that must not run twice reads :func:`attempt` (``2`` when its start, but not its result, was
  journaled) and raises :class:`~hookstream_dbos.RerunRefused` instead;
* a **finished** id (its run ended with an answer) replays every step: nothing is sent, no tool runs.

A resumed run must ask for the same things in the same places (the same prompt, tools and model): a
model call whose request differs from the journaled one ends the run with ``RUN_ERROR``
``durable_diverged`` instead of mixing two conversations.

Thread safety: a :class:`Durable` names one run; its per-run values live in ``RunContext.state``, so the
object may be built once and passed to one run at a time. Tool-call hooks of one step run at once and
journal through the thread-safe :class:`~hookstream_dbos.journal.Journal`.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import attrs
from hookstream.events import BaseEvent, RunError, RunFinished, Usage, from_json, to_json
from hookstream.plugin import ModelCallContext, RunContext, ToolCallContext, hookimpl
from hookstream.stores import dumps_message

from .errors import DurableSettingsError, RunDivergedError
from .journal import Journal, log, open_run, redact_url
from .waits import DEFAULT_WAIT, canonical_answer

__all__ = ["Durable", "attempt", "request_key"]

STATE = "hookstream_dbos"
"""The key of this plugin's values in ``RunContext.state`` and ``ModelCallContext.state``."""

MAX_TOOL_STREAM = 1_000_000
"""Bytes of AG-UI JSON (:func:`hookstream.events.to_json`) a tool call's streamed events may take in the
journal by default (``Durable.max_tool_stream``)."""


_attempt: contextvars.ContextVar[int] = contextvars.ContextVar("hookstream_dbos_attempt", default=1)


def attempt() -> int:
    """Inside a tool of a durable run: ``1`` on the call's first run, ``2`` when the call was started
    before (its start is journaled, its result is not: the process died while it ran). Outside a durable
    run: ``1``."""
    return _attempt.get()


def request_key(call: ModelCallContext) -> str:
    """The SHA-256 hex digest of the canonical JSON of ``{"provider", "path", "body"}`` of ``call``'s
    request: the URL's path only (a resumed run may reach the provider through another host or port; the
    query string may hold a key) and never a header, so never an API key."""
    http = call.http_request()
    canonical = json.dumps({"provider": call.provider.name, "path": urlsplit(http.url).path, "body": http.json},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def last_user_text(run: RunContext) -> str:
    for message in reversed(run.messages):
        if message.role == "user":
            return "".join(getattr(p, "text", "") for p in message.parts)[:200]
    return ""


_ID_FIELDS = ("message_id", "parent_message_id")


def _stable_ids(events: Iterable[BaseEvent], prefix: str,
                ended: Callable[[bool], None] | None = None) -> Iterator[BaseEvent]:
    """``events`` with each message id replaced by ``PREFIX-N`` (N: the order the call first named it).
    ``ended``: called with ``True`` before ``RUN_FINISHED`` is yielded, ``False`` on ``RUN_ERROR`` (one
    generator for both, on the per-event path)."""
    names: dict[str, str] = {}
    for ev in events:
        changed: dict[str, Any] = {}
        for field in _ID_FIELDS:
            value = getattr(ev, field, None)
            if isinstance(value, str):
                changed[field] = names.setdefault(value, f"{prefix}-{len(names) + 1}")
        if ended is not None:
            if type(ev) is RunFinished:
                ended(True)
            elif isinstance(ev, RunError):
                ended(False)
        yield attrs.evolve(ev, **changed) if changed else ev


DB_SCHEMES = ("sqlite:", "postgresql:", "postgres:")
"""What a ``Durable.db`` URL may start with: the system databases DBOS runs on (with a driver:
``postgresql+psycopg:``)."""


def _check_id(value: Any) -> None:
    if not isinstance(value, str) or not value or "\0" in value:
        raise DurableSettingsError(f"Durable.id must be a non-empty str without NUL, not {value!r:.80}")


def _check_db(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise DurableSettingsError(f"Durable.db must be a database URL (str) or None, not {type(value).__name__}")
    if value.split("+", 1)[0].split(":", 1)[0] + ":" not in DB_SCHEMES:
        raise DurableSettingsError(f"Durable.db must be a sqlite:, postgresql: or postgres: URL, not "
                                   f"{redact_url(value)!r}")


def _check_meta(value: Any) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise DurableSettingsError(f"Durable.meta must be a dict with str keys, not {type(value).__name__}")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise DurableSettingsError(f"Durable.meta must hold JSON values: {exc}") from None


def _check_wait(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DurableSettingsError(f"Durable.wait must be a number of seconds or None, not {type(value).__name__}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int past float's range
        finite = False
    if not (finite and value > 0):
        raise DurableSettingsError(f"Durable.wait must be a finite number of seconds > 0 or None, not {value!r:.40}")


def _check_bound(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DurableSettingsError(f"Durable.max_tool_stream must be an int (bytes), not {type(value).__name__}")
    if value < 0:
        raise DurableSettingsError(f"Durable.max_tool_stream must be >= 0 bytes, not {value}")


@attrs.define(slots=True, eq=False)
class _Pending:
    """A live model call on its way to the journal: its entry once the body was tapped and replays well,
    and whether the call's own events ended with ``RUN_FINISHED``."""

    name: str
    key: str
    entry: dict[str, Any] | None = None
    finished: bool = False
    written: bool = False


@attrs.define(slots=True, eq=False)
class Durable:
    """Run ``chat(...)`` as the DBOS workflow ``id`` (any string; the same id after a crash resumes the
    run, the id of a finished run returns its recorded answer without calling anything, another id is a
    new run). ``db`` is the DBOS system database URL (default ``$DBOS_SYSTEM_DATABASE_URL``, else SQLite
    in ``$HOOKSTREAM_USER_DIR`` or the user data directory: ``hookstream_dbos.default_url``; one per
    process). ``meta`` is kept with the run (the CLI keeps its command line there, for ``hookstream runs
    resume``). ``wait`` is how long, in seconds, a run that
    ends waiting for approvals waits for its answer (default a week; then it ends, and an answer is
    refused); ``None``: it does not wait (its workflow is cancelled, resumable, as a run that failed).
    ``max_tool_stream`` bounds, in bytes of AG-UI JSON, what one tool call's streamed events
    (:meth:`hookstream.ToolContext.emit`) take in the journal: past it that call's result is journaled
    with its usage alone (summed), and a replay of it streams no event (``docs/durable.md``).

    Every setting is checked here, at construction (and on assignment), not later from a run's thread:
    :class:`~hookstream_dbos.DurableSettingsError` (also a :class:`TypeError` and a :class:`ValueError`) for
    an ``id`` that is not a non-empty ``str`` without NUL, a ``db`` that is not ``None`` or a ``sqlite:``,
    ``postgresql:`` or ``postgres:`` URL (its password never in the message), a ``meta`` that is not a
    ``dict`` of JSON values under ``str`` keys, a ``wait`` that is not ``None`` or a finite number of seconds
    ``> 0`` (not a ``bool``), a ``max_tool_stream`` that is not an ``int`` ``>= 0`` (not a ``bool``).

    A run that ends with outcome ``interrupt`` waits durably: ``chat(model, resume=result.resume({...}),
    plugins=[Durable(id)])``, in this process or another one, answers it and goes on as the next part of
    the same durable run (``docs/durable.md``, "Approvals").

    Use it as ``chat(model, prompt, tools=..., plugins=[Durable("order-42")])``,
    ``plugins=[("durable", {"id": "order-42"})]`` or ``hookstream chat PROMPT --durable order-42``.
    A run whose id cannot be opened ends with ``RUN_ERROR`` ``plugin_error`` (the id is running in this
    process, or its workflow failed).
    """

    id: str = attrs.field(validator=lambda _s, _a, v: _check_id(v))
    db: str | None = attrs.field(default=None, validator=lambda _s, _a, v: _check_db(v),
                                 repr=lambda v: repr(redact_url(v) if v else v))
    meta: dict[str, Any] = attrs.field(factory=dict, validator=lambda _s, _a, v: _check_meta(v))
    wait: float | None = attrs.field(default=DEFAULT_WAIT, validator=lambda _s, _a, v: _check_wait(v))
    # A bad bound would otherwise fail inside a tool's emit, from the tool's thread.
    max_tool_stream: int = attrs.field(default=MAX_TOOL_STREAM, validator=lambda _s, _a, v: _check_bound(v))

    # -- the run ------------------------------------------------------------------------------------------
    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        self._open(run, self.id, self.meta)

    def _open(self, run: RunContext, run_id: str, meta: dict[str, Any]) -> None:
        """Open durable run ``run_id``'s journal for ``run``; its workflow keeps the run's model, prompt
        (:func:`last_user_text`) and start time, and ``meta``."""
        kept = {"model": f"{run.provider}:{run.model}", "prompt": last_user_text(run), "started": time.time(), **meta}
        run.state[STATE] = open_run(run_id, kept, self.db, canonical_answer(run.resume))

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: Any) -> None:
        journal = run.state.pop(STATE, None)
        if isinstance(journal, Journal):
            summary = {"outcome": result.outcome, "text": result.text, "steps": len(result.steps),
                       "total_tokens": result.usage.total_tokens}
            pending = [p.call.id for p in result.pending_approvals] + [c.id for c in result.pending_tool_calls]
            messages = _conversation(result.messages) if pending else None
            journal.end(result.outcome, summary, pending, self.wait, messages)

    # -- model calls ----------------------------------------------------------------------------------------
    @hookimpl(tryfirst=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Iterable[BaseEvent] | None:
        """A journaled call: its body through the call's adapter. A new one: ``None`` (it is sent)."""
        journal = call.run.state.get(STATE)
        if not isinstance(journal, Journal):
            return None
        name = f"model_call:{call.step}"
        journal.step = call.step  # the tool calls that follow are this step's
        key = request_key(call)
        found, entry = journal.get(name)
        if found:
            if entry.get("key") != key:
                return [RunError(f"durable run {journal.run_id!r}: the request of step {call.step} differs "
                                 "from the journaled one (the prompt, tools or model changed); use another id",
                                 code=RunDivergedError.code)]
            return call.parse_body(entry["body"])
        if journal.closed:
            return [RunError(f"durable run {journal.run_id!r} has ended; its journal holds no step "
                             f"{call.step}", code=RunDivergedError.code)]
        call.state[STATE] = _Pending(name, key)
        return None

    @hookimpl(wrapper=True, specname="hookstream_model_call")
    def watch_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent], Iterable[BaseEvent]]:
        """Tap a new call's raw body; journal it once the body and the events both ended well. A run that
        is not durable (a served run not kept) gets its events as they are, and no tap (no teed body)."""
        journal = call.run.state.get(STATE)
        if not isinstance(journal, Journal):
            return (yield)
        call.on_body.append(lambda body: self._tapped(call, body))
        events = yield
        # The ids the adapter makes up (message ids) are new on every parse: derived from the run and
        # the step instead, a replayed call sends the very events its first run sent.
        run_hash = hashlib.sha256(journal.run_id.encode()).hexdigest()[:12]
        pending = call.state.get(STATE)
        ended = partial(self._ended, call, pending) if isinstance(pending, _Pending) else None
        return _stable_ids(events, f"msg-{run_hash}-{journal.prefix}{call.step}", ended)

    def _ended(self, call: ModelCallContext, pending: _Pending, finished: bool) -> None:
        """A new call's events ended: journaled once they finished (before the engine reads ``RUN_FINISHED``
        and runs the tools) and the body was tapped."""
        pending.finished = finished
        if finished:
            self._write(call, pending)

    def _tapped(self, call: ModelCallContext, body: bytes) -> None:
        pending = call.state.get(STATE)
        if not isinstance(pending, _Pending) or pending.written or not call.replays_to_finish(body):
            return
        http = call.http_request()
        pending.entry = {
            "key": pending.key, "body": body, "media_type": call.provider.framing.media_type,
            "provider": call.provider.name, "model": call.request.model,
            "base_path": urlsplit(call.provider.base_url).path.rstrip("/"),
            "request": {"method": http.method, "url": http.redacted_url(), "path": urlsplit(http.url).path,
                        "json": http.json},
        }
        self._write(call, pending)

    def _write(self, call: ModelCallContext, pending: _Pending) -> None:
        if pending.written or not pending.finished or pending.entry is None:
            return
        journal = call.run.state.get(STATE)
        if isinstance(journal, Journal):
            pending.written = True
            journal.write(pending.name, pending.entry)

    # -- tool calls -----------------------------------------------------------------------------------------
    @hookimpl(tryfirst=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> Any:
        """A journaled result: what its tool streamed is streamed again, in order, and the result returned;
        the tool does not run. A new call: its start is journaled (so a crash while it runs is known on
        resume: :func:`attempt`), what its tool streams is collected, and ``None`` lets it run."""
        journal = call.run.state.get(STATE) if call.run is not None else None
        if not isinstance(journal, Journal):
            return None
        # Keyed by step too: a provider may reuse a call id in a later step.
        where = f"{journal.step}:{call.call_id}"
        found, payload = journal.get(f"tool_call:{where}")
        if found:
            return _replay_tool(call, payload)
        started, _ = journal.get(f"tool_started:{where}")
        if started:
            _attempt.set(2)
        else:
            journal.write(f"tool_started:{where}", {"name": call.name})
        call.state[STATE] = where
        streamed = _Streamed(self.max_tool_stream)
        call.state[_STREAMED] = streamed
        call.on_stream.append(streamed.take)
        return None

    @hookimpl(wrapper=True, specname="hookstream_tool_call")
    def watch_tool_call(self, call: ToolCallContext) -> Generator[None, Any, Any]:
        """Journal a new call's result (whatever it is), with what its tool streamed, before the engine
        sees it."""
        result = yield
        where = call.state.get(STATE)
        journal = call.run.state.get(STATE) if call.run is not None else None
        if isinstance(where, str) and isinstance(journal, Journal) and result is not None:
            streamed = call.state.get(_STREAMED)
            items = streamed.close(journal.run_id, where) if isinstance(streamed, _Streamed) else None
            journal.write(f"tool_call:{where}", {"result": result, "stream": items} if items else result)
        return result


def _conversation(messages: Iterable[Any]) -> list[str] | None:
    """``messages`` in the store's codec (:func:`hookstream.stores.dumps_message`), or ``None`` when one
    cannot be encoded (a tool output that is not JSON: the store could not keep it either)."""
    try:
        return [dumps_message(m) for m in messages]
    except (TypeError, ValueError):
        return None


_STREAMED = STATE + ":stream"
"""The key of a new tool call's :class:`_Streamed` in ``ToolCallContext.state``."""

@attrs.define(slots=True, eq=False)
class _Streamed:
    """What one tool call streamed in the run, in order: each event as its AG-UI JSON text (the public
    codec), each :class:`~hookstream.events.Usage` as it is. Past ``limit`` bytes of JSON no event is kept,
    only the usage, summed into one (the step journals its result with it: a replay counts the tokens the
    call spent, a few integers whatever the call streamed). Thread safety: :meth:`take` may be called from
    any thread."""

    limit: int
    items: list[str | Usage] = attrs.Factory(list)
    size: int = 0
    over: bool = False
    closed: bool = False
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def take(self, item: BaseEvent | Usage) -> None:
        with self._lock:
            if self.closed:
                return
            if isinstance(item, Usage):
                if self.over:
                    self.items = [_summed([*self.items, item])]
                else:
                    self.items.append(item)
                return
            if self.over:
                return
            text = to_json(item)
            self.size += len(text.encode("utf-8"))
            if self.size > self.limit:
                self.over = True
                self.items = [_summed(self.items)] if any(isinstance(i, Usage) for i in self.items) else []
            else:
                self.items.append(text)

    def close(self, run_id: str, where: str) -> list[str | Usage]:
        """What to journal with the result (what the tool streams later is not journaled)."""
        with self._lock:
            self.closed = True
            if self.over:
                log.warning("durable run %s: tool call %s streamed more than %d bytes of events; its result is "
                            "journaled without them (with its usage)", run_id, where, self.limit)
            return self.items


def _summed(items: Iterable[str | Usage]) -> Usage:
    """The sum of the :class:`~hookstream.events.Usage` among ``items``."""
    total = Usage()
    for item in items:
        if isinstance(item, Usage):
            total = total + item
    return total


def _replay_tool(call: ToolCallContext, payload: Any) -> Any:
    """A journaled tool call's result, after streaming again what its tool streamed."""
    if not isinstance(payload, dict):
        return payload  # journaled with nothing streamed
    for item in payload.get("stream") or ():
        if isinstance(item, Usage):
            call.add_usage(item)
        else:
            call.emit(from_json(item))
    return payload["result"]

