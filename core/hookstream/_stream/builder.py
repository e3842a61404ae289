"""StreamBuilder: keeps the adapter grammar so a provider adapter only maps its wire events.

An adapter calls ``text(delta)``, ``reasoning(delta)``, ``tool_start(id, name)``,
``tool_args(id, delta)``, ``tool_end(id)``, ``source(SourcePart)`` (a citation),
``file(FilePart)`` (a generated file), ``raw(event, source)`` (a provider event it does not
understand: never drop one silently) and finally ``finish(..., response_id=, model=)`` or
``error(...)``; each returns
the AG-UI events to yield, opening and closing ``TEXT_MESSAGE_*`` / ``REASONING_*`` blocks as needed so
that every stream obeys ``RUN_STARTED Content* (RUN_FINISHED | RUN_ERROR)`` with all blocks closed
before ``RUN_FINISHED``. Text and reasoning blocks do not interleave: starting one closes the other.
Tool calls may interleave with each other (by id).

Every event it returns is valid AG-UI as a plain client reads it (``tests/test_agui_schema.py``):

* No empty content. ``text("")``, ``reasoning("")`` and ``tool_args(id, "")`` return nothing, and do
  not open a block either: a message with no content is not created for an empty delta (an adapter
  with provider data to keep and no text carries it on another event, e.g. a
  ``REASONING_ENCRYPTED_VALUE``, as the Anthropic and Responses adapters do for provider-executed tools).
* Arguments on the wire. A tool call ended with ``input`` (arguments given whole) after no argument
  text streamed gets one ``TOOL_CALL_ARGS`` with that input as JSON text before its ``TOOL_CALL_END``,
  so a client that only joins ``TOOL_CALL_ARGS`` deltas (the AG-UI clients) sees the arguments too.

Finish reasons: one policy for every adapter (:meth:`StreamBuilder.normalise_finish_reason`, see
``docs/finish-reasons.md``). A provider gives only its table of raw values (``finish_reasons``, e.g.
Anthropic ``{"end_turn": "stop", "tool_use": "tool_calls", ...}``) and the normalised value of a raw one
the table does not know (``unknown_finish_reason``); the rules around the table are shared.

Thread safety: one builder per model call, used by the thread that parses that call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._custom import FilePayload, SourcePayload
from .._events import (
    BaseEvent,
    Raw,
    ReasoningEnd,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from .._ids import new_id
from .._messages import FilePart, SourcePart
from .provider import CallContext

__all__ = ["FINISH_REASONS", "StreamBuilder", "new_id"]

FINISH_REASONS: tuple[str, ...] = ("stop", "length", "content_filter", "tool_calls", "error")
"""The normalised finish reasons (``hookstream.events.FinishReason``), what every provider table maps to."""


class StreamBuilder:
    """Grammar bookkeeping for one model call. Every method returns a list of events to yield (empty
    when there is nothing to send), in the order to yield them: ``yield from builder.text(delta)``.

    ``context`` is the call's :class:`~hookstream.plugin.CallContext` (the one ``parse_stream`` is given).
    ``finish_reasons`` is the provider's table of raw finish reasons (its wire values) -> normalised
    ones, and ``unknown_finish_reason`` the normalised value of a raw one the table lacks (``"stop"``,
    or ``"error"`` for a provider whose unlisted values are faults); :meth:`finish_reason` applies them
    with the shared rules. Raises :class:`ValueError` for a value that is not in :data:`FINISH_REASONS`.
    """

    # A dict so autodoc documents each public attribute (docs/hooks.rst lists every member).
    __slots__ = {
        "_reasoning_id": "",
        "_streamed": "",
        "_text_id": "",
        "closed": "Whether :meth:`finish` or :meth:`error` ran (the stream is over for this builder).",
        "context": "The call's :class:`~hookstream.plugin.CallContext`, whose ids go on ``RUN_STARTED`` and "
                   "``RUN_FINISHED``.",
        "finish_reasons": "The provider's table of raw finish reasons -> normalised ones (:data:`FINISH_REASONS`), "
                          "read by :meth:`finish_reason`.",
        "open_tools": "Ids of the tool calls started and not yet ended, mapped to their names, in start order.",
        "started_tools": "Ids of every tool call started in this call, ended or not (to tell a new call from a "
                         "repeated one).",
        "unknown_finish_reason": "The normalised finish reason of a raw one :attr:`finish_reasons` does not know.",
    }

    def __init__(
        self,
        context: CallContext,
        finish_reasons: Mapping[str, str] | None = None,
        unknown_finish_reason: str = "stop",
    ) -> None:
        self.context = context
        self.finish_reasons: Mapping[str, str] = finish_reasons if finish_reasons is not None else {}
        self.unknown_finish_reason = unknown_finish_reason
        bad = {unknown_finish_reason, *self.finish_reasons.values()} - set(FINISH_REASONS)
        if bad:
            raise ValueError(f"finish reasons must map to {FINISH_REASONS}, not {sorted(bad)}")
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self.open_tools: dict[str, str] = {}  # id -> name, in start order
        self._streamed: dict[str, int] = {}  # id -> characters of argument text sent, for open calls
        self.started_tools: set[str] = set()
        self.closed = False

    def start(self) -> list[BaseEvent]:
        """``RUN_STARTED`` with the call's thread and run ids: the first event of every adapter stream, yielded
        before anything else (even before a provider error arrives)."""
        return [RunStarted(self.context.thread_id, self.context.run_id)]

    # -- text -----------------------------------------------------------------------------------
    def text(self, delta: str, metadata: dict[str, Any] | None = None) -> list[BaseEvent]:
        """``TEXT_MESSAGE_CONTENT`` with ``delta`` (a piece of the answer); opens a text message
        first (``TEXT_MESSAGE_START``, carrying ``metadata``), closing open reasoning, when none is open.
        Consecutive calls add to the same message until :meth:`end_text` or another block starts.
        Nothing for an empty ``delta``: no empty content event, and no message opened (``metadata`` with
        it is not sent)."""
        if not delta:
            return []
        mid = self._text_id
        if mid is not None:
            return [TextMessageContent(mid, delta)]
        out = self.end_reasoning()
        mid = self._text_id = new_id("msg")
        out.append(TextMessageStart(mid, metadata=metadata))
        out.append(TextMessageContent(mid, delta))
        return out

    def end_text(self, metadata: dict[str, Any] | None = None) -> list[BaseEvent]:
        """Close the open text message (``TEXT_MESSAGE_END``, carrying ``metadata`` such as a Gemini
        ``thoughtSignature``); nothing when none is open."""
        if self._text_id is None:
            return []
        ev = TextMessageEnd(self._text_id, metadata=metadata)
        self._text_id = None
        return [ev]

    # -- reasoning ------------------------------------------------------------------------------
    def reasoning(self, delta: str, metadata: dict[str, Any] | None = None) -> list[BaseEvent]:
        """``REASONING_MESSAGE_CONTENT`` with ``delta`` (the model's thinking, as text); opens a reasoning block
        first (``REASONING_START`` and ``REASONING_MESSAGE_START``, carrying ``metadata``), closing an open
        text message, when none is open. Nothing for an empty ``delta`` (as :meth:`text`)."""
        if not delta:
            return []
        rid = self._reasoning_id
        if rid is not None:
            return [ReasoningMessageContent(rid, delta)]
        out = self.end_text()
        rid = self._reasoning_id = new_id("rsn")
        out.append(ReasoningStart(rid))
        out.append(ReasoningMessageStart(rid, metadata=metadata))
        out.append(ReasoningMessageContent(rid, delta))
        return out

    def end_reasoning(self, metadata: dict[str, Any] | None = None) -> list[BaseEvent]:
        """Close the reasoning block; ``metadata`` (e.g. a signature) rides on ``REASONING_MESSAGE_END``."""
        rid = self._reasoning_id
        if rid is None:
            return []
        self._reasoning_id = None
        return [ReasoningMessageEnd(rid, metadata=metadata), ReasoningEnd(rid)]

    @property
    def reasoning_open(self) -> bool:
        """Whether a reasoning block is open."""
        return self._reasoning_id is not None

    @property
    def text_open(self) -> bool:
        """Whether a text message is open."""
        return self._text_id is not None

    @property
    def text_message_id(self) -> str | None:
        """The ``message_id`` of the open text message, or ``None`` when none is open. While it stays
        open, :meth:`text` of a non-empty delta returns exactly ``[TextMessageContent(text_message_id,
        delta)]``: an adapter's hot loop may build that event itself (it changes only through this
        builder's own methods)."""
        return self._text_id

    # -- tool calls -----------------------------------------------------------------------------
    def tool_start(self, tool_call_id: str, name: str, metadata: dict[str, Any] | None = None) -> list[BaseEvent]:
        """``TOOL_CALL_START`` for the call ``tool_call_id`` (the provider's id) to the tool ``name``, with
        ``metadata`` (provider data kept on the call); closes open text and reasoning first. A repeated start
        for an open id is a no-op."""
        if tool_call_id in self.open_tools:
            return []
        out = self.end_text()
        out.extend(self.end_reasoning())
        self.open_tools[tool_call_id] = name
        self.started_tools.add(tool_call_id)
        out.append(ToolCallStart(tool_call_id, name, metadata=metadata))
        return out

    def tool_args(self, tool_call_id: str, delta: str) -> list[BaseEvent]:
        """``TOOL_CALL_ARGS`` with the next piece of the call's arguments (JSON text, split anywhere);
        nothing for an empty delta or a call that is not open.

        The builder does not keep the text: the engine joins the deltas once for every consumer (see
        ``ToolCallEnd.arguments``), and a copy here would be one more whole copy of arguments that can
        be megabytes long. :meth:`tool_args_length` says how much was sent."""
        if not delta or tool_call_id not in self.open_tools:
            return []
        streamed = self._streamed
        streamed[tool_call_id] = streamed.get(tool_call_id, 0) + len(delta)
        return [ToolCallArgs(tool_call_id, delta)]

    def tool_args_length(self, tool_call_id: str) -> int:
        """Characters of argument text :meth:`tool_args` sent for the open call ``tool_call_id`` so far
        (0 for none or for a call that is not open): whether, and how much of, the arguments streamed."""
        return self._streamed.get(tool_call_id, 0)

    def tool_end(
        self, tool_call_id: str, *, input: Any = None, metadata: dict[str, Any] | None = None
    ) -> list[BaseEvent]:
        """Close a tool call (``TOOL_CALL_END``). ``input`` (a dict) is the call's arguments when the
        provider gives them whole rather than as streamed text (Gemini, an Anthropic ``tool_use`` block
        that streamed no ``input_json_delta``); it wins over the streamed ``TOOL_CALL_ARGS`` text. Do not
        parse the streamed text for it: consumers parse that text themselves, once. When no argument text
        streamed for the call, ``input`` is sent first as one ``TOOL_CALL_ARGS`` (its JSON text), so AG-UI
        clients, which read the arguments from those deltas only, see them. ``metadata`` is
        provider data kept on the call. Nothing when the call is not open (a repeated end is a no-op)."""
        if self.open_tools.pop(tool_call_id, None) is None:
            return []
        out: list[BaseEvent] = []
        if not self._streamed.pop(tool_call_id, 0) and input is not None:
            out.append(ToolCallArgs(tool_call_id, json.dumps(input, ensure_ascii=False, separators=(",", ":"))))
        out.append(ToolCallEnd(tool_call_id, input=input, metadata=metadata))
        return out

    # -- output beyond text -------------------------------------------------------------------
    def source(self, part: SourcePart) -> list[BaseEvent]:
        """A source the model cited (Responses ``url_citation``, Anthropic citations, Gemini grounding,
        router ``annotations``): a ``CUSTOM`` ``source`` event (:class:`~hookstream.events.SourcePayload`,
        camelCase fields of ``part``). Open blocks stay open, so a citation may arrive mid-text; the
        step's assistant message keeps the part and ``StepResult.sources`` lists it."""
        return [SourcePayload(part).to_event()]

    def file(self, part: FilePart) -> list[BaseEvent]:
        """A file the model produced (a generated image): a ``CUSTOM`` ``file`` event
        (:class:`~hookstream.events.FilePayload`: ``mediaType`` and base64 ``data`` or ``url``). The step's
        assistant message keeps the part, so history holds it; ``StepResult.files`` lists it."""
        return [FilePayload(part).to_event()]

    def raw(self, event: Any, source: str | None = None) -> list[BaseEvent]:
        """A provider event the adapter does not understand (any JSON value, usually the parsed SSE
        data): an AG-UI ``RAW`` event; ``source`` names the provider (``"openai"``). The engine counts
        these (``StepResult.unknown_events``) and forwards them to the consumer only with
        ``LoopSettings(include_raw=True)``."""
        return [Raw(event, source=source)]

    # -- finish reason ---------------------------------------------------------------------------
    @staticmethod
    def normalise_finish_reason(
        raw: str | None,
        table: Mapping[str, str],
        *,
        tool_calls: bool,
        refusal: bool = False,
        unknown: str = "stop",
    ) -> str:
        """The one finish-reason policy of every adapter (``docs/finish-reasons.md``): the normalised
        finish reason (:data:`FINISH_REASONS`) of the provider's ``raw`` value.

        1. ``table[raw]``, the provider's own mapping; a raw value it lacks is ``unknown``; no raw
           value at all (``None``) is ``stop``.
        2. ``stop`` becomes ``tool_calls`` when the answer holds tool calls (``tool_calls``): a forced
           ``tool_choice`` ends with the provider's plain stop value, and the calls must still run.
        3. Else ``stop`` becomes ``content_filter`` when the answer is only a refusal (``refusal``).

        Any other value (``length``, ``content_filter``, ``error``) stands, tool calls or not: the
        engine does not run the calls of a cut-off answer. The raw value itself is kept apart, as
        ``RUN_FINISHED.raw_finish_reason``."""
        if raw is None:
            norm = "stop"
        else:
            norm = table.get(raw, unknown) if isinstance(raw, str) else unknown
        if norm != "stop":
            return norm
        if tool_calls:
            return "tool_calls"
        return "content_filter" if refusal else "stop"

    def finish_reason(self, raw: str | None, *, refusal: bool = False) -> str:
        """:meth:`normalise_finish_reason` of ``raw`` with this builder's table, for this call: tool
        calls present when any tool call started (:attr:`started_tools`)."""
        return self.normalise_finish_reason(raw, self.finish_reasons, tool_calls=bool(self.started_tools),
                                            refusal=refusal, unknown=self.unknown_finish_reason)

    # -- terminals ------------------------------------------------------------------------------
    def close_all(self) -> list[BaseEvent]:
        """Close every open text, reasoning and tool-call block (what :meth:`finish` does first)."""
        out = self.end_text()
        out.extend(self.end_reasoning())
        for tid in list(self.open_tools):
            out.extend(self.tool_end(tid))
        return out

    def finish(
        self,
        finish_reason: str | None,
        raw_finish_reason: str | None,
        usage: Usage | None,
        metadata: dict[str, Any] | None = None,
        *,
        response_id: str | None = None,
        model: str | None = None,
    ) -> list[BaseEvent]:
        """Close every open block and end with ``RUN_FINISHED``.

        ``finish_reason`` is normalised (``stop``, ``length``, ``content_filter``, ``tool_calls``,
        ``error``), ``raw_finish_reason`` the provider's own value, ``usage`` the call's token counts,
        ``metadata`` provider data (``{"anthropic": {...}}``) kept on ``RUN_FINISHED``.
        ``response_id`` is the provider's id of this response (Chat ``chatcmpl-...``, Responses
        ``resp_...``, Anthropic ``msg_...``, Gemini ``responseId``) and ``model`` the model version
        that answered (the response's ``model`` / ``modelVersion``); both ride on ``RUN_FINISHED``,
        and the engine puts them on the step's ``STEP_FINISHED`` and ``StepResult``."""
        out = self.close_all()
        self.closed = True
        out.append(
            RunFinished(
                self.context.thread_id,
                self.context.run_id,
                usage=usage,
                finish_reason=finish_reason,
                raw_finish_reason=raw_finish_reason,
                metadata=metadata,
                response_id=response_id,
                model=model,
            )
        )
        return out

    def error(
        self, message: str, code: str | None = None, usage: Usage | None = None, raw_finish_reason: str | None = None
    ) -> list[BaseEvent]:
        """End with ``RUN_ERROR``. Open blocks stay open: what arrived is kept by the consumer, and an
        unfinished tool call is never marked complete. ``raw_finish_reason`` is the provider's own end
        state when it sent one before or with the error."""
        self.closed = True
        return [RunError(message, code=code, usage=usage, raw_finish_reason=raw_finish_reason)]
