"""The server's trust boundary: a server-side tool runs only for a call the server's own model made in
that thread (issue 31; docs/agui-server.md, "Deployment").

A client sends its conversation with every request, and an AG-UI or AI SDK client answers an approval
inside it (a tool call's ``approval``, a ``resume`` entry, a tool part in state ``approval-responded``).
What the server believes:

* **With a store** the stored history is the truth. A request may add user (and system) messages,
  answer the pending calls the store holds (approve, deny, a frontend tool's result) and carry
  assistant text, which is kept as text. An assistant tool call the store does not hold, or a tool
  result the store does not hold for anything but a frontend tool of the request, is refused
  (:class:`~hookstream.errors.UntrustedToolCallError`, ``400``), before anything is stored or run.
* **Without a store** (stateless) the client holds the history, so the server signs each call it hands
  out for approval (:class:`ApprovalSigner`: HMAC-SHA256 over the thread id, call id, tool name,
  canonical arguments, the principal it is handed to and the time it is issued) and puts the time and
  signature into the approval id (``approval_<call id>.<issued>.<signature>``,
  the ``CUSTOM approval-requested`` ``approvalId`` and the ``RUN_FINISHED`` interrupt id), which every
  client echoes when it answers (AG-UI ``resume[].interruptId``, a TanStack tool call's
  ``approval.id``, an AI SDK tool part's ``approval.id``). A request whose conversation ends with a
  pending call (one no tool message answers) is run only when that call's echoed signature checks out
  for the caller and is at most :data:`APPROVAL_SECONDS` old; otherwise it is refused. Each accepted id
  is used once: :class:`UsedApprovals` remembers it (shared by the server's worker processes) until it
  expires, and a replay is ``409`` (:class:`~hookstream.errors.AlreadyAnsweredError`). A frontend
  tool's call is answered with a tool message (then it is no longer pending); a request that leaves it
  pending must carry a new user message.

Answered once (:func:`answer_claims`): with a store, the pending calls a request settles are claimed in
the store (``claim_answers``, atomic) before its run starts; a second answer is ``409`` and runs nothing.

Either way the engine gets approvals only as ``resume`` entries for calls that passed (the ``approval``
kept on a message's tool call is removed), so nothing a client writes into the history makes a tool run.

Ids (:func:`check_ids`): thread, run, message and tool call ids are at most :data:`MAX_ID_LENGTH`
characters of :data:`ID_CHARACTERS`; anything else is refused with ``400`` before it is stored.

Thread safety: :class:`ApprovalSigner` is immutable; :class:`UsedApprovals` may be shared by threads and
(forked) processes; the functions keep no state.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
from hookstream import Message, ToolCallPart
from hookstream.errors import (
    AGUIInputError,
    AlreadyAnsweredError,
    MalformedCustomEventError,
    ResumeError,
    UntrustedToolCallError,
)
from hookstream.events import ApprovalRequestedPayload, BaseEvent, Custom, RunFinished
from hookstream.plugin import approval_id

from .ui_message_stream import pending_calls

__all__ = ["APPROVAL_SECONDS", "APPROVAL_SECRET_ENV", "ID_CHARACTERS", "MAX_ID_LENGTH", "ApprovalSigner",
           "SignedApprovals", "UsedApprovals", "answer_claims", "check_ids", "vet"]

APPROVAL_SECRET_ENV = "HOOKSTREAM_APPROVAL_SECRET"
"""The environment variable holding a stateless server's approval secret (any text; 32 random bytes or
more, e.g. ``python -c "import secrets; print(secrets.token_urlsafe(32))"``)."""

MAX_ID_LENGTH = 128
"""The longest thread, run, message or tool call id a server accepts."""

ID_CHARACTERS = "A-Z a-z 0-9 - _ . : ~ @ + ="
"""The characters of an id a server accepts (ASCII letters, digits and these punctuation marks)."""

_ID = re.compile(r"[A-Za-z0-9\-_.:~@+=]+")
_MAX_INTERRUPT_ID = 2 * MAX_ID_LENGTH  # approval_<call id>.<issued>.<signature>


# -- ids ----------------------------------------------------------------------------------------------


def _check_id(value: Any, where: str, *, required: bool = False, limit: int = MAX_ID_LENGTH) -> None:
    if not required and (not isinstance(value, str) or not value):
        return  # an optional id that is absent, empty or not text: the readers do not use it
    if not isinstance(value, str) or not value:
        raise AGUIInputError(f"{where} must be a non-empty string")
    if len(value) > limit or not _ID.fullmatch(value):
        raise AGUIInputError(f"{where} must be at most {limit} characters of {ID_CHARACTERS} "
                             f"(got {len(value)} characters)")


def check_ids(doc: Any, ui: bool) -> None:
    """Refuse a request whose ids could not be stored as they are: the thread id (``threadId``, the AI
    SDK ``id``), ``runId``, message ids, tool call ids (and the ids a message refers to), ``resume``
    interrupt ids (at most twice :data:`MAX_ID_LENGTH`, a signed approval id). Raises
    :class:`~hookstream.errors.AGUIInputError`; a body that is not an object is left to the reader."""
    if not isinstance(doc, dict):
        return
    _check_id(doc.get("id" if ui else "threadId"), "id" if ui else "threadId", required=True)
    if not ui:
        _check_id(doc.get("runId"), "runId", required=True)
    else:
        _check_id(doc.get("messageId"), "messageId")
    messages = doc.get("messages")
    for i, m in enumerate(messages if isinstance(messages, list) else ()):
        if isinstance(m, dict):
            _check_message_ids(m, f"messages[{i}]", ui)
    resume = doc.get("resume")
    for i, entry in enumerate(resume if isinstance(resume, list) else [resume] if resume is not None else []):
        if isinstance(entry, dict):
            _check_id(entry.get("interruptId"), f"resume[{i}].interruptId", limit=_MAX_INTERRUPT_ID)


def _check_message_ids(m: dict[str, Any], where: str, ui: bool) -> None:
    _check_id(m.get("id"), f"{where}.id")
    if not ui:
        _check_id(m.get("toolCallId"), f"{where}.toolCallId")
        calls = m.get("toolCalls")
        for j, call in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(call, dict):
                _check_id(call.get("id"), f"{where}.toolCalls[{j}].id")
        return
    parts = m.get("parts")
    for j, p in enumerate(parts if isinstance(parts, list) else ()):
        if not isinstance(p, dict):
            continue
        _check_id(p.get("toolCallId"), f"{where}.parts[{j}].toolCallId")
        meta = p.get("providerMetadata")
        hs = meta.get("hookstream") if isinstance(meta, dict) else None
        if isinstance(hs, dict) and "messageId" in hs:
            _check_id(hs.get("messageId"), f"{where}.parts[{j}].providerMetadata.hookstream.messageId")


# -- signing ------------------------------------------------------------------------------------------


def _canonical(value: Any) -> Any:
    # A browser echoes 2.0 as 2 (JavaScript has one number type): integral floats compare as integers.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def canonical_arguments(arguments: Mapping[str, Any] | None) -> str:
    """The arguments as the text that is signed: JSON with sorted keys, no spaces, integral floats as
    integers (so a JavaScript client's echo of ``{"amount": 2.0}`` matches)."""
    return json.dumps(_canonical(dict(arguments or {})), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


APPROVAL_SECONDS = 3600.0
"""How long a signed approval id stays valid after the server handed it out (seconds): a stateless
server refuses an older one (``400`` ``untrusted_tool_call``) and remembers each used one at least this
long (:class:`UsedApprovals`)."""

_ISSUED = re.compile(r"[0-9]{1,12}")


@attrs.frozen(slots=True)
class ApprovalSigner:
    """Signs and checks the approval ids a stateless server hands out (see the module docstring).
    ``key`` is the secret (at least 16 bytes); :meth:`from_setting` builds one from a setting, the
    :data:`APPROVAL_SECRET_ENV` environment variable or a fresh random secret. ``seconds`` is how long
    an id stays valid after it was issued (:data:`APPROVAL_SECONDS`). An id binds the thread, the call
    (id, tool, canonical arguments), the principal it was handed to and the time it was issued."""

    key: bytes = attrs.field(repr=False)
    seconds: float = APPROVAL_SECONDS

    @key.validator
    def _long_enough(self, attribute: Any, value: bytes) -> None:
        if not isinstance(value, bytes) or len(value) < 16:
            raise ValueError("the approval secret must be at least 16 bytes")

    @classmethod
    def from_setting(cls, secret: str | bytes | None) -> ApprovalSigner:
        """``secret`` (text is UTF-8 encoded), else ``$HOOKSTREAM_APPROVAL_SECRET``, else 32 random bytes
        for this process (then the workers of one server must share the object: built before they fork,
        as ``hookstream serve --workers N`` does). Raises :class:`ValueError` for a secret under 16 bytes."""
        if secret is None:
            secret = os.environ.get(APPROVAL_SECRET_ENV) or None
        if secret is None:
            return cls(secrets.token_bytes(32))
        return cls(secret.encode() if isinstance(secret, str) else bytes(secret))

    def signature(self, thread_id: str, call_id: str, tool_name: str, arguments: Mapping[str, Any] | None,
                  principal: str | None = None, issued: int = 0) -> str:
        """HMAC-SHA256 of ``["hookstream-approval-v2", thread, call id, tool, canonical arguments,
        principal id or "", issued (Unix seconds)]`` (JSON), base64url without padding (43 characters)."""
        message = json.dumps(["hookstream-approval-v2", thread_id, call_id, tool_name, canonical_arguments(arguments),
                              principal or "", issued], separators=(",", ":"), ensure_ascii=False).encode()
        digest = hmac.new(self.key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def approval_id(self, thread_id: str, call_id: str, tool_name: str, arguments: Mapping[str, Any] | None,
                    principal: str | None = None, issued: int | None = None) -> str:
        """``approval_<call id>.<issued>.<signature>``: the approval (and interrupt) id a client echoes;
        ``issued`` (Unix seconds) defaults to now."""
        at = int(time.time()) if issued is None else issued
        return f"{approval_id(call_id)}.{at}.{self.signature(thread_id, call_id, tool_name, arguments, principal, at)}"

    def issued(self, given: str, call_id: str) -> int | None:
        """The issue time (Unix seconds) an approval id of ``call_id`` names; ``None`` when it names none."""
        prefix = approval_id(call_id) + "."
        if not given.startswith(prefix):
            return None
        at = given[len(prefix):].partition(".")[0]
        return int(at) if _ISSUED.fullmatch(at) else None

    def verify(self, given: str | None, thread_id: str, call: ToolCallPart, principal: str | None = None,
               now: float | None = None) -> bool:
        """Whether ``given`` (an echoed approval id) is this server's signed id of ``call`` in ``thread_id``
        handed to ``principal``, issued at most :attr:`seconds` before ``now`` (default: the clock) and
        not in the future (compared in constant time)."""
        if not given:
            return False
        at = self.issued(given, call.id)
        if at is None:
            return False
        expected = self.approval_id(thread_id, call.id, call.name, call.arguments, principal, at)
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return False
        age = (time.time() if now is None else now) - at
        return -_CLOCK_SKEW <= age <= self.seconds


_CLOCK_SKEW = 60.0  # seconds an id may seem to come from the future (clocks of servers sharing a secret)


def _remove_in(owner: int, where: str) -> None:
    """Remove ``where`` when this is process ``owner`` (a forked worker leaves its parent's file alone)."""
    if os.getpid() == owner:
        shutil.rmtree(where, ignore_errors=True)


class UsedApprovals:
    """The signed approval ids a stateless server has accepted, each kept until it expires, so a replay
    runs nothing: a SQLite file (WAL, one row per id, primary key = the id's signature) that every worker
    process of one server shares. :meth:`use` records ids all or none in one ``BEGIN IMMEDIATE``
    transaction, so of several requests using one id at once, on any worker, exactly one succeeds.

    ``path`` is the file (created, with its table, when absent); ``None``: a fresh file in a new
    private temporary directory (mode 0700), removed when the process that made it exits. Make the
    object before forking workers (``make_app`` does, and ``hookstream serve --workers N`` builds the
    app before gunicorn forks), so they share the file; each process and thread opens its own
    connection. Several servers behind one address need a store instead (docs/agui-server.md,
    "Deployment"): a file is one machine's.

    Thread safety: every method may be called from any thread of any process sharing the file.
    """

    SWEEP_SECONDS = 60.0
    """Seconds between two deletions of expired ids (by the process that records one)."""

    def __init__(self, path: str | None = None) -> None:
        if path is None:
            where = tempfile.mkdtemp(prefix="hookstream-approvals-")
            path = os.path.join(where, "used.db")
            atexit.register(_remove_in, os.getpid(), where)
        self.path = path
        self._local = threading.local()
        self._swept = 0.0
        conn = self._connect()  # fail now (a bad path), and make the table before any worker forks
        conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA journal_mode = WAL")
        # A commit survives the process (not the machine) without an fsync: the file lives as long as the
        # server anyway. FULL cost 6.3 ms per answer, NORMAL 0.2 ms (measured, 500 ids).
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS hookstream_used_approvals (signature TEXT PRIMARY KEY, "
                     "expires_at REAL NOT NULL)")
        return conn

    def _conn(self) -> sqlite3.Connection:
        pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != pid:  # a forked worker opens its own
            conn = self._local.conn = self._connect()
            self._local.pid = pid
        return conn

    def use(self, ids: Sequence[tuple[str, float]]) -> bool:
        """Record ``ids`` (``(approval id, expires at in Unix seconds)`` pairs) as used, all or none:
        ``False`` (nothing recorded) when one was used before. Raises :class:`sqlite3.Error` when the
        file cannot be written."""
        if not ids:
            return True
        conn = self._conn()
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if now - self._swept > self.SWEEP_SECONDS:
                self._swept = now
                conn.execute("DELETE FROM hookstream_used_approvals WHERE expires_at < ?", (now,))
            for given, expires_at in ids:
                # The signature is the id's unique part; an expired id is refused before it gets here.
                cur = conn.execute("INSERT INTO hookstream_used_approvals (signature, expires_at) VALUES (?, ?) "
                                   "ON CONFLICT (signature) DO NOTHING", (given.rsplit(".", 1)[-1], expires_at))
                if cur.rowcount != 1:
                    conn.execute("ROLLBACK")
                    return False
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return True

    def __repr__(self) -> str:
        return f"UsedApprovals({self.path!r})"


_SIGNED_EVENTS = frozenset({Custom, RunFinished})


class SignedApprovals:
    """A stateless server's run stream with signed approval ids: each ``CUSTOM approval-requested``
    ``approvalId`` and the matching ``RUN_FINISHED`` interrupt ids become
    :meth:`ApprovalSigner.approval_id`. Other events pass unchanged; ``cancel`` and ``result`` are the
    stream's."""

    def __init__(self, stream: Any, signer: ApprovalSigner, thread_id: str, principal: str | None = None) -> None:
        self._stream = stream
        self._signer = signer
        self._thread_id = thread_id
        self._principal = principal

    def __iter__(self) -> Iterator[BaseEvent]:
        signed: dict[str, str] = {}
        for ev in self._stream:
            if type(ev) not in _SIGNED_EVENTS:  # one set lookup per event: the stream's hot path
                yield ev
                continue
            if type(ev) is Custom and ev.name == ApprovalRequestedPayload.name:
                ev = self._sign(ev, signed)
            elif type(ev) is RunFinished and signed and ev.outcome is not None and ev.outcome.interrupts:
                ev = attrs.evolve(ev, outcome=attrs.evolve(ev.outcome, interrupts=[
                    attrs.evolve(i, id=signed[i.id]) if i.id in signed else i
                    for i in ev.outcome.interrupts]))
            yield ev

    def _sign(self, ev: Custom, signed: dict[str, str]) -> Custom:
        try:
            p = ApprovalRequestedPayload.from_value(ev.value)
        except MalformedCustomEventError:
            return ev  # not the engine's payload: nothing to sign
        if p.approval_id != approval_id(p.tool_call_id):
            return ev  # a remote agent's own approval id: its server checks it
        ident = self._signer.approval_id(self._thread_id, p.tool_call_id, p.tool_name, p.input, self._principal)
        signed[p.approval_id] = ident
        return attrs.evolve(ev, value={**ev.value, "approvalId": ident})

    def cancel(self) -> None:
        self._stream.cancel()

    def __getattr__(self, name: str) -> Any:  # result() and whatever else the wrapped stream offers
        return getattr(self._stream, name)


# -- vetting a request ------------------------------------------------------------------------------


@attrs.define(slots=True)
class _Answer:
    approved: bool | None = None
    reason: str | None = None
    approval_id: str | None = None  # the id the client echoed (signed on a stateless server)


def _approval_of(call: ToolCallPart) -> dict[str, Any] | None:
    meta = (call.provider_metadata or {}).get("hookstream")
    approval = meta.get("approval") if isinstance(meta, dict) else None
    return approval if isinstance(approval, dict) else None


def _without_approvals(message: Message) -> Message:
    if not any(isinstance(p, ToolCallPart) and _approval_of(p) is not None for p in message.parts):
        return message
    parts = []
    for p in message.parts:
        if isinstance(p, ToolCallPart) and _approval_of(p) is not None:
            meta = dict(p.provider_metadata or {})
            hs = {k: v for k, v in meta.pop("hookstream").items() if k != "approval"}
            if hs:
                meta["hookstream"] = hs
            p = attrs.evolve(p, provider_metadata=meta or None)
        parts.append(p)
    return attrs.evolve(message, parts=parts, id=message.id)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _answer(call: ToolCallPart, entries: Sequence[Any], used: set[int],
            in_messages: Mapping[str, dict[str, Any]]) -> _Answer | None:
    """The client's answer for a pending ``call``: its resume entry (``interruptId`` the call's approval
    id, signed or not, or its call id), else the ``approval`` on the call as the request carried it."""
    plain = approval_id(call.id)
    for i, entry in enumerate(entries):
        key = entry.get("interruptId") if isinstance(entry, dict) else None
        if i in used or not isinstance(key, str) or not (key in (plain, call.id) or key.startswith(plain + ".")):
            continue
        used.add(i)
        payload = entry.get("payload")
        approved = entry.get("status", "resolved") == "resolved"
        if approved and isinstance(payload, dict) and "approved" in payload:
            approved = bool(payload["approved"])
        return _Answer(approved, _text(payload.get("reason")) if isinstance(payload, dict) else None, key)
    approval = in_messages.get(call.id)
    if approval is None:
        return None
    approved = approval.get("approved")
    return _Answer(approved if isinstance(approved, bool) else None, _text(approval.get("reason")),
                   _text(approval.get("id")))


def vet(
    messages: Sequence[Message],
    incoming: Sequence[Message],
    resume: Sequence[Any] | None,
    *,
    thread_id: str,
    new: Sequence[Message] | None,
    signer: ApprovalSigner | None,
    frontend_tools: frozenset[str] = frozenset(),
    principal: str | None = None,
    claims: list[str] | None = None,
) -> tuple[list[Message], list[dict[str, Any]] | None]:
    """Apply the trust rule (module docstring) to a request: ``messages`` is the conversation the model
    would get (with a store: the stored history plus ``new``, the request's messages the store does not
    hold; without: the request's), ``incoming`` the request's messages as read, ``resume`` its resume
    entries. Returns the conversation without client approvals and the ``resume`` entries for the
    engine (answers to the pending calls, with plain ``approval_<call id>`` ids, plus entries naming
    other interrupts, unchanged), or ``None``. ``frontend_tools`` names the request's client tools: with
    a store, a new ``tool`` result must answer one of them. ``principal`` is the caller's id (a signed
    approval id must have been handed to it). ``claims``, when given, receives what the server must claim
    before the run starts, so the request's answers are used once (:func:`answer_claims`): with a store,
    the ids of the stored pending calls the request answers or leaves behind; without, the signed
    approval ids it echoed. Raises :class:`~hookstream.errors.UntrustedToolCallError`;
    :class:`~hookstream.errors.ResumeError` (``invalid_resume``) for a ``resume`` entry naming no pending
    call while calls are pending (the engine would refuse it), before anything is claimed."""
    if new is not None:
        for m in new:
            for call in m.tool_calls:
                raise UntrustedToolCallError(
                    f"tool call {call.id!r} ({call.name}) is not in thread {thread_id!r}: a client may answer the "
                    "calls the server's model made, not add its own")
            for result in m.tool_results:
                if result.tool_name not in frontend_tools:
                    # Only a frontend tool's result comes from the client; a server tool's comes from its run.
                    raise UntrustedToolCallError(
                        f"a tool result for {result.tool_call_id!r} ({result.tool_name}): only a frontend tool of "
                        "the request is answered by the client")
    in_messages = {c.id: a for m in incoming for c in m.tool_calls if (a := _approval_of(c)) is not None}
    given = list(resume or ())
    used: set[int] = set()
    entries: list[dict[str, Any]] = []
    resolved: set[str] = set()
    pending = pending_calls(messages)
    for call in pending:
        answer = _answer(call, given, used, in_messages)
        if new is None and (signer is None or not signer.verify(answer.approval_id if answer else None,
                                                                 thread_id, call, principal)):
            raise UntrustedToolCallError(
                f"tool call {call.id!r} ({call.name}) carries no valid approval id of this server for thread "
                f"{thread_id!r} and this caller, or one older than its lifetime: echo the approvalId (interrupt "
                "id) the server sent with the call")
        if new is None and claims is not None and answer is not None and answer.approval_id:
            claims.append(answer.approval_id)
        if answer is not None and answer.approved is not None:
            payload: dict[str, Any] = {"approved": answer.approved}
            if answer.reason:
                payload["reason"] = answer.reason
            entries.append({"interruptId": approval_id(call.id), "status": "resolved", "payload": payload})
            resolved.add(call.id)
    # Entries naming no pending call pass unchanged: a remote agent's interrupts, or an id the engine
    # refuses (ResumeError) when a call of its own is pending.
    rest = [e for i, e in enumerate(given) if i not in used]
    if new is not None:
        _refuse_answered_again(messages[: len(messages) - len(new)], incoming, new, rest, in_messages, thread_id)
    if pending and rest:
        # The engine refuses such an entry while calls of its own wait; refused here, before the request's
        # answers are claimed, a forged entry next to a real answer cannot use that answer up.
        key = rest[0].get("interruptId") if isinstance(rest[0], dict) else rest[0]
        raise ResumeError(f"resume answers {key!r}, which is not a pending tool call of the conversation")
    resumed = [*entries, *rest]
    if new is not None and claims is not None:
        claims.extend(answer_claims(messages[: len(messages) - len(new)], new, resolved))
    return [_without_approvals(m) for m in messages], resumed or None


def _refuse_answered_again(history: Sequence[Message], incoming: Sequence[Message], new: Sequence[Message],
                           entries: Sequence[Any], in_messages: Mapping[str, Any], thread_id: str) -> None:
    """With a store: a second answer to a stored call that is no longer pending (another request
    answered it first) runs nothing. It is a ``resume`` entry naming such a call; or, in a request that
    brings nothing new to a thread with nothing pending, an approval on such a call or a final ``tool``
    message answering only such calls (the same answer again). Raises
    :class:`~hookstream.errors.AlreadyAnsweredError`."""
    pending = {c.id for c in pending_calls(history)}
    answered = {c.id: c.id for m in history for c in m.tool_calls if c.id not in pending}
    if not answered:
        return
    answered.update({approval_id(c): c for c in list(answered)})
    again = [answered[k] for e in entries if isinstance(e, dict) and isinstance(k := e.get("interruptId"), str)
             and k in answered]
    if not new and not pending:  # the request answers nothing pending: is it an answer sent again?
        # Only the request's last turn counts (an approval on an earlier turn's call is history).
        ai = next((i for i in range(len(incoming) - 1, -1, -1) if incoming[i].role != "tool"), None)
        last_turn = incoming[ai] if ai is not None and incoming[ai].role == "assistant" else None
        again += [c.id for c in (last_turn.tool_calls if last_turn else ()) if c.id in in_messages and c.id in answered]
        last = incoming[-1] if incoming else None
        if last is not None and last.role == "tool" and all(r.tool_call_id in answered for r in last.tool_results):
            again += [r.tool_call_id for r in last.tool_results]
    if again:
        raise AlreadyAnsweredError(f"tool call {again[0]!r} of thread {thread_id!r} was answered already: "
                                   "nothing was run")


def answer_claims(history: Sequence[Message], new: Sequence[Message], resolved: set[str]) -> list[str]:
    """The ids of the stored pending calls (of ``history``) a request with a store settles: those
    ``resolved`` (approved or denied by its ``resume``), those a ``tool`` message of ``new`` answers (a
    frontend tool's result), and all of them when ``new`` carries another message (they are left behind:
    the engine answers them with an error). A request that only re-sends the history settles nothing."""
    stored = pending_calls(history)
    if any(m.role != "tool" for m in new):
        return [c.id for c in stored]
    answered = resolved | {r.tool_call_id for m in new for r in m.tool_results}
    return [c.id for c in stored if c.id in answered]
