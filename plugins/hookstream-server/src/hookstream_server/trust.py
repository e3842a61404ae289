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
  out for approval (:class:`ApprovalSigner`: HMAC-SHA256 over the thread id, call id, tool name and
  canonical arguments) and puts the signature into the approval id (``approval_<call id>.<signature>``,
  the ``CUSTOM approval-requested`` ``approvalId`` and the ``RUN_FINISHED`` interrupt id), which every
  client echoes when it answers (AG-UI ``resume[].interruptId``, a TanStack tool call's
  ``approval.id``, an AI SDK tool part's ``approval.id``). A request whose conversation ends with a
  pending call (one no tool message answers) is run only when that call's echoed signature checks out;
  otherwise it is refused. A frontend tool's call is answered with a tool message (then it is no longer
  pending); a request that leaves it pending must carry a new user message.

Either way the engine gets approvals only as ``resume`` entries for calls that passed (the ``approval``
kept on a message's tool call is removed), so nothing a client writes into the history makes a tool run.

Ids (:func:`check_ids`): thread, run, message and tool call ids are at most :data:`MAX_ID_LENGTH`
characters of :data:`ID_CHARACTERS`; anything else is refused with ``400`` before it is stored.

Thread safety: :class:`ApprovalSigner` is immutable; the functions keep no state.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
from hookstream import Message, ToolCallPart
from hookstream.errors import AGUIInputError, MalformedCustomEventError, UntrustedToolCallError
from hookstream.events import ApprovalRequestedPayload, BaseEvent, Custom, RunFinished
from hookstream.plugin import approval_id

from .ui_message_stream import pending_calls

__all__ = ["APPROVAL_SECRET_ENV", "ID_CHARACTERS", "MAX_ID_LENGTH", "ApprovalSigner", "SignedApprovals",
           "check_ids", "vet"]

APPROVAL_SECRET_ENV = "HOOKSTREAM_APPROVAL_SECRET"
"""The environment variable holding a stateless server's approval secret (any text; 32 random bytes or
more, e.g. ``python -c "import secrets; print(secrets.token_urlsafe(32))"``)."""

MAX_ID_LENGTH = 128
"""The longest thread, run, message or tool call id a server accepts."""

ID_CHARACTERS = "A-Z a-z 0-9 - _ . : ~ @ + ="
"""The characters of an id a server accepts (ASCII letters, digits and these punctuation marks)."""

_ID = re.compile(r"[A-Za-z0-9\-_.:~@+=]+")
_MAX_INTERRUPT_ID = 2 * MAX_ID_LENGTH  # approval_<call id>.<signature>


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


@attrs.frozen(slots=True)
class ApprovalSigner:
    """Signs and checks the approval ids a stateless server hands out (see the module docstring).
    ``key`` is the secret (at least 16 bytes); :meth:`from_setting` builds one from a setting, the
    :data:`APPROVAL_SECRET_ENV` environment variable or a fresh random secret."""

    key: bytes = attrs.field(repr=False)

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

    def signature(self, thread_id: str, call_id: str, tool_name: str, arguments: Mapping[str, Any] | None) -> str:
        """HMAC-SHA256 of ``["hookstream-approval-v1", thread, call id, tool, canonical arguments]`` (JSON),
        base64url without padding (43 characters)."""
        message = json.dumps(["hookstream-approval-v1", thread_id, call_id, tool_name, canonical_arguments(arguments)],
                             separators=(",", ":"), ensure_ascii=False).encode()
        digest = hmac.new(self.key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def approval_id(self, thread_id: str, call_id: str, tool_name: str, arguments: Mapping[str, Any] | None) -> str:
        """``approval_<call id>.<signature>``: the approval (and interrupt) id a client echoes."""
        return f"{approval_id(call_id)}.{self.signature(thread_id, call_id, tool_name, arguments)}"

    def verify(self, given: str | None, thread_id: str, call: ToolCallPart) -> bool:
        """Whether ``given`` (an echoed approval id) is this server's signed id of ``call`` in ``thread_id``
        (compared in constant time)."""
        if not given:
            return False
        expected = self.approval_id(thread_id, call.id, call.name, call.arguments)
        return hmac.compare_digest(given.encode(), expected.encode())


_SIGNED_EVENTS = frozenset({Custom, RunFinished})


class SignedApprovals:
    """A stateless server's run stream with signed approval ids: each ``CUSTOM approval-requested``
    ``approvalId`` and the matching ``RUN_FINISHED`` interrupt ids become
    :meth:`ApprovalSigner.approval_id`. Other events pass unchanged; ``cancel`` and ``result`` are the
    stream's."""

    def __init__(self, stream: Any, signer: ApprovalSigner, thread_id: str) -> None:
        self._stream = stream
        self._signer = signer
        self._thread_id = thread_id

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
        ident = self._signer.approval_id(self._thread_id, p.tool_call_id, p.tool_name, p.input)
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
) -> tuple[list[Message], list[dict[str, Any]] | None]:
    """Apply the trust rule (module docstring) to a request: ``messages`` is the conversation the model
    would get (with a store: the stored history plus ``new``, the request's messages the store does not
    hold; without: the request's), ``incoming`` the request's messages as read, ``resume`` its resume
    entries. Returns the conversation without client approvals and the ``resume`` entries for the
    engine (answers to the pending calls, with plain ``approval_<call id>`` ids, plus entries naming
    other interrupts, unchanged), or ``None``. ``frontend_tools`` names the request's client tools: with
    a store, a new ``tool`` result must answer one of them. Raises
    :class:`~hookstream.errors.UntrustedToolCallError`."""
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
    for call in pending_calls(messages):
        answer = _answer(call, given, used, in_messages)
        if new is None and (signer is None or not signer.verify(answer.approval_id if answer else None,
                                                                 thread_id, call)):
            raise UntrustedToolCallError(
                f"tool call {call.id!r} ({call.name}) carries no valid approval id of this server for thread "
                f"{thread_id!r}: echo the approvalId (interrupt id) the server sent with the call")
        if answer is not None and answer.approved is not None:
            payload: dict[str, Any] = {"approved": answer.approved}
            if answer.reason:
                payload["reason"] = answer.reason
            entries.append({"interruptId": approval_id(call.id), "status": "resolved", "payload": payload})
    # Entries naming no pending call pass unchanged: a remote agent's interrupts, or an id the engine
    # refuses (ResumeError) when a call of its own is pending.
    resumed = [*entries, *(e for i, e in enumerate(given) if i not in used)]
    return [_without_approvals(m) for m in messages], resumed or None
