"""Map the Anthropic Messages streaming events to AG-UI events (the adapter grammar).

Source: Anthropic API reference, "Streaming Messages": ``message_start``, ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta``,
``signature_delta``, ``citations_delta``) / ``content_block_stop``, ``message_delta``,
``message_stop``, ``ping`` and the in-stream ``error`` event. Dispatch is on the JSON ``type`` field
(the SSE event name is only a fallback), and every payload goes through ``json_loads`` (the results
of ``json.loads``), so whitespace padding inside the object and ``{"type": "ping"}`` with a space
are ordinary input.

What each block becomes:

* ``text`` -> ``TEXT_MESSAGE_*``. Consecutive text blocks (a web-search answer arrives as dozens of
  them, split at citations) stay one text message; a thinking block or tool call closes it.
* ``thinking`` -> ``REASONING_*``; the block's ``signature`` rides on ``REASONING_MESSAGE_END`` as
  ``metadata={"anthropic": {"signature": ...}}``. A thinking block without any text (display
  omitted) and a ``redacted_thinking`` block become ``REASONING_ENCRYPTED_VALUE`` with the same
  metadata (``redacted_data`` for the latter), so the part still goes back to the API.
* ``tool_use`` -> ``TOOL_CALL_START`` / ``TOOL_CALL_ARGS`` (the ``partial_json`` fragments) /
  ``TOOL_CALL_END`` at ``content_block_stop``. A block whose input arrives whole (no
  ``input_json_delta``: a tool called with ``{}``, or an Anthropic-compatible server that puts the input
  on ``content_block_start``) still sends it as one ``TOOL_CALL_ARGS`` (the input as JSON text, from
  :meth:`StreamBuilder.tool_end`) and as ``TOOL_CALL_END`` ``input``, so a plain AG-UI client sees the
  arguments. A block still open when the message ends (``max_tokens``
  mid tool call) is closed by the final ``RUN_FINISHED`` bookkeeping; its arguments then do not parse
  and the call stays incomplete (``arguments: None``), so it is never executed.
* Server tools (``server_tool_use``, ``web_search_tool_result``, ``mcp_tool_use`` and any other block
  type) are not client tool calls. Each becomes, at its ``content_block_stop``, one ``CUSTOM`` event
  named ``anthropic.<block type>`` (value: the block, with a server tool's streamed ``input``
  parsed) for display, and a ``REASONING_ENCRYPTED_VALUE`` whose metadata
  ``{"anthropic": {"server_block": block}}`` makes it a part of the assistant message, so the block
  goes back to the API verbatim on the next request (:mod:`hookstream_anthropic.request`). An open
  text message is closed first, so the history keeps the blocks in stream order.
* ``citations_delta`` (``web_search_result_location``, ``char_location``, ``page_location``,
  ``content_block_location``, ``search_result_location``) -> a source (``CUSTOM`` ``source``) at the
  text block's ``content_block_stop``: ``url``/``title`` for web results, ``document_index`` and the
  document title for document citations, ``cited_text``, and ``start_index``/``end_index`` = the
  cited text block's span in the step's text (characters). The citation object is kept as
  ``provider_metadata["anthropic"]``.
* Any event or delta type this module does not know -> AG-UI ``RAW`` (never dropped silently).

Finish reason (raw value kept): see :data:`STOP_REASONS`. Usage: see :class:`UsageTracker`. The
``message.id`` and ``model`` of ``message_start`` are the response id and model on ``RUN_FINISHED``.

Thread safety: one :class:`MessageStreamParser` per model call, driven by the thread that reads it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from hookstream import SourcePart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Custom, ReasoningEncryptedValue, TextMessageContent, Usage
from hookstream.plugin import CallContext, StreamBuilder, json_loads, new_id

from .request import PROVIDER_KEY

__all__ = ["STOP_REASONS", "MessageStreamParser", "UsageTracker", "end_signed_reasoning", "server_block_events",
           "source_for_citation"]

log = logging.getLogger("hookstream.anthropic")

STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    # A server tool loop hit its iteration limit; the turn may be resumed by sending it back. For
    # hookstream the call ended normally, with no client tool to run.
    "pause_turn": "stop",
}
"""Anthropic ``stop_reason`` -> normalised finish reason (API reference, "Messages" > ``stop_reason``;
guide "Handling stop reasons"). The rules around it (tool calls present, unknown values: ``stop``)
are the builder's one policy, :meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`;
``hookstream-bedrock`` extends this table, since Converse passes Claude's values on."""


