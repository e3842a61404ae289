"""Aggregate one model call's events into a :class:`StepResult`: the response the engine decides on.

Tool calls are decided on this aggregated response, never on a single chunk. Argument deltas are
appended to one string grown in place (linear in the argument length, the text held once, with no
list of deltas and no joined copy beside it). That string is the one text of the call in the process:
:meth:`StepAccumulator.add` returns ``TOOL_CALL_END`` carrying it, the event the engine passes on, so the
stream processor keeps it instead of its own copy. The text is parsed once, when the model call ends
(:meth:`StepAccumulator.finish`): by then the consumer has handled ``TOOL_CALL_END`` and dropped its
copy, so the parse never adds a copy beside it. Arguments that do not parse to a JSON object leave
``arguments`` as ``None`` with the raw text kept, and such a call is never executed. A tool call still
open when the call ends is incomplete the same way. A ``CUSTOM`` ``agui-server-messages`` (the agui
provider: a remote agent's own tool calls and results) becomes a part with no text whose
``provider_metadata["agui"]["messages"]`` keeps them, in place.

Thread safety: one accumulator per model call, fed by one thread; a finished StepResult is a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .._custom import AGUI_SERVER_MESSAGES, FilePayload, SourcePayload
from .._errors import MalformedCustomEventError
from .._events import (
    BaseEvent,
    Custom,
    Interrupt,
    Raw,
    ReasoningEncryptedValue,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    RunError,
    RunFinished,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    parse_arguments,
)
from .._messages import FilePart, Message, ReasoningPart, SourcePart, TextPart, ToolCallPart, ToolResultPart

__all__ = ["StepAccumulator", "StepResult", "merge_metadata"]


def merge_metadata(into: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """Merge provider metadata ``{"provider": {...}}`` one level deep; returns the merged dict."""
    if not new:
        return into
    out = dict(into or {})
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


@attrs.define(slots=True)
class StepResult:
    """One model call, aggregated.

    ``finish_reason`` is normalised (``stop | length | content_filter | tool_calls | error``),
    ``raw_finish_reason`` the provider's value. ``error`` is the RUN_ERROR ``(code, message)`` when the
    call failed. ``tool_results`` is filled by the engine after it runs the tools.

    ``sources`` (citations) and ``files`` (generated files) are what the adapter sent as ``CUSTOM``
    ``source`` / ``file`` events; they are also parts of ``message``, in stream order, so the history
    keeps them. ``response_id`` and ``model`` are the provider's response id and the model version
    that answered, when the adapter reported them. ``unknown_events`` counts the provider events the
    adapter did not understand (``RAW`` events; forwarded only with ``include_raw``).
    ``provider`` is the model the engine asked, as ``"NAME:MODEL"`` (with a
    :class:`~hookstream.FallbackModel`, the entry that answered; also on the step's ``STEP_FINISHED`` as
    ``metadata["hookstream"]["provider"]``); ``fallbacks`` the entries tried before it, which failed
    before any content (empty without a fallback).

    ``interrupts`` is set when the call's ``RUN_FINISHED`` had outcome ``interrupt`` (a remote agent, the
    ``agui`` provider, stopped for an approval or a question): the interrupts it listed (maybe none), else
    ``None``; the engine then ends the run with those interrupts or answers them (``approve=``).
    ``interrupt_calls`` are the tool calls those interrupts refer to that are not calls of this step (the
    agent's own server-side tools), as the adapter described them in the finish event's
    ``metadata["hookstream"]["interruptToolCalls"]`` (``[{"toolCallId", "toolName", "input"}]``): what
    ``approve`` is shown and ``RunResult.pending_approvals`` hold.
    """

    number: int = 0
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCallPart] = attrs.Factory(list)
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    usage: Usage | None = None
    error: tuple[str | None, str] | None = None
    message: Message = attrs.Factory(lambda: Message("assistant"))
    tool_results: list[ToolResultPart] = attrs.Factory(list)
    sources: list[SourcePart] = attrs.Factory(list)
    files: list[FilePart] = attrs.Factory(list)
    response_id: str | None = None
    model: str | None = None
    unknown_events: int = 0
    provider: str | None = None
    fallbacks: list[str] = attrs.Factory(list)
    interrupts: list[Interrupt] | None = None
    interrupt_calls: list[ToolCallPart] = attrs.Factory(list)

    @property
    def complete_tool_calls(self) -> list[ToolCallPart]:
        """Tool calls whose arguments parsed: the only ones that may be executed."""
        return [c for c in self.tool_calls if c.arguments is not None]


class _TextBlock:
    """A text or reasoning block: its part and the deltas not yet joined onto it."""

    __slots__ = ("chunks", "part")

    def __init__(self, part: TextPart | ReasoningPart) -> None:
        self.part = part
        self.chunks: list[str] = []

    def settle(self) -> None:
        """Join the pending deltas onto the part, once, and free them."""
        if self.chunks:
            joined = "".join(self.chunks)
            part = self.part
            part.text = part.text + joined if part.text else joined
            self.chunks = []


class _ToolBlock:
    """A tool call: its part and the argument text so far (parsed at the end of the call)."""

    __slots__ = ("part", "raw")

    def __init__(self, part: ToolCallPart) -> None:
        self.part = part
        self.raw = ""

    def add(self, delta: str) -> None:
        # With the attribute cleared this frame holds the only reference, so CPython resizes the string
        # in place instead of copying it.
        raw = self.raw
        self.raw = ""
        raw += delta
        self.raw = raw


class StepAccumulator:
    """Feed events with :meth:`add` (pass on what it returns); read :attr:`result` at any time (text
    and calls so far; a call's ``arguments`` are parsed by :meth:`finish`, its ``arguments_raw`` is set
    when it ends)."""

    def __init__(self, number: int = 0) -> None:
        self.result = StepResult(number)
        self._text: dict[str, _TextBlock] = {}
        self._reasoning: dict[str, _TextBlock] = {}
        self._tools: dict[str, _ToolBlock] = {}
        self.finished = False

    def add(self, event: BaseEvent) -> BaseEvent:
        """Fold one event of the call into :attr:`result` (events this result does not hold are skipped)
        and return the event to pass on: ``event`` itself, except that a ``TOOL_CALL_END`` comes back
        with ``arguments`` set to the call's text, the same string as ``ToolCallPart.arguments_raw``."""
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return event
        return handler(self, event) or event

    def add_text(self, event: TextMessageContent) -> None:
        """:meth:`add` for a ``TEXT_MESSAGE_CONTENT`` (it returns ``event``): the bulk of a stream, for
        a caller that already knows the event's class."""
        block = self._text.get(event.message_id)
        if block is None:
            block = self._open_text(event.message_id, None)
        block.chunks.append(event.delta)

    # -- handlers, one per event class (see _HANDLERS) --------------------------------------------
    def _tool_args(self, event: ToolCallArgs) -> None:
        block = self._tools.get(event.tool_call_id)
        if block is not None:
            block.add(event.delta)

    def _reasoning_content(self, event: ReasoningMessageContent) -> None:
        block = self._reasoning.get(event.message_id)
        if block is None:
            block = self._open_reasoning(event.message_id, None)
        block.chunks.append(event.delta)

    def _text_start(self, event: TextMessageStart) -> None:
        self._open_text(event.message_id, event.metadata)

    def _text_end(self, event: TextMessageEnd) -> None:
        self._close(self._text, event.message_id, event.metadata)

    def _reasoning_start(self, event: ReasoningMessageStart) -> None:
        self._open_reasoning(event.message_id, event.metadata)

    def _reasoning_end(self, event: ReasoningMessageEnd) -> None:
        self._close(self._reasoning, event.message_id, event.metadata)

    def _run_finished(self, event: RunFinished) -> None:
        r = self.result
        r.finish_reason = event.finish_reason
        r.raw_finish_reason = event.raw_finish_reason
        r.usage = event.usage
        r.response_id = event.response_id
        r.model = event.model
        outcome = event.outcome
        if outcome is not None and outcome.type == "interrupt":
            r.interrupts = list(outcome.interrupts or [])
            r.interrupt_calls = _interrupt_calls(event.metadata)
        self.finish()

    def _custom(self, event: Custom) -> None:
        name = event.name
        if name == AGUI_SERVER_MESSAGES:
            self._server_messages(event)
            return
        if name != "source" and name != "file":
            return
        r = self.result
        try:
            if name == "source":
                source = SourcePayload.from_value(event.value).part
                r.sources.append(source)
                r.message.parts.append(source)
            else:
                file = FilePayload.from_value(event.value).part
                r.files.append(file)
                r.message.parts.append(file)
        except MalformedCustomEventError:
            # Another sender's CUSTOM event of the same name: not a part of this answer, but counted.
            r.unknown_events += 1

    def _server_messages(self, event: Custom) -> None:
        # A remote AG-UI agent's own tool calls and results (the agui provider): kept in place as a part
        # with no text, so the next request sends them back where they were.
        value = event.value
        messages = value.get("messages") if isinstance(value, dict) else None
        if not isinstance(messages, list):
            self.result.unknown_events += 1
            return
        self.result.message.parts.append(ReasoningPart("", provider_metadata={"agui": {"messages": messages}}))

    def _raw(self, event: Raw) -> None:
        self.result.unknown_events += 1

    def _run_error(self, event: RunError) -> None:
        r = self.result
        r.error = (event.code, event.message)
        if event.usage is not None:
            r.usage = event.usage
        if event.raw_finish_reason is not None:
            r.raw_finish_reason = event.raw_finish_reason
        if r.finish_reason is None:
            r.finish_reason = "error"
        self.finish()

    # -- blocks ---------------------------------------------------------------------------------
    def _open_text(self, mid: str, metadata: dict[str, Any] | None) -> _TextBlock:
        block = self._text.get(mid)
        if block is None:
            part = TextPart("", provider_metadata=metadata)
            block = self._text[mid] = _TextBlock(part)
            self.result.message.parts.append(part)
        return block

    def _open_reasoning(self, mid: str, metadata: dict[str, Any] | None) -> _TextBlock:
        block = self._reasoning.get(mid)
        if block is None:
            part = ReasoningPart("", provider_metadata=metadata)
            block = self._reasoning[mid] = _TextBlock(part)
            self.result.message.parts.append(part)
        else:
            block.part.provider_metadata = merge_metadata(block.part.provider_metadata, metadata)
        return block

    @staticmethod
    def _close(blocks: dict[str, _TextBlock], mid: str, metadata: dict[str, Any] | None) -> None:
        block = blocks.get(mid)
        if block is None:
            return
        block.settle()
        block.part.provider_metadata = merge_metadata(block.part.provider_metadata, metadata)

    def _encrypted(self, event: ReasoningEncryptedValue) -> None:
        meta = event.metadata or {"encrypted": {"value": event.encrypted_value}}
        tool = self._tools.get(event.entity_id)
        if tool is not None:
            tool.part.provider_metadata = merge_metadata(tool.part.provider_metadata, meta)
            return
        # Reasoning that is only an encrypted value (no summary text) is still a part to send back.
        block = self._reasoning.get(event.entity_id) or self._open_reasoning(event.entity_id, None)
        block.part.provider_metadata = merge_metadata(block.part.provider_metadata, meta)

    def _tool_start(self, event: ToolCallStart) -> None:
        if event.tool_call_id in self._tools:
            return
        part = ToolCallPart(event.tool_call_id, event.tool_call_name, None, provider_metadata=event.metadata)
        self._tools[event.tool_call_id] = _ToolBlock(part)
        self.result.message.parts.append(part)
        self.result.tool_calls.append(part)

    def _tool_end(self, event: ToolCallEnd) -> ToolCallEnd | None:
        block = self._tools.get(event.tool_call_id)
        if block is None:
            return None
        part = block.part
        part.provider_metadata = merge_metadata(part.provider_metadata, event.metadata)
        part.arguments_raw = block.raw
        if isinstance(event.input, dict):
            part.arguments = event.input
        return None if event.arguments is not None else attrs.evolve(event, arguments=block.raw)

    def finish(self) -> StepResult:
        """Close what is still open (text kept; open tool calls stay incomplete) and return the result."""
        if self.finished:
            return self.result
        self.finished = True
        for blocks in (self._text, self._reasoning):
            for block in blocks.values():
                block.settle()
        for tool in self._tools.values():
            if tool.part.arguments_raw is None:  # never ended: incomplete, kept as text
                tool.part.arguments_raw = tool.raw
            elif tool.part.arguments is None:  # ended without a whole input: its text is the arguments
                tool.part.arguments = parse_arguments(tool.raw)
        r = self.result
        r.text = _concat([b.part.text for b in self._text.values()])
        r.reasoning = _concat([b.part.text for b in self._reasoning.values()]) if self._reasoning else None
        # Drop empty text parts (e.g. a text block holding only "") so the history stays clean; one that
        # carries provider metadata (items an adapter must send back) stays.
        r.message.parts = [p for p in r.message.parts
                           if not (isinstance(p, TextPart) and not p.text and not p.provider_metadata)]
        return r


# One typed handler per event class the result holds; TOOL_CALL_RESULT and lifecycle events belong to
# the engine's bookkeeping, not to the model's answer, so they have none.
_HANDLERS: dict[type[BaseEvent], Callable[[StepAccumulator, Any], BaseEvent | None]] = {
    TextMessageContent: StepAccumulator.add_text,
    ToolCallArgs: StepAccumulator._tool_args,
    ReasoningMessageContent: StepAccumulator._reasoning_content,
    TextMessageStart: StepAccumulator._text_start,
    TextMessageEnd: StepAccumulator._text_end,
    ReasoningMessageStart: StepAccumulator._reasoning_start,
    ReasoningMessageEnd: StepAccumulator._reasoning_end,
    ReasoningEncryptedValue: StepAccumulator._encrypted,
    ToolCallStart: StepAccumulator._tool_start,
    ToolCallEnd: StepAccumulator._tool_end,
    RunFinished: StepAccumulator._run_finished,
    RunError: StepAccumulator._run_error,
    Custom: StepAccumulator._custom,
    Raw: StepAccumulator._raw,
}


def _interrupt_calls(metadata: dict[str, Any] | None) -> list[ToolCallPart]:
    """The tool calls a finish event's ``metadata["hookstream"]["interruptToolCalls"]`` describes."""
    own = (metadata or {}).get("hookstream")
    entries = own.get("interruptToolCalls") if isinstance(own, dict) else None
    calls: list[ToolCallPart] = []
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and isinstance(e.get("toolCallId"), str) and isinstance(e.get("toolName"), str):
            args = e.get("input")
            calls.append(ToolCallPart(e["toolCallId"], e["toolName"], args if isinstance(args, dict) else None))
    return calls


def _concat(texts: list[str]) -> str:
    # One block (the common case) is shared rather than copied: a 10 MB answer stays one string.
    return texts[0] if len(texts) == 1 else "".join(texts)
