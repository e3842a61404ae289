"""Map the messages of a Bedrock ``ConverseStream`` response to AG-UI events.

Source: Amazon Bedrock API Reference, "ConverseStream" (Response Syntax: the event union
``messageStart | contentBlockStart | contentBlockDelta | contentBlockStop | messageStop | metadata``
and the exception members), with the data types "MessageStartEvent", "ContentBlockStartEvent",
"ContentBlockStart", "ToolUseBlockStart", "ContentBlockDeltaEvent", "ContentBlockDelta",
"ToolUseBlockDelta", "ReasoningContentBlockDelta", "CitationsDelta", "ContentBlockStopEvent",
"MessageStopEvent", "ConverseStreamMetadataEvent", "TokenUsage", "ConverseStreamMetrics",
"ConverseStreamTrace".

Each message (from :mod:`hookstream_bedrock.framing`) has headers ``:message-type`` (``event`` or
``exception``; ``error`` from the generic event-stream protocol) and ``:event-type`` /
``:exception-type``, and a JSON payload (Bedrock pads every payload with a ``"p"`` field against
length side channels; it is ignored).

* ``messageStart``: nothing to emit (the role is always ``assistant``).
* ``contentBlockStart`` with ``start.toolUse`` {``toolUseId``, ``name``}: ``TOOL_CALL_START``. A
  ``type: "server_tool_use"`` block (a tool Bedrock runs itself, e.g. Nova's code interpreter) and a
  ``start.toolResult`` block (its result) are not tool calls for the agent loop: each is reported
  whole at its stop as ``CUSTOM bedrock.server_tool_use`` / ``bedrock.tool_result`` and kept as a
  ``REASONING_ENCRYPTED_VALUE`` whose metadata ``{"bedrock": {"server_block": BLOCK}}`` is the block to
  send back in place.
* ``contentBlockDelta``: ``delta.text`` -> text; ``delta.toolUse.input`` -> ``TOOL_CALL_ARGS`` (JSON
  text split anywhere); ``delta.reasoningContent.text`` -> reasoning, ``.signature`` -> kept and put on
  ``REASONING_MESSAGE_END`` as ``{"bedrock": {"signature": ...}}`` (it must go back with the reasoning),
  ``.redactedContent`` -> ``REASONING_ENCRYPTED_VALUE`` with ``{"bedrock": {"redacted_content": ...}}``;
  ``delta.citation`` -> a document :class:`SourcePart` (emitted at the block's stop, spanning the
  block's text); anything else -> ``RAW``.
* ``contentBlockStop``: ends the tool call (``input: {}`` when no argument text streamed) or the
  reasoning block.
* ``messageStop``: ``stopReason`` (raw) normalised by :data:`STOP_REASONS` under the builder's one
  finish-reason policy (a ``metadata`` without a ``stopReason`` before it: ``stop``, or ``tool_calls``);
  ``additionalModelResponseFields`` kept in ``RUN_FINISHED`` metadata.
* ``metadata`` (the last event): ``usage`` -> :class:`Usage`, ``metrics.latencyMs`` and ``trace``
  (guardrail assessments) in ``RUN_FINISHED`` metadata ``{"bedrock": {...}}``; then ``RUN_FINISHED``.
  A stream that ends before ``metadata``, even after ``messageStop``, was cut short: no terminal event
  is yielded and the core ends the call with ``RUN_ERROR connection_closed``.
* Exception messages (``throttlingException``, ``modelStreamErrorException``, ``validationException``,
  ``internalServerException``, ``serviceUnavailableException``...): ``RUN_ERROR`` with that exception
  type as its ``code`` and the payload's ``message``, after what arrived.

Usage: ``input_tokens`` is ``inputTokens + cacheReadInputTokens + cacheWriteInputTokens`` (Bedrock's
``inputTokens`` leaves the cache out: ``totalTokens`` is the sum of all four), so it counts every
input token as :class:`~hookstream.events.Usage` documents and as the ``anthropic`` provider reports
the same Claude call; the cache counts are ``cached_input_tokens`` / ``cache_write_tokens``.

Thread safety: one :class:`ConverseStreamParser` per call, used by the thread that parses it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from hookstream import SourcePart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, ReasoningEncryptedValue, Usage
from hookstream.plugin import CallContext, StreamBuilder, new_id
from hookstream_anthropic.stream import STOP_REASONS as ANTHROPIC_STOP_REASONS
from hookstream_anthropic.stream import end_signed_reasoning, server_block_events

from .request import PROVIDER_KEY

__all__ = ["STOP_REASONS", "ConverseStreamParser", "usage_from"]

log = logging.getLogger("hookstream.bedrock")

STOP_REASONS: dict[str, str] = {
    # Converse passes Claude's stop reasons on (end_turn, stop_sequence, max_tokens, tool_use,
    # model_context_window_exceeded): those entries are the anthropic provider's table.
    **ANTHROPIC_STOP_REASONS,
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "error",
    "malformed_tool_use": "error",
}
"""``messageStop.stopReason`` ("MessageStopEvent", valid values ``end_turn | tool_use | max_tokens |
stop_sequence | guardrail_intervened | content_filtered | malformed_model_output | malformed_tool_use |
model_context_window_exceeded``) -> normalised finish reason, under the builder's one policy
(:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`)."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from(doc: Any) -> Usage | None:
    """:class:`Usage` of a ``metadata.usage`` object ("TokenUsage": ``inputTokens``, ``outputTokens``,
    ``totalTokens``, ``cacheReadInputTokens``, ``cacheWriteInputTokens``; tokens), see the module
    docstring for ``input_tokens``; ``None`` for a non-object."""
    if not isinstance(doc, dict):
        return None
    raw_in = _int(doc.get("inputTokens"))
    read = _int(doc.get("cacheReadInputTokens"))
    write = _int(doc.get("cacheWriteInputTokens"))
    input_tokens = None if raw_in is None else raw_in + (read or 0) + (write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=_int(doc.get("outputTokens")),
        total_tokens=_int(doc.get("totalTokens")),
        cached_input_tokens=read,
        cache_write_tokens=write,
    )


class _Block:
    """One content block by its ``contentBlockIndex``."""

    __slots__ = ("citations", "data", "id", "kind", "raw", "signature", "text_start")

    def __init__(self, kind: str, data: dict[str, Any] | None = None) -> None:
        self.kind = kind  # text | reasoning | tool | server | result
        self.data = data or {}
        self.id = ""
        self.signature: str | None = None
        self.raw = ""  # a server block's input text, or its streamed result content as JSON
        self.citations: list[dict[str, Any]] = []
        self.text_start = 0


class ConverseStreamParser:
    """Turns the event-stream messages of one ``ConverseStream`` response into AG-UI events. Use
    :meth:`run` once."""

    def __init__(self, context: CallContext) -> None:
        self.builder = StreamBuilder(context, STOP_REASONS)
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.response_fields: Any = None
        self.text_len = 0
        self.done = False

    def run(self, messages: Iterable[Any]) -> Iterator[BaseEvent]:
        """Yield ``RUN_STARTED``, the content events and ``RUN_FINISHED`` / ``RUN_ERROR``.

        ``messages`` are botocore ``EventStreamMessage`` objects (``.headers``, ``.payload``). Raises
        :class:`MalformedChunkError` for a payload that is not a JSON object. If the messages end
        before ``metadata`` (the last event, even after ``messageStop``) the generator returns without
        a terminal event: the call was cut short and the core reports ``connection_closed``."""
        yield from self.builder.start()
        for message in messages:
            headers = message.headers
            mtype = headers.get(":message-type", "event")
            if mtype == "exception":
                yield from self._exception(str(headers.get(":exception-type") or "exception"), message.payload)
                return
            if mtype == "error":
                code = str(headers.get(":error-code") or "error")
                yield from self._fail(code, str(headers.get(":error-message") or code))
                return
            kind = str(headers.get(":event-type") or "")
            doc = self._json(kind, message.payload)
            yield from self.handle(kind, doc)
            if self.done:
                return

    @staticmethod
    def _json(kind: str, payload: bytes) -> dict[str, Any]:
        try:
            doc = json.loads(payload) if payload else {}
        except ValueError:
            raise MalformedChunkError(f"Bedrock {kind} event payload is not JSON",
                                      payload[:200].decode("utf-8", "replace")) from None
        if not isinstance(doc, dict):
            raise MalformedChunkError(f"Bedrock {kind} event payload is not a JSON object",
                                      payload[:200].decode("utf-8", "replace"))
        doc.pop("p", None)  # padding against length side channels
        return doc

    def _exception(self, code: str, payload: bytes) -> list[BaseEvent]:
        message = code
        try:
            doc = json.loads(payload) if payload else None
        except ValueError:
            doc = payload.decode("utf-8", "replace") or None
        if isinstance(doc, dict):
            text = doc.get("message") or doc.get("Message")
            message = str(text) if text else message
        elif isinstance(doc, str) and doc.strip():
            message = doc.strip()[:500]
        return self._fail(code, message)

    def _fail(self, code: str, message: str) -> list[BaseEvent]:
        self.done = True
        return self.builder.error(message, code=code, raw_finish_reason=self.stop_reason)

    # -- dispatch -------------------------------------------------------------------------------
    def handle(self, kind: str, doc: dict[str, Any]) -> list[BaseEvent]:
        """Events for one decoded event of type ``kind``."""
        if kind == "contentBlockDelta":
            return self._delta(doc)
        if kind == "contentBlockStart":
            return self._start(doc)
        if kind == "contentBlockStop":
            return self._stop(doc)
        if kind == "messageStart":
            return []
        if kind == "messageStop":
            reason = doc.get("stopReason")
            self.stop_reason = str(reason) if reason is not None else None
            self.response_fields = doc.get("additionalModelResponseFields")
            return []
        if kind == "metadata":
            return self._finish(doc)
        log.debug("Bedrock stream event of unknown type %r passed on as RAW", kind)
        return self.builder.raw({"type": kind, **doc}, PROVIDER_KEY)

    def _finish(self, metadata: dict[str, Any]) -> list[BaseEvent]:
        self.done = True
        out: list[BaseEvent] = []
        for block in self.blocks.values():
            out.extend(self._close(block))
        meta: dict[str, Any] = {}
        if self.response_fields is not None:
            meta["additionalModelResponseFields"] = self.response_fields
        usage = usage_from(metadata.get("usage"))
        metrics = metadata.get("metrics")
        if isinstance(metrics, dict) and metrics.get("latencyMs") is not None:
            meta["latencyMs"] = metrics["latencyMs"]
        for key in ("trace", "performanceConfig", "serviceTier"):
            if metadata.get(key) is not None:
                meta[key] = metadata[key]
        out.extend(self.builder.finish(
            self.builder.finish_reason(self.stop_reason),
            self.stop_reason,
            usage,
            metadata={PROVIDER_KEY: meta} if meta else None,
        ))
        return out

    # -- blocks ---------------------------------------------------------------------------------
    @staticmethod
    def _index(doc: dict[str, Any], kind: str) -> int:
        index = doc.get("contentBlockIndex")
        if not isinstance(index, int):
            raise MalformedChunkError(f"Bedrock {kind} event without an integer contentBlockIndex", json.dumps(doc))
        return index

    def _start(self, doc: dict[str, Any]) -> list[BaseEvent]:
        index = self._index(doc, "contentBlockStart")
        start = doc.get("start")
        start = start if isinstance(start, dict) else {}
        tool = start.get("toolUse")
        if isinstance(tool, dict):
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                raise MalformedChunkError("Bedrock toolUse block start without a name", json.dumps(doc))
            if tool.get("type") == "server_tool_use":
                block = self.blocks[index] = _Block("server", dict(tool))
                return []
            block = self.blocks[index] = _Block("tool")
            block.id = str(tool.get("toolUseId") or new_id("tooluse"))
            return self.builder.tool_start(block.id, name)
        result = start.get("toolResult")
        if isinstance(result, dict):
            self.blocks[index] = _Block("result", dict(result))
            return []
        self.blocks[index] = _Block("other", start)
        return self.builder.raw({"type": "contentBlockStart", **doc}, PROVIDER_KEY)

    def _block(self, index: int, kind: str) -> _Block:
        """The block at ``index``; a block that had no start event (text, reasoning) is created on its
        first delta, of ``kind``."""
        block = self.blocks.get(index)
        if block is None:
            block = self.blocks[index] = _Block(kind)
            block.text_start = self.text_len
        return block

    def _delta(self, doc: dict[str, Any]) -> list[BaseEvent]:
        index = self._index(doc, "contentBlockDelta")
        delta = doc.get("delta")
        if not isinstance(delta, dict):
            raise MalformedChunkError("Bedrock contentBlockDelta without a delta object", json.dumps(doc))
        b = self.builder
        if "text" in delta:
            text = delta["text"]
            self._block(index, "text")
            if isinstance(text, str) and text:
                self.text_len += len(text)
                return b.text(text)
            return []
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            part = tool.get("input")
            block = self._block(index, "tool")
            if not isinstance(part, str) or not part:
                return []
            if block.kind == "tool":
                return b.tool_args(block.id, part)
            block.raw += part
            return []
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            return self._reasoning(self._block(index, "reasoning"), reasoning)
        citation = delta.get("citation")
        if isinstance(citation, dict):
            self._block(index, "text").citations.append(citation)
            return []
        if "toolResult" in delta and self.blocks.get(index) is not None:
            block = self.blocks[index]
            content = block.data.setdefault("content", [])
            if isinstance(content, list) and isinstance(delta["toolResult"], list):
                content.extend(delta["toolResult"])
                return []
        log.debug("Bedrock contentBlockDelta of unknown shape %r passed on as RAW", sorted(delta))
        return b.raw({"type": "contentBlockDelta", **doc}, PROVIDER_KEY)

    def _reasoning(self, block: _Block, delta: dict[str, Any]) -> list[BaseEvent]:
        b = self.builder
        text = delta.get("text")
        if isinstance(text, str) and text:
            return b.reasoning(text)
        signature = delta.get("signature")
        if isinstance(signature, str) and signature:
            block.signature = signature
            return []
        redacted = delta.get("redactedContent")
        if isinstance(redacted, str) and redacted:
            out = b.end_text()
            out.extend(b.end_reasoning())
            out.append(ReasoningEncryptedValue(
                "message", new_id("rsn"), redacted, metadata={PROVIDER_KEY: {"redacted_content": redacted}}
            ))
            return out
        return []

    def _stop(self, doc: dict[str, Any]) -> list[BaseEvent]:
        block = self.blocks.get(self._index(doc, "contentBlockStop"))
        return self._close(block) if block is not None else []

    def _close(self, block: _Block) -> list[BaseEvent]:
        """Events that end ``block`` (nothing for a block already closed)."""
        kind = block.kind
        block.kind = "closed"
        b = self.builder
        if kind == "text":
            return self._sources(block)
        if kind == "reasoning":
            return end_signed_reasoning(b, block.signature, PROVIDER_KEY)
        if kind == "tool":
            if b.tool_args_length(block.id):
                return b.tool_end(block.id)
            return b.tool_end(block.id, input={})
        if kind in ("server", "result"):
            return self._server_block(kind, block)
        return []

    def _server_block(self, kind: str, block: _Block) -> list[BaseEvent]:
        data = dict(block.data)
        if kind == "server":
            try:
                data["input"] = json.loads(block.raw) if block.raw else {}
            except ValueError:
                data["input"] = {}
                data["input_raw"] = block.raw
            sent = {"toolUse": {k: v for k, v in data.items() if k != "input_raw"}}
            name = "bedrock.server_tool_use"
        else:
            sent = {"toolResult": data}
            name = "bedrock.tool_result"
        return server_block_events(self.builder, name, data, str(data.get("toolUseId") or ""), PROVIDER_KEY, sent)

    def _sources(self, block: _Block) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for citation in block.citations:
            out.extend(self.builder.source(source_for_citation(citation, block.text_start, self.text_len)))
        block.citations = []
        return out


def source_for_citation(citation: dict[str, Any], start: int | None, end: int | None) -> SourcePart:
    """A document :class:`SourcePart` for one ``CitationsDelta`` ("CitationsDelta", "CitationLocation":
    ``documentChar`` / ``documentPage`` / ``documentChunk`` with ``documentIndex``; ``web`` with
    ``url``). ``cited_text`` joins ``sourceContent[].text``; ``start``/``end`` are the character
    offsets of the cited block's text in the answer; the citation itself is kept as
    ``provider_metadata["bedrock"]``."""
    location = citation.get("location")
    location = location if isinstance(location, dict) else {}
    inner = next((v for v in location.values() if isinstance(v, dict)), {})
    url = inner.get("url") if isinstance(inner.get("url"), str) else None
    content = citation.get("sourceContent")
    texts = [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    title = citation.get("title")
    return SourcePart(
        id=new_id("src"),
        source_type="url" if url else "document",
        url=url,
        title=title if isinstance(title, str) and title else (inner.get("domain") if url else None),
        cited_text="".join(texts) or None,
        start_index=start,
        end_index=end,
        document_index=_int(inner.get("documentIndex")),
        provider_metadata={PROVIDER_KEY: citation},
    )