class UsageTracker:
    """Token counts of one message, from ``message_start`` then each ``message_delta``.

    ``message_delta.usage`` counts are cumulative, so a count present there replaces the earlier one
    (an Anthropic-compatible server may report a different ``input_tokens`` at the end). Fields:

    * ``input_tokens`` = ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``
      (Anthropic counts cached input apart; hookstream's input includes it),
    * ``cached_input_tokens`` = ``cache_read_input_tokens``,
    * ``cache_write_tokens`` = ``cache_creation_input_tokens`` (on a core whose ``Usage`` has it),
    * ``output_tokens`` = the last ``output_tokens``,
    * ``reasoning_tokens`` = ``output_tokens_details.thinking_tokens`` when present,
    * ``total_tokens`` = input + output.
    """

    __slots__ = ("cache_creation", "cache_read", "input", "output", "thinking")

    def __init__(self) -> None:
        self.input: int | None = None
        self.cache_creation: int | None = None
        self.cache_read: int | None = None
        self.output: int | None = None
        self.thinking: int | None = None

    def update(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for key, attr in (
            ("input_tokens", "input"),
            ("cache_creation_input_tokens", "cache_creation"),
            ("cache_read_input_tokens", "cache_read"),
            ("output_tokens", "output"),
        ):
            value = usage.get(key)
            if isinstance(value, int):
                setattr(self, attr, value)
        details = usage.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self.thinking = details["thinking_tokens"]

    def usage(self) -> Usage | None:
        """The :class:`Usage` so far, or ``None`` when no count arrived."""
        if self.input is None and self.output is None:
            return None
        total_in = None
        if self.input is not None:
            total_in = self.input + (self.cache_creation or 0) + (self.cache_read or 0)
        total = total_in + self.output if total_in is not None and self.output is not None else None
        return Usage(
            input_tokens=total_in,
            output_tokens=self.output,
            total_tokens=total,
            reasoning_tokens=self.thinking,
            cached_input_tokens=self.cache_read,
            cache_write_tokens=self.cache_creation,
        )


class _Block:
    """One content block by its stream ``index``."""

    __slots__ = (
        "citations", "data", "id", "kind", "open", "raw", "signature", "start_input",
        "text_seen", "text_start",
    )

    def __init__(self, kind: str, data: dict[str, Any]) -> None:
        self.kind = kind
        self.data = data
        self.id: str = ""
        self.open = True
        self.signature: str | None = None
        self.text_seen = False
        self.start_input: Any = None
        self.raw = ""  # a server tool block's input JSON text so far (tool_use text is the builder's)
        self.citations: list[dict[str, Any]] = []  # citations_delta of a text block, sourced at its stop
        self.text_start = 0  # offset of the block's text in the step's text

    def add(self, fragment: str) -> None:
        # One string grown in place, not a list of fragments joined at the stop: with the attribute cleared
        # this frame holds the only reference, so CPython resizes it instead of copying, and no fragment
        # (an object header of about 50 bytes each, several times the text in small deltas) is kept.
        raw = self.raw
        self.raw = ""
        raw += fragment
        self.raw = raw


class MessageStreamParser:
    """Turns the SSE events of one streamed message into AG-UI events. Use :meth:`run` once."""

    def __init__(self, context: CallContext) -> None:
        self.builder = StreamBuilder(context, STOP_REASONS)
        self.usage = UsageTracker()
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.message_id: str | None = None
        self.model: str | None = None
        self.text_len = 0  # characters of text emitted so far (citation spans)
        self.done = False

    def run(self, events: Iterable[Any]) -> Iterator[BaseEvent]:
        """Yield ``RUN_STARTED``, the content events, and ``RUN_FINISHED`` / ``RUN_ERROR``.

        Raises :class:`MalformedChunkError` for a payload that is not a JSON object or that refers to
        an unknown block. If ``events`` ends before ``message_stop`` the message is finished anyway
        when a ``stop_reason`` arrived; otherwise the generator returns without a terminal event and
        the core reports ``connection_closed``.
        """
        builder = self.builder
        yield from builder.start()
        blocks = self.blocks
        text = builder.text
        mid = None  # the open text message's id, read again after anything but a text delta
        for sse in events:
            data = sse.data
            try:
                doc = json_loads(data)
            except ValueError:
                if not data.strip():  # no payload (JSON never parses blank text): nothing to do
                    continue
                raise MalformedChunkError(
                    f"Anthropic SSE event {sse.event!r} is not valid JSON", data
                ) from None
            if type(doc) is not dict:  # json_loads gives plain dicts, never a subclass
                raise MalformedChunkError(f"Anthropic SSE event {sse.event!r} is not a JSON object", data)
            kind = doc.get("type") or sse.event
            if kind == "content_block_delta":  # most events: straight to their handler
                # A text delta of a known block (the bulk of a stream) is handled here, saving a call
                # and a dozen checks per event; anything else, valid or not, goes to _delta.
                delta = doc.get("delta")
                if type(delta) is dict and delta.get("type") == "text_delta":
                    index = doc.get("index")
                    piece = delta.get("text")
                    if type(index) is int and index in blocks and type(piece) is str:
                        if piece:
                            self.text_len += len(piece)
                            if mid is not None:  # what text(piece) returns then, without its list
                                yield TextMessageContent(mid, piece)
                            else:
                                yield from text(piece)
                                mid = builder.text_message_id
                        continue
                yield from self._delta(doc, data)
                mid = builder.text_message_id
                continue
            yield from self.handle(kind, doc, data)
            mid = builder.text_message_id
            if self.done:
                return
        if self.stop_reason is not None:
            yield from self._finish()

    # -- dispatch -------------------------------------------------------------------------------
    def handle(self, kind: str, doc: dict[str, Any], data: str) -> list[BaseEvent]:
        """Events for one decoded payload of type ``kind``."""
        if kind == "content_block_delta":
            return self._delta(doc, data)
        if kind == "ping":
            return []
        if kind == "content_block_start":
            return self._block_start(doc, data)
        if kind == "content_block_stop":
            return self._block_stop(doc, data)
        if kind == "message_start":
            message = doc.get("message")
            if isinstance(message, dict):
                self.message_id = message.get("id")
                self.model = message.get("model")
                self.usage.update(message.get("usage"))
            return []
        if kind == "message_delta":
            delta = doc.get("delta")
            if isinstance(delta, dict):
                if delta.get("stop_reason") is not None:
                    self.stop_reason = str(delta["stop_reason"])
                if delta.get("stop_sequence") is not None:
                    self.stop_sequence = str(delta["stop_sequence"])
            self.usage.update(doc.get("usage"))
            return []
        if kind == "message_stop":
            return self._finish()
        if kind == "error":
            err = doc.get("error")
            err = err if isinstance(err, dict) else {}
            etype = str(err.get("type") or "provider_error")
            message = str(err.get("message") or etype)
            self.done = True
            return self.builder.error(message, code=etype, usage=self.usage.usage())
        # The API may add event types (versioning policy): passed on as RAW, never dropped silently.
        log.debug("Anthropic stream event of unknown type %r passed on as RAW", kind)
        return self.builder.raw(doc, PROVIDER_KEY)

    def _finish(self) -> list[BaseEvent]:
        self.done = True
        out: list[BaseEvent] = []
        for block in self.blocks.values():
            if block.open and block.kind == "thinking":
                out.extend(self._end_thinking(block))
            elif block.open and block.citations:
                out.extend(self._sources(block))
        meta = {
            k: v
            for k, v in (("message_id", self.message_id), ("model", self.model), ("stop_sequence", self.stop_sequence))
            if v is not None
        }
        out.extend(
            self.builder.finish(
                self.builder.finish_reason(self.stop_reason),
                self.stop_reason,
                self.usage.usage(),
                metadata={PROVIDER_KEY: meta} if meta else None,
                response_id=self.message_id,
                model=self.model,
            )
        )
        return out

    # -- blocks ---------------------------------------------------------------------------------
    def _index(self, doc: dict[str, Any], data: str) -> int:
        index = doc.get("index")
        if not isinstance(index, int):
            raise MalformedChunkError(f"Anthropic {doc.get('type')} event without an integer index", data)
        return index

    def _block_start(self, doc: dict[str, Any], data: str) -> list[BaseEvent]:
        index = self._index(doc, data)
        cb = doc.get("content_block")
        if not isinstance(cb, dict) or not isinstance(cb.get("type"), str):
            raise MalformedChunkError("Anthropic content_block_start without a content_block type", data)
        kind = cb["type"]
        block = self.blocks[index] = _Block(kind, cb)
        b = self.builder
        if kind == "text":
            block.text_start = self.text_len
            citations = cb.get("citations")
            if isinstance(citations, list):
                block.citations.extend(c for c in citations if isinstance(c, dict))
            text = cb.get("text")
            return self._text(text) if isinstance(text, str) and text else []
        if kind == "thinking":
            sig = cb.get("signature")
            block.signature = sig if isinstance(sig, str) and sig else None
            text = cb.get("thinking")
            if isinstance(text, str) and text:
                block.text_seen = True
                return b.reasoning(text)
            return []
        if kind == "redacted_thinking":
            out = b.end_text()
            out.extend(b.end_reasoning())
            value = str(cb.get("data") or "")
            out.append(
                ReasoningEncryptedValue(
                    "message", new_id("rsn"), value, metadata={PROVIDER_KEY: {"redacted_data": value}}
                )
            )
            return out
        if kind == "tool_use":
            name = cb.get("name")
            if not isinstance(name, str) or not name:
                raise MalformedChunkError("Anthropic tool_use block without a name", data)
            block.id = str(cb.get("id") or new_id("toolu"))
            block.start_input = cb.get("input")
            return b.tool_start(block.id, name)
        return []  # server tool blocks: reported whole at content_block_stop

    def _block(self, doc: dict[str, Any], data: str) -> _Block:
        index = self._index(doc, data)
        block = self.blocks.get(index)
        if block is None:
            raise MalformedChunkError(f"Anthropic {doc.get('type')} for unknown content block {index}", data)
        return block

    def _delta(self, doc: dict[str, Any], data: str) -> list[BaseEvent]:
        # _block and _text inlined for text deltas, the bulk of a stream; _block raises the errors.
        index = doc.get("index")
        block = self.blocks.get(index) if isinstance(index, int) else None
        if block is None:
            block = self._block(doc, data)
        delta = doc.get("delta")
        if not isinstance(delta, dict):
            raise MalformedChunkError("Anthropic content_block_delta without a delta object", data)
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                self.text_len += len(text)
                return self.builder.text(text)
            return []
        if dtype == "input_json_delta":
            part = delta.get("partial_json")
            if not isinstance(part, str) or not part:
                return []
            if block.kind == "tool_use":
                return self.builder.tool_args(block.id, part)
            block.add(part)  # a server tool's input: sent whole on its CUSTOM event at the stop
            return []
        if dtype == "thinking_delta":
            text = delta.get("thinking")
            if isinstance(text, str) and text:
                block.text_seen = True
                return self.builder.reasoning(text)
            return []
        if dtype == "signature_delta":
            sig = delta.get("signature")
            if isinstance(sig, str) and sig:
                block.signature = sig
            return []
        if dtype == "citations_delta":
            citation = delta.get("citation")
            if isinstance(citation, dict):
                block.citations.append(citation)
                return []
        log.debug("Anthropic content_block_delta of unknown type %r passed on as RAW", dtype)
        return self.builder.raw(doc, PROVIDER_KEY)

    def _block_stop(self, doc: dict[str, Any], data: str) -> list[BaseEvent]:
        block = self._block(doc, data)
        if not block.open:
            return []
        block.open = False
        kind = block.kind
        if kind == "text":
            return self._sources(block)
        if kind == "redacted_thinking":
            return []
        if kind == "thinking":
            return self._end_thinking(block)
        if kind == "tool_use":
            start = block.start_input
            # Deltas win (consumers parse their text); a block that streamed none keeps the input it
            # started with ({} normally), which the builder also sends as the call's one TOOL_CALL_ARGS.
            if self.builder.tool_args_length(block.id):
                return self.builder.tool_end(block.id)
            return self.builder.tool_end(block.id, input=start if isinstance(start, dict) else {})
        value = dict(block.data)
        sent = dict(block.data)
        if block.raw:
            raw, block.raw = block.raw, ""
            try:
                value["input"] = sent["input"] = json.loads(raw)
            except ValueError:
                value["input"] = None
                value["input_raw"] = raw
                sent["input"] = {}  # the API wants an object back; what arrived is on the CUSTOM event
        block_id = str(sent.get("id") or sent.get("tool_use_id") or new_id("srv"))
        return server_block_events(self.builder, f"anthropic.{kind}", value, block_id, PROVIDER_KEY, sent)

    def _text(self, text: str) -> list[BaseEvent]:
        self.text_len += len(text)
        return self.builder.text(text)

    def _sources(self, block: _Block) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for citation in block.citations:
            part = source_for_citation(citation, block.text_start, self.text_len)
            out.extend(self.builder.source(part))
        block.citations = []
        return out

    def _end_thinking(self, block: _Block) -> list[BaseEvent]:
        block.open = False
        return end_signed_reasoning(self.builder, block.signature, PROVIDER_KEY, text_seen=block.text_seen)


def end_signed_reasoning(
    builder: StreamBuilder, signature: str | None, provider_key: str, *, text_seen: bool = True
) -> list[BaseEvent]:
    """Events that end a thinking block whose ``signature`` must go back to the API with it
    (Anthropic "Extended thinking"; Bedrock ``reasoningContent.signature``): the signature rides on
    ``REASONING_MESSAGE_END`` as ``{provider_key: {"signature": ...}}``; a block with no thinking text
    (``text_seen`` false, display omitted) still keeps it, as a ``REASONING_ENCRYPTED_VALUE`` with that
    metadata. Without a signature the reasoning simply ends."""
    if signature is None:
        return builder.end_reasoning()
    meta = {provider_key: {"signature": signature}}
    if text_seen and builder.reasoning_open:
        return builder.end_reasoning(metadata=meta)
    out = builder.end_reasoning()
    out.append(ReasoningEncryptedValue("message", new_id("rsn"), signature, metadata=meta))
    return out


def server_block_events(
    builder: StreamBuilder, name: str, value: dict[str, Any], ref: str, provider_key: str, sent: dict[str, Any]
) -> list[BaseEvent]:
    """Events for a block a provider's server tool produced (Anthropic ``server_tool_use``,
    ``web_search_tool_result``...; Bedrock ``server_tool_use`` / ``toolResult``), which is not a client
    tool call: the open text and reasoning end (so history keeps the blocks in stream order), a
    ``CUSTOM`` event ``name`` with ``value`` for display, and a ``REASONING_ENCRYPTED_VALUE`` (value
    ``ref``, the block's id) whose metadata ``{provider_key: {"server_block": sent}}`` makes ``sent``
    part of the assistant message, to go back verbatim in place."""
    out = builder.end_text()
    out.extend(builder.end_reasoning())
    out.append(Custom(name, value))
    out.append(ReasoningEncryptedValue("message", new_id("srv"), ref, metadata={provider_key: {"server_block": sent}}))
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def source_for_citation(citation: dict[str, Any], start: int | None = None, end: int | None = None) -> SourcePart:
    """A :class:`SourcePart` for one Anthropic citation ("Citations" guide; "Web search tool").

    ``web_search_result_location`` and ``search_result_location`` are ``url`` sources (``url`` or
    ``source``, ``title``); ``char_location``, ``page_location`` and ``content_block_location`` are
    ``document`` sources (``document_index``, ``document_title`` as the title). ``start``/``end`` are
    the cited text's character offsets in the message text; the citation object itself is kept as
    ``provider_metadata["anthropic"]``.
    """
    ctype = citation.get("type")
    is_url = ctype in ("web_search_result_location", "search_result_location")
    return SourcePart(
        id=new_id("src"),
        source_type="url" if is_url else "document",
        url=_str(citation.get("url")) or (_str(citation.get("source")) if is_url else None),
        title=_str(citation.get("title")) or _str(citation.get("document_title")),
        cited_text=_str(citation.get("cited_text")),
        start_index=start,
        end_index=end,
        document_index=_int(citation.get("document_index")),
        provider_metadata={PROVIDER_KEY: citation},
    )
