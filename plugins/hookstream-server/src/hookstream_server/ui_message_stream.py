"""The Vercel AI SDK UI message stream protocol: hookstream's AG-UI run as UI message chunks, and the
AI SDK ``useChat`` request as hookstream messages.

Protocol source: the ``ai`` npm package 6.0.326 (pinned in ``tests/e2e/package.json``):
``packages/ai/src/ui-message-stream/ui-message-chunks.ts`` (the chunk schema),
``process-ui-message-stream.ts`` (how a client rebuilds a ``UIMessage`` from the chunks),
``packages/ai/src/ui/http-chat-transport.ts`` (the request body) and ai-sdk.dev "Stream Protocols" /
"UI Message Stream". The AI SDK 5 protocol is the same minus the approval chunks.

**Response** (:func:`to_ui_message_stream`): SSE, one ``data: {json}`` line and a blank line per chunk,
then ``data: [DONE]``; the HTTP response carries ``x-vercel-ai-ui-message-stream: v1``
(:data:`UI_MESSAGE_STREAM_HEADERS`). AG-UI events become chunks (:func:`ui_message_chunks`)::

    RUN_STARTED                      {"type": "start", "messageId"}
    STEP_STARTED                     {"type": "start-step"}
    TEXT_MESSAGE_START/CONTENT/END   {"type": "text-start" | "text-delta" | "text-end", "id", "delta"?,
                                      "providerMetadata"?: {"hookstream": {"messageId"}}}   (start only)
    REASONING_MESSAGE_*              {"type": "reasoning-start" | "reasoning-delta" | "reasoning-end", "id", "delta"?}
    TOOL_CALL_START                  {"type": "tool-input-start", "toolCallId", "toolName"}
    TOOL_CALL_ARGS                   {"type": "tool-input-delta", "toolCallId", "inputTextDelta"}
    TOOL_CALL_END                    {"type": "tool-input-available", "toolCallId", "toolName", "input"}
                                     ({"type": "tool-input-error", ..., "input": raw, "errorText"} when the
                                      arguments are not a JSON object)
    CUSTOM tool-call-repaired        {"type": "tool-input-available", ...} with the repaired name and input
    CUSTOM approval-requested        {"type": "tool-approval-request", "approvalId", "toolCallId"}
    TOOL_CALL_RESULT                 {"type": "tool-output-available", "toolCallId", "output"}
                                     | {"type": "tool-output-error", "toolCallId", "errorText"}
                                     | {"type": "tool-output-denied", "toolCallId"}   (a denied approval)
                                     then {"type": "file", "url", "mediaType"} per result file
    CUSTOM source                    {"type": "source-url", "sourceId", "url", "title"?}
                                     | {"type": "source-document", "sourceId", "mediaType", "title"}
    CUSTOM file                      {"type": "file", "url" (a data: URL for bytes), "mediaType"}
    other CUSTOM (loop-stopped...)   {"type": "data-<name>", "data": value, "transient": true}
    STEP_FINISHED                    {"type": "finish-step"}   (open text and reasoning parts ended first)
    RUN_FINISHED                     {"type": "finish", "finishReason", "messageMetadata":
                                      {"hookstream": {"threadId", "runId", "outcome", "usage"?, "interrupts": [...]}}}
                                     (outcome cancelled: {"type": "abort", "reason": "cancelled"})
    RUN_ERROR                        {"type": "error", "errorText"}, {"type": "finish", "finishReason": "error"}

``finishReason`` is hookstream's normalised one in the AI SDK's spelling (``stop``, ``length``,
``content-filter``, ``tool-calls``, ``error``, else ``other``); a run that ends waiting for an approval
finishes with ``tool-calls``. A tool output that is JSON text of an object or array is sent parsed.
The ``resume`` step of a resumed run (the engine replays the pending calls) is not sent: an AI SDK
client continues its assistant message (``start.messageId`` is that message's id), which already holds
those tool parts; its ``TOOL_CALL_RESULT``\\ s are. Events with no UI message counterpart (state,
activity, snapshots, ``RAW``) are not sent.

**Request** (:func:`parse_chat_request`): the body ``DefaultChatTransport`` POSTs (AI SDK 5 and 6)::

    {"id": chat id, "messages": [UIMessage...], "trigger": "submit-message" | "regenerate-message",
     "messageId"?: str, ...extra body fields}
    UIMessage = {"id", "role": "system" | "user" | "assistant", "metadata"?, "parts": [part...]}

Parts: ``text`` and ``reasoning`` (``text``), ``file`` (``mediaType``, ``url``: a ``data:`` URL or
http(s), ``filename``?), ``step-start``, and tool parts: ``tool-<name>`` or ``dynamic-tool``
(``toolName``) with ``toolCallId``, ``state``, ``input``, ``output``, ``errorText``, and in AI SDK 6
``approval: {"id", "approved"?, "reason"?}``. An assistant UIMessage holds a whole multi-step turn; it
becomes one assistant message per step (split at ``step-start``, or where text follows tool results)
followed by a ``tool`` message with the results of that step's calls: state ``output-available`` (the
output), ``output-error`` (error result), ``output-denied`` (the denial). Calls in states
``input-available``, ``approval-requested`` and ``approval-responded`` have no result; an
``approval-responded`` answer is kept in the call's ``provider_metadata["hookstream"]["approval"]``
(``{"approved", "reason"?, "id"?}``, ``id`` the approval id the client echoes) and in
:attr:`ChatRequest.approvals`; a server turns the answers of calls its model made into the engine's
``resume=`` for the calls still pending (``hookstream_server.trust``), so the approved tool runs, or is
denied, and the provider receives a paired history. ``input-streaming`` parts, sources and
``data-*`` parts are not sent to the model. Assistant message ids: a step whose first text part
carries ``providerMetadata.hookstream.messageId`` (what :func:`ui_message_chunks` sends) gets that id,
so a conversation store recognises the step it saved; otherwise the first step gets the UIMessage id.

Thread safety: pure functions and per-call generators; nothing is shared.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

import attrs
from hookstream import FilePart, Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.errors import AGUIInputError, MalformedCustomEventError
from hookstream.events import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    BaseEvent,
    Custom,
    FilePayload,
    ReasoningEnd,
    ReasoningMessageChunk,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    RunError,
    RunFinished,
    SourcePayload,
    StepFinished,
    StepStarted,
    TextMessageChunk,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallChunk,
    ToolCallEnd,
    ToolCallRepairedPayload,
    ToolCallResult,
    ToolCallStart,
    Usage,
    parse_custom,
)
from hookstream.plugin import approval_id, parse_arguments

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "ChatRequest",
    "messages_from_ui",
    "parse_chat_request",
    "pending_calls",
    "resume_entries",
    "to_ui_message_stream",
    "ui_message_chunks",
]

UI_MESSAGE_STREAM_HEADERS: list[tuple[str, str]] = [
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
    # ai's UI_MESSAGE_STREAM_HEADERS; its "connection: keep-alive" is hop-by-hop, which WSGI forbids.
    ("x-vercel-ai-ui-message-stream", "v1"),
]
"""The response headers of a UI message stream (``x-vercel-ai-ui-message-stream: v1``)."""

_FINISH_REASONS = {"stop": "stop", "length": "length", "content_filter": "content-filter",
                   "tool_calls": "tool-calls", "error": "error"}
_QUIET_CUSTOM = frozenset({ApprovalRespondedPayload.name, "tool-input-available"})  # shown by other chunks
_ENGINE_CUSTOM = frozenset({ApprovalRequestedPayload.name, ToolCallRepairedPayload.name, SourcePayload.name,
                            FilePayload.name})
_DONE = b"data: [DONE]\n\n"


def _usage(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    fields = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
              "totalTokens": usage.total_tokens, "reasoningTokens": usage.reasoning_tokens,
              "cachedInputTokens": usage.cached_input_tokens, "cacheWriteInputTokens": usage.cache_write_tokens}
    return {k: v for k, v in fields.items() if v is not None} or None


def _output(content: str) -> Any:
    """A tool output as the UI receives it: JSON text of an object or array parsed, else the text."""
    if content[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            pass
    return content


def _file_url(value: dict[str, Any]) -> tuple[str, str] | None:
    """(url, media type) of a ``CUSTOM file`` value or a ``TOOL_CALL_RESULT.files`` entry."""
    try:
        part = FilePayload.from_value(value).part
    except MalformedCustomEventError:
        return None
    return part.data_url(), part.media_type


class _Writer:
    """The state of one stream's translation (see the module docstring)."""

    def __init__(self, message_id: str | None, denied: Iterable[str], replay_resumed_calls: bool) -> None:
        self.message_id = message_id or f"msg-{uuid.uuid4().hex}"
        self.denied = set(denied)
        self.replay = replay_resumed_calls
        self.started = False
        self.ended = False
        self.in_resume = False
        self.texts: list[str] = []  # open text part ids, in order
        self.user_texts: set[str] = set()  # TEXT_MESSAGE_START role user: not part of the answer
        self.reasoning: list[str] = []
        self.tools: dict[str, str] = {}  # tool call id -> name
        self.args: dict[str, str] = {}  # tool call id -> arguments so far, for calls without TOOL_CALL_END yet
        self.last_text: str | None = None
        self.last_call: str | None = None

    # -- helpers ---------------------------------------------------------------------------------
    def start(self) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        return [{"type": "start", "messageId": self.message_id}]

    def close_parts(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"type": "text-end", "id": t} for t in self.texts]
        out += [{"type": "reasoning-end", "id": r} for r in self.reasoning]
        out += self.close_calls()
        self.texts, self.reasoning = [], []
        return out

    def close_calls(self) -> list[dict[str, Any]]:
        """``tool-input-available`` for calls whose arguments came as chunks and never ended."""
        out = [self.input_available(cid, None) for cid in list(self.args)]
        return [c for c in out if c]

    def text_start(self, ident: str) -> list[dict[str, Any]]:
        self.last_text = ident
        if ident in self.texts:
            return []
        self.texts.append(ident)
        return [{"type": "text-start", "id": ident, "providerMetadata": {"hookstream": {"messageId": ident}}}]

    def text_end(self, ident: str) -> list[dict[str, Any]]:
        if ident not in self.texts:
            return []
        self.texts.remove(ident)
        return [{"type": "text-end", "id": ident}]

    def reasoning_start(self, ident: str) -> list[dict[str, Any]]:
        if ident in self.reasoning:
            return []
        self.reasoning.append(ident)
        return [{"type": "reasoning-start", "id": ident}]

    def reasoning_end(self, ident: str) -> list[dict[str, Any]]:
        if ident not in self.reasoning:
            return []
        self.reasoning.remove(ident)
        return [{"type": "reasoning-end", "id": ident}]

    def call_start(self, call_id: str, name: str) -> list[dict[str, Any]]:
        self.tools[call_id] = name
        self.args[call_id] = ""
        self.last_call = call_id
        return [{"type": "tool-input-start", "toolCallId": call_id, "toolName": name}]

    def input_available(self, call_id: str, parsed: Any) -> dict[str, Any] | None:
        raw = self.args.pop(call_id, None)
        name = self.tools.get(call_id)
        if name is None:
            return None
        if parsed is None and raw is not None:
            parsed = parse_arguments(raw)
            if parsed is None:
                return {"type": "tool-input-error", "toolCallId": call_id, "toolName": name, "input": raw,
                        "errorText": "the tool arguments are not a JSON object"}
        return {"type": "tool-input-available", "toolCallId": call_id, "toolName": name,
                "input": parsed if parsed is not None else {}}

    # -- the mapping -----------------------------------------------------------------------------
    def chunks(self, ev: BaseEvent) -> list[dict[str, Any]]:
        if self.ended:
            return []
        if self.in_resume:
            replayed = self.resumed(ev)
            if replayed is not None:
                return replayed
        out = self.start()  # RUN_STARTED, or the first event of a stream without one
        handler = _CHUNK_HANDLERS.get(type(ev))
        if handler is None:
            return out
        chunks = handler(self, ev)
        return out + chunks if out else chunks

    def resumed(self, ev: BaseEvent) -> list[dict[str, Any]] | None:
        """An event of the engine's replay of the calls a resumed run continues: its chunks, or ``None``
        to map it as any other event (when replaying)."""
        if isinstance(ev, StepFinished):
            self.in_resume = False
            return [*self.close_parts(), {"type": "finish-step"}] if self.replay else []
        if isinstance(ev, ToolCallStart):
            self.tools[ev.tool_call_id] = ev.tool_call_name
        return None if self.replay else []

    # One handler per event class (see _CHUNK_HANDLERS): the chunks after ``start``.
    def step_started(self, ev: StepStarted) -> list[dict[str, Any]]:
        if ev.step_name == "resume":
            self.in_resume = True
            if not self.replay:
                return []
        return [{"type": "start-step"}]

    def step_finished(self, ev: StepFinished) -> list[dict[str, Any]]:
        return [*self.close_parts(), {"type": "finish-step"}]

    def text_message_start(self, ev: TextMessageStart) -> list[dict[str, Any]]:
        if ev.role != "assistant":
            self.user_texts.add(ev.message_id)
            return []
        return self.text_start(ev.message_id)

    def text_message_content(self, ev: TextMessageContent) -> list[dict[str, Any]]:
        if ev.message_id in self.user_texts or not ev.delta:
            return []
        return [*self.text_start(ev.message_id), {"type": "text-delta", "id": ev.message_id, "delta": ev.delta}]

    def text_message_end(self, ev: TextMessageEnd) -> list[dict[str, Any]]:
        return self.text_end(ev.message_id)

    def text_message_chunk(self, ev: TextMessageChunk) -> list[dict[str, Any]]:
        ident = ev.message_id or self.last_text or f"text-{uuid.uuid4().hex[:12]}"
        if ev.role not in (None, "assistant"):
            self.user_texts.add(ident)
        if ident in self.user_texts:
            return []
        out = self.text_start(ident)
        return out + ([{"type": "text-delta", "id": ident, "delta": ev.delta}] if ev.delta else [])

    def reasoning_message_start(self, ev: ReasoningMessageStart) -> list[dict[str, Any]]:
        return self.reasoning_start(ev.message_id)

    def reasoning_delta(self, ev: ReasoningMessageContent | ReasoningMessageChunk) -> list[dict[str, Any]]:
        ident = ev.message_id or (self.reasoning[-1] if self.reasoning else f"reasoning-{uuid.uuid4().hex[:12]}")
        out = self.reasoning_start(ident)
        return out + ([{"type": "reasoning-delta", "id": ident, "delta": ev.delta}] if ev.delta else [])

    def reasoning_message_end(self, ev: ReasoningMessageEnd | ReasoningEnd) -> list[dict[str, Any]]:
        return self.reasoning_end(ev.message_id)

    def tool_call_start(self, ev: ToolCallStart) -> list[dict[str, Any]]:
        return self.call_start(ev.tool_call_id, ev.tool_call_name)

    def tool_call_args(self, ev: ToolCallArgs) -> list[dict[str, Any]]:
        if ev.tool_call_id in self.args:
            self.args[ev.tool_call_id] += ev.delta
        if not ev.delta:
            return []
        return [{"type": "tool-input-delta", "toolCallId": ev.tool_call_id, "inputTextDelta": ev.delta}]

    def tool_call_chunk(self, ev: ToolCallChunk) -> list[dict[str, Any]]:
        call_id = ev.tool_call_id or self.last_call
        if call_id is None:
            return []
        out: list[dict[str, Any]] = []
        if call_id not in self.tools and ev.tool_call_name:
            out += self.call_start(call_id, ev.tool_call_name)
        if ev.delta and call_id in self.args:
            self.args[call_id] += ev.delta
            out.append({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": ev.delta})
        return out

    def tool_call_end(self, ev: ToolCallEnd) -> list[dict[str, Any]]:
        chunk = self.input_available(ev.tool_call_id, ev.input)
        return [chunk] if chunk else []

    def run_error(self, ev: RunError) -> list[dict[str, Any]]:
        self.ended = True
        return [*self.close_parts(), {"type": "error", "errorText": ev.message},
                {"type": "finish", "finishReason": "error"}]

    def result(self, ev: ToolCallResult) -> list[dict[str, Any]]:
        cid = ev.tool_call_id
        out: list[dict[str, Any]] = []
        if cid in self.args:  # a result before the call's TOOL_CALL_END: its input is complete now
            chunk = self.input_available(cid, None)
            out += [chunk] if chunk else []
        if cid in self.denied:
            out.append({"type": "tool-output-denied", "toolCallId": cid})
        elif ev.error is not None:
            out.append({"type": "tool-output-error", "toolCallId": cid, "errorText": ev.error or ev.content})
        else:
            out.append({"type": "tool-output-available", "toolCallId": cid, "output": _output(ev.content)})
        for f in ev.files or []:
            found = _file_url(f) if isinstance(f, dict) else None
            if found is not None:
                out.append({"type": "file", "url": found[0], "mediaType": found[1]})
        return out

    def custom(self, ev: Custom) -> list[dict[str, Any]]:
        try:
            payload = parse_custom(ev)
        except MalformedCustomEventError:
            payload = None
        if isinstance(payload, ApprovalRequestedPayload):
            return [{"type": "tool-approval-request", "approvalId": payload.approval_id,
                     "toolCallId": payload.tool_call_id}]
        if isinstance(payload, ApprovalRespondedPayload):
            if not payload.approved:
                self.denied.add(payload.tool_call_id)
            return []
        if isinstance(payload, ToolCallRepairedPayload):
            self.tools[payload.tool_call_id] = payload.tool_name
            self.args.pop(payload.tool_call_id, None)
            return [{"type": "tool-input-available", "toolCallId": payload.tool_call_id,
                     "toolName": payload.tool_name, "input": payload.input if payload.input is not None else {}}]
        if isinstance(payload, SourcePayload):
            src = payload.part
            if src.source_type == "url" and src.url is not None:
                chunk: dict[str, Any] = {"type": "source-url", "sourceId": src.id, "url": src.url}
                if src.title is not None:
                    chunk["title"] = src.title
                return [chunk]
            return [{"type": "source-document", "sourceId": src.id, "mediaType": "text/plain",
                     "title": src.title or src.cited_text or src.id}]
        if isinstance(payload, FilePayload):
            return [{"type": "file", "url": payload.part.data_url(), "mediaType": payload.part.media_type}]
        if ev.name in _QUIET_CUSTOM or (payload is None and ev.name in _ENGINE_CUSTOM):
            return []  # shown by other chunks, or malformed
        return [{"type": f"data-{ev.name}", "data": ev.value, "transient": True}]

    def finished(self, ev: RunFinished) -> list[dict[str, Any]]:
        self.ended = True
        out = self.close_parts()
        outcome = ev.outcome.type if ev.outcome is not None else "success"
        if outcome == "cancelled":
            return [*out, {"type": "abort", "reason": "cancelled"}]
        meta: dict[str, Any] = {"threadId": ev.thread_id, "runId": ev.run_id, "outcome": outcome}
        usage = _usage(ev.usage)
        if usage is not None:
            meta["usage"] = usage
        # Always present: a client merges metadata into the message it continues, so an answered
        # interrupt must be replaced by the (empty) list of the run that answered it.
        meta["interrupts"] = [{"id": i.id, "reason": i.reason, "toolCallId": i.tool_call_id}
                              for i in (ev.outcome.interrupts if ev.outcome is not None else None) or []]
        chunk: dict[str, Any] = {"type": "finish", "messageMetadata": {"hookstream": meta}}
        if ev.finish_reason is not None:
            chunk["finishReason"] = _FINISH_REASONS.get(ev.finish_reason, "other")
        return [*out, chunk]

    def end(self) -> list[dict[str, Any]]:
        """What a stream that stopped without ``RUN_FINISHED``/``RUN_ERROR`` still owes its reader."""
        if self.ended:
            return []
        self.ended = True
        return [*self.start(), *self.close_parts(), {"type": "finish"}]


# Event class -> its chunks (exact classes: one dict lookup per event); the others map to nothing.
_CHUNK_HANDLERS: dict[type[BaseEvent], Callable[[_Writer, Any], list[dict[str, Any]]]] = {
    TextMessageContent: _Writer.text_message_content,
    ToolCallArgs: _Writer.tool_call_args,
    ReasoningMessageContent: _Writer.reasoning_delta,
    StepStarted: _Writer.step_started,
    StepFinished: _Writer.step_finished,
    TextMessageStart: _Writer.text_message_start,
    TextMessageEnd: _Writer.text_message_end,
    TextMessageChunk: _Writer.text_message_chunk,
    ReasoningMessageStart: _Writer.reasoning_message_start,
    ReasoningMessageChunk: _Writer.reasoning_delta,
    ReasoningMessageEnd: _Writer.reasoning_message_end,
    ReasoningEnd: _Writer.reasoning_message_end,
    ToolCallStart: _Writer.tool_call_start,
    ToolCallChunk: _Writer.tool_call_chunk,
    ToolCallEnd: _Writer.tool_call_end,
    ToolCallResult: _Writer.result,
    Custom: _Writer.custom,
    RunFinished: _Writer.finished,
    RunError: _Writer.run_error,
}


def ui_message_chunks(
    events: Iterable[BaseEvent],
    *,
    message_id: str | None = None,
    denied: Iterable[str] = (),
    replay_resumed_calls: bool = False,
) -> Iterator[dict[str, Any]]:
    """The UI message chunks (JSON objects) of ``events``, a run or a model call's AG-UI events (see
    the module docstring for the mapping). ``message_id`` goes into the ``start`` chunk (default: a
    fresh ``msg-<hex>``; pass the id of the assistant message a client continues after an approval).
    ``denied`` are tool call ids whose error result is a denied approval (``tool-output-denied``).
    ``replay_resumed_calls`` also sends the calls a resumed run replays (its ``resume`` step), for a
    reader that does not hold them already. A stream without a terminal event still ends with
    ``finish``; nothing follows ``finish``/``error``."""
    writer = _Writer(message_id, denied, replay_resumed_calls)
    for ev in events:
        yield from writer.chunks(ev)
    yield from writer.end()


def _frame(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def to_ui_message_stream(
    events: Iterable[BaseEvent],
    *,
    message_id: str | None = None,
    denied: Iterable[str] = (),
    replay_resumed_calls: bool = False,
) -> Generator[bytes, None, None]:
    """Frame ``events`` as the AI SDK UI message stream: ``data: {chunk JSON}\\n\\n`` per chunk of
    :func:`ui_message_chunks` (same keyword arguments), then ``data: [DONE]\\n\\n``. Send it with
    :data:`UI_MESSAGE_STREAM_HEADERS`. Closing the generator closes ``events`` (a run is cancelled)."""
    source = iter(events)
    try:
        for chunk in ui_message_chunks(source, message_id=message_id, denied=denied,
                                       replay_resumed_calls=replay_resumed_calls):
            yield _frame(chunk)
        yield _DONE
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


# -- the useChat request -------------------------------------------------------------------------------


@attrs.define(slots=True)
class ChatRequest:
    """A decoded AI SDK chat request. ``chat_id`` is the body's ``id`` (hookstream's thread id);
    ``messages`` the conversation as hookstream messages; ``approvals`` maps a tool call id to the
    answer an ``approval-responded`` tool part carries; ``denied`` the calls those answers deny;
    ``continues`` is the id of the assistant message the answer continues (the last message when it is
    the assistant's), else ``None``; ``extra`` the body's other fields (``DefaultChatTransport``'s
    ``body`` option)."""

    chat_id: str
    messages: list[Message]
    trigger: str = "submit-message"
    message_id: str | None = None
    approvals: dict[str, bool] = attrs.Factory(dict)
    continues: str | None = None
    extra: dict[str, Any] = attrs.Factory(dict)

    @property
    def denied(self) -> set[str]:
        return {cid for cid, ok in self.approvals.items() if not ok}


def _texts(parts: Sequence[Any], where: str) -> str:
    out = []
    for i, p in enumerate(parts):
        if isinstance(p, dict) and p.get("type") == "text":
            if not isinstance(p.get("text"), str):
                raise AGUIInputError(f"{where}.parts[{i}]: a text part needs text")
            out.append(p["text"])
    return "".join(out)


def _file(p: dict[str, Any], where: str) -> FilePart:
    url, mime = p.get("url"), p.get("mediaType")
    if not isinstance(url, str):
        raise AGUIInputError(f"{where}: a file part needs a url (a data: URL or http(s))")
    try:
        f = FilePart.from_url(url, mime if isinstance(mime, str) and mime else None)
    except ValueError as exc:
        raise AGUIInputError(f"{where}: {exc}") from None
    if isinstance(mime, str) and mime:
        f.media_type = mime
    if isinstance(p.get("filename"), str):
        f.filename = p["filename"]
    return f


def _tool_name(p: dict[str, Any]) -> str | None:
    kind = p.get("type")
    if kind == "dynamic-tool":
        name = p.get("toolName")
        return name if isinstance(name, str) else None
    return kind[len("tool-"):] if isinstance(kind, str) and kind.startswith("tool-") else None


def _denial(name: str, reason: Any) -> str:
    text = f"Denied: the user did not approve running {name!r}."
    return f"{text} Reason: {reason}" if isinstance(reason, str) and reason else text


@attrs.define(slots=True)
class _Step:
    parts: list[Part] = attrs.Factory(list)
    results: list[ToolResultPart] = attrs.Factory(list)
    ident: str | None = None


def _assistant(ui: dict[str, Any], where: str, approvals: dict[str, bool]) -> list[Message]:
    steps: list[_Step] = [_Step()]
    for i, p in enumerate(ui.get("parts") or []):
        at = f"{where}.parts[{i}]"
        if not isinstance(p, dict):
            raise AGUIInputError(f"{at} must be an object")
        kind = p.get("type")
        step = steps[-1]
        if kind == "step-start":
            if step.parts or step.results:
                steps.append(_Step())
        elif kind in ("text", "reasoning"):
            if step.results:
                step = _Step()  # text after tool results without a step-start: the model's next step
                steps.append(step)
            _text_part(step, p, kind, at)
        elif kind == "file":
            step.parts.append(_file(p, at))
        elif (name := _tool_name(p)) is not None:
            _tool_part(step, p, name, at, approvals)
        # sources, data-* parts and unknown part types are UI-only
    out: list[Message] = []
    ui_id = ui.get("id") if isinstance(ui.get("id"), str) else None
    for n, step in enumerate(steps):
        if not step.parts and not step.results:
            continue
        ident = step.ident or (ui_id if n == 0 else None)
        out.append(Message("assistant", step.parts, id=ident))
        if step.results:
            out.append(Message("tool", list[Part](step.results)))
    return out


def _text_part(step: _Step, p: dict[str, Any], kind: str, at: str) -> None:
    """A ``text`` or ``reasoning`` part; the first one naming hookstream's message id names the step."""
    text = p.get("text")
    if not isinstance(text, str):
        raise AGUIInputError(f"{at}: a {kind} part needs text")
    meta = p.get("providerMetadata")
    hs = meta.get("hookstream") if isinstance(meta, dict) else None
    if step.ident is None and isinstance(hs, dict) and isinstance(hs.get("messageId"), str):
        step.ident = hs["messageId"]
    if text:
        step.parts.append(TextPart(text) if kind == "text" else ReasoningPart(text))


def _tool_part(step: _Step, p: dict[str, Any], name: str, at: str, approvals: dict[str, bool]) -> None:
    """A ``tool-*`` or ``dynamic-tool`` part: the call, and its result when the part has one."""
    call_id, state = p.get("toolCallId"), p.get("state")
    if not isinstance(call_id, str) or not call_id:
        raise AGUIInputError(f"{at}: a tool part needs a toolCallId")
    if state == "input-streaming" or not name:
        return  # the model never finished this call
    arguments, raw = _tool_input(p)
    approval = p.get("approval")
    metadata = None
    if isinstance(approval, dict) and (isinstance(approval.get("approved"), bool)
                                       or isinstance(approval.get("id"), str)):
        # The approval id goes along: a server without a store checks the signature it carries.
        answer: dict[str, Any] = {}
        if isinstance(approval.get("approved"), bool):
            answer["approved"] = approval["approved"]
            if state == "approval-responded":
                approvals[call_id] = bool(approval["approved"])
        if isinstance(approval.get("reason"), str):
            answer["reason"] = approval["reason"]
        if isinstance(approval.get("id"), str):
            answer["id"] = approval["id"]
        metadata = {"hookstream": {"approval": answer}}
    step.parts.append(ToolCallPart(call_id, name, arguments, raw, provider_metadata=metadata))
    result = _tool_part_result(p, at, call_id, name, state, approval)
    if result is not None:
        step.results.append(result)


def _tool_input(p: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """A tool part's (arguments, raw arguments text); arguments ``None`` when the input is not an object."""
    raw_input = p.get("input")
    if isinstance(raw_input, dict):
        return raw_input, json.dumps(raw_input, ensure_ascii=False)
    if raw_input is None and p.get("rawInput") is None:
        return {}, "{}"
    # text input, or the raw input of a tool-input-error
    source = raw_input if raw_input is not None else p.get("rawInput")
    return None, source if isinstance(source, str) else json.dumps(source)


def _tool_part_result(p: dict[str, Any], at: str, call_id: str, name: str, state: Any,
                      approval: Any) -> ToolResultPart | None:
    if state == "output-available":
        return ToolResultPart(call_id, name, p.get("output"))
    if state == "output-error":
        error = p.get("errorText")
        return ToolResultPart(call_id, name, error if isinstance(error, str) else "Error", is_error=True)
    if state == "output-denied":
        reason = approval.get("reason") if isinstance(approval, dict) else None
        return ToolResultPart(call_id, name, _denial(name, reason), is_error=True)
    if state not in ("input-available", "approval-requested", "approval-responded"):
        raise AGUIInputError(f"{at}: unknown tool part state {state!r}")
    return None


def messages_from_ui(ui_messages: Any, approvals: dict[str, bool] | None = None) -> list[Message]:
    """AI SDK ``UIMessage``\\ s to hookstream messages (see the module docstring). The answers of
    ``approval-responded`` tool parts go into ``approvals`` (tool call id -> approved) when given.
    Raises :class:`~hookstream.errors.AGUIInputError` naming the bad message or part."""
    if not isinstance(ui_messages, list):
        raise AGUIInputError(f"messages must be a list of UIMessages, got {type(ui_messages).__name__}")
    found: dict[str, bool] = {} if approvals is None else approvals
    out: list[Message] = []
    for i, ui in enumerate(ui_messages):
        where = f"messages[{i}]"
        if not isinstance(ui, dict):
            raise AGUIInputError(f"{where} must be an object")
        parts = ui.get("parts")
        if parts is None and isinstance(ui.get("content"), str):  # an AI SDK 4 style message
            parts = [{"type": "text", "text": ui["content"]}]
            ui = {**ui, "parts": parts}
        if not isinstance(parts, list):
            raise AGUIInputError(f"{where}: parts must be a list")
        role = ui.get("role")
        ident = ui.get("id") if isinstance(ui.get("id"), str) and ui.get("id") else None
        if role == "system":
            out.append(Message("system", [TextPart(_texts(parts, where))], id=ident))
        elif role == "user":
            content: list[Part] = []
            for j, p in enumerate(parts):
                if not isinstance(p, dict):
                    raise AGUIInputError(f"{where}.parts[{j}] must be an object")
                if p.get("type") == "text":
                    if not isinstance(p.get("text"), str):
                        raise AGUIInputError(f"{where}.parts[{j}]: a text part needs text")
                    content.append(TextPart(p["text"]))
                elif p.get("type") == "file":
                    content.append(_file(p, f"{where}.parts[{j}]"))
            if content:
                out.append(Message("user", content, id=ident))
        elif role == "assistant":
            out.extend(_assistant(ui, where, found))
        else:
            raise AGUIInputError(f"{where}: unknown role {role!r}")
    return out


def parse_chat_request(doc: Any) -> ChatRequest:
    """Read a decoded AI SDK chat request body (``{"id", "messages", "trigger", "messageId"?}``).
    Raises :class:`~hookstream.errors.AGUIInputError` naming the bad field."""
    if not isinstance(doc, dict):
        raise AGUIInputError("the body must be a JSON object (AI SDK chat request)")
    chat_id = doc.get("id")
    if not isinstance(chat_id, str) or not chat_id:
        raise AGUIInputError("id (the chat id) must be a non-empty string")
    trigger = doc.get("trigger", "submit-message")
    if not isinstance(trigger, str):
        raise AGUIInputError("trigger must be a string")
    message_id = doc.get("messageId")
    raw = doc.get("messages")
    raw = [] if raw is None else raw
    approvals: dict[str, bool] = {}
    messages = messages_from_ui(raw, approvals)
    last = raw[-1] if raw and isinstance(raw[-1], dict) else None
    continues = last.get("id") if last is not None and last.get("role") == "assistant" else None
    extra = {k: v for k, v in doc.items() if k not in ("id", "messages", "trigger", "messageId")}
    return ChatRequest(chat_id, messages, trigger, message_id if isinstance(message_id, str) else None,
                       approvals, continues if isinstance(continues, str) and continues else None, extra)


def pending_calls(messages: Sequence[Message]) -> list[ToolCallPart]:
    """The tool calls of the last assistant message no tool message answers, when only tool messages
    follow it (what a resumed run continues); else ``[]``."""
    ai = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
    if ai is None or any(m.role != "tool" for m in messages[ai + 1:]):
        return []
    done = {r.tool_call_id for m in messages[ai + 1:] for r in m.tool_results}
    return [c for c in messages[ai].tool_calls if c.id not in done]


def resume_entries(messages: Sequence[Message], approvals: dict[str, bool]) -> list[dict[str, Any]] | None:
    """The AG-UI ``resume`` entries (``[{"interruptId": "approval_<call id>", "status": "resolved",
    "payload": {"approved": bool}}]``, what :meth:`hookstream.Resume.coerce` reads) answering the
    pending calls of ``messages`` that ``approvals`` answers; ``None`` when there are none."""
    entries = [{"interruptId": approval_id(c.id), "status": "resolved", "payload": {"approved": approvals[c.id]}}
               for c in pending_calls(messages) if c.id in approvals]
    return entries or None
