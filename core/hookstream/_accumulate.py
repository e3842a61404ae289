"""Aggregate one model call's events into a :class:`StepResult`: the response the engine decides on.

Tool calls are decided on this aggregated response, never on a single chunk. Argument deltas are
collected as a list and joined once, at ``TOOL_CALL_END`` (linear in the argument length); arguments
that do not parse to a JSON object leave ``arguments`` as ``None`` with the raw text kept, and such a
call is never executed. A tool call still open when the call ends is incomplete the same way.

Thread safety: one accumulator per model call, fed by one thread; a finished StepResult is a value.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from ._events import (
    BaseEvent,
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
    ToolCallResult,
    ToolCallStart,
    Usage,
)
from ._messages import Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

__all__ = ["StepAccumulator", "StepResult", "merge_metadata", "parse_arguments"]


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

    @property
    def complete_tool_calls(self) -> list[ToolCallPart]:
        """Tool calls whose arguments parsed: the only ones that may be executed."""
        return [c for c in self.tool_calls if c.arguments is not None]


class _Block:
    __slots__ = ("chunks", "part")

    def __init__(self, part: Part) -> None:
        self.part = part
        self.chunks: list[str] = []


class StepAccumulator:
    """Feed events with :meth:`add`; read :attr:`result` at any time (text and calls so far)."""

    def __init__(self, number: int = 0) -> None:
        self.result = StepResult(number)
        self._text: dict[str, _Block] = {}
        self._reasoning: dict[str, _Block] = {}
        self._tools: dict[str, _Block] = {}
        self.finished = False

    def add(self, event: BaseEvent) -> None:
        t = type(event)
        if t is TextMessageContent:
            block = self._text.get(event.message_id)  # type: ignore[attr-defined]
            if block is None:
                block = self._open_text(event.message_id, None)  # type: ignore[attr-defined]
            block.chunks.append(event.delta)  # type: ignore[attr-defined]
        elif t is ToolCallArgs:
            block = self._tools.get(event.tool_call_id)  # type: ignore[attr-defined]
            if block is not None:
                block.chunks.append(event.delta)  # type: ignore[attr-defined]
        elif t is ReasoningMessageContent:
            block = self._reasoning.get(event.message_id)  # type: ignore[attr-defined]
            if block is None:
                block = self._open_reasoning(event.message_id, None)  # type: ignore[attr-defined]
            block.chunks.append(event.delta)  # type: ignore[attr-defined]
        elif t is TextMessageStart:
            self._open_text(event.message_id, event.metadata)  # type: ignore[attr-defined]
        elif t is TextMessageEnd:
            self._close(self._text, event.message_id, event.metadata)  # type: ignore[attr-defined]
        elif t is ReasoningMessageStart:
            self._open_reasoning(event.message_id, event.metadata)  # type: ignore[attr-defined]
        elif t is ReasoningMessageEnd:
            self._close(self._reasoning, event.message_id, event.metadata)  # type: ignore[attr-defined]
        elif t is ReasoningEncryptedValue:
            self._encrypted(event)  # type: ignore[arg-type]
        elif t is ToolCallStart:
            self._tool_start(event)  # type: ignore[arg-type]
        elif t is ToolCallEnd:
            self._tool_end(event)  # type: ignore[arg-type]
        elif t is ToolCallResult:
            pass  # results belong to the engine's bookkeeping, not the model's answer
        elif t is RunFinished:
            r = self.result
            r.finish_reason = event.finish_reason  # type: ignore[attr-defined]
            r.raw_finish_reason = event.raw_finish_reason  # type: ignore[attr-defined]
            r.usage = event.usage  # type: ignore[attr-defined]
            self.finish()
        elif t is RunError:
            self.result.error = (event.code, event.message)  # type: ignore[attr-defined]
            if event.usage is not None:  # type: ignore[attr-defined]
                self.result.usage = event.usage  # type: ignore[attr-defined]
            if event.raw_finish_reason is not None:  # type: ignore[attr-defined]
                self.result.raw_finish_reason = event.raw_finish_reason  # type: ignore[attr-defined]
            if self.result.finish_reason is None:
                self.result.finish_reason = "error"
            self.finish()

    # -- blocks ---------------------------------------------------------------------------------
    def _open_text(self, mid: str, metadata: dict[str, Any] | None) -> _Block:
        block = self._text.get(mid)
        if block is None:
            part = TextPart("", provider_metadata=metadata)
            block = self._text[mid] = _Block(part)
            self.result.message.parts.append(part)
        return block

    def _open_reasoning(self, mid: str, metadata: dict[str, Any] | None) -> _Block:
        block = self._reasoning.get(mid)
        if block is None:
            part = ReasoningPart("", provider_metadata=metadata)
            block = self._reasoning[mid] = _Block(part)
            self.result.message.parts.append(part)
        else:
            block.part.provider_metadata = merge_metadata(block.part.provider_metadata, metadata)
        return block

    def _close(self, blocks: dict[str, _Block], mid: str, metadata: dict[str, Any] | None) -> None:
        block = blocks.get(mid)
        if block is None:
            return
        _settle(block)
        block.part.provider_metadata = merge_metadata(block.part.provider_metadata, metadata)

    def _encrypted(self, event: ReasoningEncryptedValue) -> None:
        block = self._reasoning.get(event.entity_id) or self._tools.get(event.entity_id)
        meta = event.metadata or {"encrypted": {"value": event.encrypted_value}}
        if block is None:
            # Reasoning that is only an encrypted value (no summary text) is still a part to send back.
            block = self._open_reasoning(event.entity_id, None)
        block.part.provider_metadata = merge_metadata(block.part.provider_metadata, meta)

    def _tool_start(self, event: ToolCallStart) -> None:
        if event.tool_call_id in self._tools:
            return
        part = ToolCallPart(event.tool_call_id, event.tool_call_name, None, provider_metadata=event.metadata)
        self._tools[event.tool_call_id] = _Block(part)
        self.result.message.parts.append(part)
        self.result.tool_calls.append(part)

    def _tool_end(self, event: ToolCallEnd) -> None:
        block = self._tools.get(event.tool_call_id)
        if block is None:
            return
        part: ToolCallPart = block.part  # type: ignore[assignment]
        part.provider_metadata = merge_metadata(part.provider_metadata, event.metadata)
        raw = "".join(block.chunks)
        part.arguments_raw = raw
        if isinstance(event.input, dict):
            part.arguments = event.input
        else:
            part.arguments = parse_arguments(raw)

    def finish(self) -> StepResult:
        """Close what is still open (text kept; open tool calls stay incomplete) and return the result."""
        if self.finished:
            return self.result
        self.finished = True
        for blocks in (self._text, self._reasoning):
            for block in blocks.values():
                _settle(block)
        for block in self._tools.values():
            part: ToolCallPart = block.part  # type: ignore[assignment]
            if part.arguments_raw is None:
                part.arguments_raw = "".join(block.chunks)
        r = self.result
        r.text = _concat([b.part.text for b in self._text.values()])  # type: ignore[union-attr]
        r.reasoning = _concat([b.part.text for b in self._reasoning.values()]) if self._reasoning else None  # type: ignore[union-attr]
        # Drop empty text parts (e.g. a text block holding only "") so the history stays clean.
        r.message.parts = [p for p in r.message.parts if not (isinstance(p, TextPart) and not p.text)]
        return r


def _settle(block: _Block) -> None:
    """Join a text or reasoning block's pending chunks onto its part, once, and free them."""
    if block.chunks:
        joined = "".join(block.chunks)
        part = block.part
        part.text = part.text + joined if part.text else joined  # type: ignore[union-attr]
        block.chunks = []


def _concat(texts: list[str]) -> str:
    # One block (the common case) is shared rather than copied: a 10 MB answer stays one string.
    return texts[0] if len(texts) == 1 else "".join(texts)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool arguments text to a JSON object: ``""`` means ``{}``; anything not an object is ``None``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
