"""Map a Gemini ``streamGenerateContent?alt=sse`` stream (Gemini API or Vertex AI) to AG-UI events.

Each SSE event's data is one ``GenerateContentResponse``: ``candidates[]`` (``content.parts``,
``finishReason``, ``finishMessage``), ``promptFeedback`` (``blockReason``), ``usageMetadata``,
``responseId``, ``modelVersion``; or an ``{"error": {"code", "message", "status"}}`` object.
Source: Gemini API reference, ``GenerateContentResponse``, ``Candidate``, ``Part``, ``FunctionCall``,
``UsageMetadata``; Vertex AI reference for ``FunctionCall.partialArgs``.

Gemini has no terminal event: the call ends when the stream ends cleanly (a dropped connection is a
:class:`~hookstream.errors.ConnectionClosedError` raised by the transport, never a clean end). At the
end the last ``finishReason`` seen decides ``RUN_FINISHED`` (legacy models repeat it on every chunk).
A blocked prompt (no candidates, ``promptFeedback.blockReason``) finishes with ``content_filter`` and no
raw finish reason. A stream that ends with neither simply returns, and the core reports
``connection_closed``.

Only candidate 0 is read. Parts:

* ``text`` -> ``TEXT_MESSAGE_*``; ``text`` with ``thought: true`` -> ``REASONING_*``.
* ``functionCall`` whole -> ``TOOL_CALL_START``, one ``TOOL_CALL_ARGS`` (the ``args`` as JSON text),
  ``TOOL_CALL_END`` with ``input``; streamed by ``partialArgs`` (Vertex) -> the same, emitted when the
  call closes (see :mod:`hookstream_gemini.partial_args`).
* ``thoughtSignature`` is kept as provider metadata ``{"gemini": {"thoughtSignature": ...}}`` on the
  part it came with: ``TEXT_MESSAGE_END``, ``REASONING_MESSAGE_END`` or ``TOOL_CALL_START``
  (``TOOL_CALL_END`` when it comes on a later part of a streamed call). A signature on an otherwise
  empty text part joins the open text or reasoning block when that block has none yet; otherwise it
  becomes a ``REASONING_ENCRYPTED_VALUE`` of its own (a signature-only part).
* ``inlineData`` (a generated image) -> a file (``CUSTOM`` ``file``: media type and base64 data);
  ``fileData`` -> a file with its URI. A ``thoughtSignature`` (and ``thought: true``) rides in the
  file's ``provider_metadata["gemini"]`` so it goes back with the image.
* Parts of built-in tools (``executableCode``, ``codeExecutionResult``, and the server-side
  ``toolCall`` / ``toolResponse`` of Gemini 3) -> one ``CUSTOM`` ``gemini.part`` (display) and a
  ``REASONING_ENCRYPTED_VALUE`` with metadata ``{"gemini": {"part": part}}``, which makes the part a
  piece of the assistant message sent back verbatim next turn. Open text closes first (stream order).
* Any other part -> AG-UI ``RAW``: never dropped silently.

Sources (Gemini API reference ``GroundingMetadata``, ``CitationMetadata``, ``UrlContextMetadata``):
each ``groundingSupports`` entry yields one source per grounding chunk it cites (``web`` /
``retrievedContext`` / ``maps``: ``uri`` -> ``url``, ``title``), with the segment's ``text`` as
``cited_text`` and its byte offsets turned into character offsets into the step's text; chunks no
support cites yield a source without a span. ``citationMetadata.citationSources`` (Vertex:
``citations``) yield url sources with their span; ``urlContextMetadata.urlMetadata`` entries retrieved
successfully yield url sources. The Gemini object is kept as ``provider_metadata["gemini"]``.
Metadata repeated on later chunks is not reported twice.

Tool-call ids: Gemini 3 may send ``functionCall.id``; it is used as the tool call id and kept as
``functionCallId`` metadata (sent back on ``functionCall``/``functionResponse``). Without one the id is
``gemini-{responseId}-{n}`` (``n`` = position of the call in the response, from 0; the call's run id
stands in for a missing ``responseId``): stable for the same bytes, unique per response.

Thread safety: one parser per model call, driven by the thread that reads the stream.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from hookstream import FilePart, SourcePart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Custom, ReasoningEncryptedValue, Usage
from hookstream.plugin import CallContext, StreamBuilder, json_loads, new_id

from .partial_args import PartialArgs

log = logging.getLogger("hookstream_gemini.stream")

__all__ = ["FINISH_REASONS", "SERVER_PARTS", "UNKNOWN_FINISH_REASON", "GeminiStreamParser", "parse_stream",
           "usage_from"]

SERVER_PARTS = frozenset({"executableCode", "codeExecutionResult", "toolCall", "toolResponse"})
"""Part fields of built-in (server-side) tools, kept in history and sent back verbatim."""

FINISH_REASONS: dict[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
    "LANGUAGE": "error",
    "NO_IMAGE": "error",
    "IMAGE_OTHER": "error",
    "OTHER": "error",
    "FINISH_REASON_UNSPECIFIED": "error",
}
"""Gemini ``Candidate.finishReason`` -> hookstream finish reason, under the builder's one policy
(:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`; ``STOP`` after function calls is
``tool_calls``, Gemini having no value of its own for them). Unknown values are ``error``
(:data:`UNKNOWN_FINISH_REASON`): the enum's unlisted members are faults (``OTHER``, ``MALFORMED_*``)."""

UNKNOWN_FINISH_REASON = "error"
"""The normalised finish reason of a ``finishReason`` :data:`FINISH_REASONS` does not know."""


def usage_from(raw: dict[str, Any] | None) -> Usage | None:
    """``UsageMetadata`` -> :class:`Usage`: ``promptTokenCount`` -> input, ``candidatesTokenCount`` ->
    output (Gemini counts thoughts apart from it), ``thoughtsTokenCount`` -> reasoning,
    ``cachedContentTokenCount`` -> cached input, ``totalTokenCount`` -> total. ``None`` when no count
    is present (Vertex sends ``{"trafficType": ...}`` alone until the last chunk)."""
    if not raw:
        return None

    def count(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    usage = Usage(
        input_tokens=count("promptTokenCount"),
        output_tokens=count("candidatesTokenCount"),
        total_tokens=count("totalTokenCount"),
        reasoning_tokens=count("thoughtsTokenCount"),
        cached_input_tokens=count("cachedContentTokenCount"),
    )
    if all(v is None for v in (usage.input_tokens, usage.output_tokens, usage.total_tokens,
                               usage.reasoning_tokens, usage.cached_input_tokens)):
        return None
    return usage


def _signature_meta(signature: str | None) -> dict[str, Any] | None:
    return {"gemini": {"thoughtSignature": signature}} if signature else None


class _StreamedCall:
    __slots__ = ("args", "late_signature", "partial", "signed", "tool_call_id")

    def __init__(self, tool_call_id: str, args: dict[str, Any] | None, signed: bool) -> None:
        self.tool_call_id = tool_call_id
        self.args = args
        self.partial = PartialArgs()
        self.signed = signed
        self.late_signature: str | None = None


class GeminiStreamParser:
    """State of one streamed response. :meth:`chunk` maps one parsed SSE data object; :meth:`end`
    gives the closing events once the stream ended cleanly (``None``: end without a terminal)."""

    def __init__(self, context: CallContext) -> None:
        self.context = context
        self.builder = StreamBuilder(context, FINISH_REASONS, UNKNOWN_FINISH_REASON)
        self._text_sig: str | None = None
        self._reasoning_sig: str | None = None
        self._streamed: _StreamedCall | None = None
        self._calls = 0
        self._ids: set[str] = set()
        self.seen_chunk = False
        self.finish_raw: str | None = None
        self.finish_message: str | None = None
        self.usage_raw: dict[str, Any] | None = None
        self.prompt_feedback: dict[str, Any] | None = None
        self.response_id: str | None = None
        self.model_version: str | None = None
        self._texts: list[str] = []  # text emitted so far: grounding offsets refer to it
        self._sources_seen: set[tuple[Any, ...]] = set()

    # -- chunks ---------------------------------------------------------------------------------
    def chunk(self, doc: Any) -> list[BaseEvent]:
        if not isinstance(doc, dict):
            raise MalformedChunkError(f"Gemini chunk is not a JSON object: {doc!r}"[:200])
        if "error" in doc:
            return self._error(doc["error"])
        self.seen_chunk = True
        if isinstance(doc.get("usageMetadata"), dict):
            self.usage_raw = doc["usageMetadata"]
        if isinstance(doc.get("promptFeedback"), dict):
            self.prompt_feedback = doc["promptFeedback"]
        if isinstance(doc.get("responseId"), str) and self.response_id is None:
            self.response_id = doc["responseId"]
        if isinstance(doc.get("modelVersion"), str):
            self.model_version = doc["modelVersion"]
        candidate = _first_candidate(doc.get("candidates"))
        if candidate is None:
            log.debug("Gemini chunk without candidates (keys %s): nothing to emit", sorted(doc))
            return []
        out: list[BaseEvent] = []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if parts is not None and not isinstance(parts, list):
            raise MalformedChunkError("Gemini candidate content.parts is not a list", json.dumps(doc)[:200])
        for part in parts or ():
            out.extend(self._part(part))
        out.extend(self._candidate_sources(candidate))
        if isinstance(candidate.get("finishReason"), str):
            self.finish_raw = candidate["finishReason"]
        if isinstance(candidate.get("finishMessage"), str):
            self.finish_message = candidate["finishMessage"]
        return out

    def end(self) -> list[BaseEvent] | None:
        if not self.seen_chunk:
            return None
        usage = usage_from(self.usage_raw)
        if self._streamed is not None:
            return self.builder.error(
                "stream ended inside a streamed function call (willContinue was never cleared)",
                code="incomplete_tool_call",
                usage=usage,
            )
        blocked = self.prompt_feedback is not None and self.prompt_feedback.get("blockReason")
        if self.finish_raw is None and not blocked:
            return None
        # A blocked prompt has no finishReason at all: promptFeedback.blockReason says why.
        reason = "content_filter" if self.finish_raw is None else self.builder.finish_reason(self.finish_raw)
        out = self._close_text()
        out.extend(self._close_reasoning())
        out.extend(self.builder.finish(reason, self.finish_raw, usage, self._finish_meta(bool(blocked)),
                               response_id=self.response_id, model=self.model_version))
        return out

    def _finish_meta(self, blocked: bool) -> dict[str, Any] | None:
        meta: dict[str, Any] = {}
        if self.finish_message is not None:
            meta["finishMessage"] = self.finish_message
        if blocked:
            meta["promptFeedback"] = self.prompt_feedback
        if self.usage_raw is not None:
            meta["usageMetadata"] = self.usage_raw
        if self.response_id is not None:
            meta["responseId"] = self.response_id
        if self.model_version is not None:
            meta["modelVersion"] = self.model_version
        return {"gemini": meta} if meta else None

    def _error(self, err: Any) -> list[BaseEvent]:
        if isinstance(err, dict):
            message = str(err.get("message") or json.dumps(err)[:500])
            code = err.get("status") or err.get("code")
        else:
            message, code = str(err)[:500], None
        return self.builder.error(message, code=str(code) if code is not None else "provider_error",
                                  usage=usage_from(self.usage_raw))

    # -- parts ----------------------------------------------------------------------------------
    def _part(self, part: Any) -> list[BaseEvent]:
        if not isinstance(part, dict):
            raise MalformedChunkError(f"Gemini part is not a JSON object: {part!r}"[:200])
        sig = part.get("thoughtSignature")
        signature = sig if isinstance(sig, str) and sig else None
        if "functionCall" in part:
            return self._function_call(part["functionCall"], signature)
        if "text" in part:
            text = part["text"]
            if not isinstance(text, str):
                raise MalformedChunkError(f"Gemini text part is not a string: {part!r}"[:200])
            return self._text(text, signature, part.get("thought") is True)
        if signature and len(part) == 1:
            return self._text("", signature, False)
        if "inlineData" in part or "fileData" in part:
            return self._file(part, signature)
        if SERVER_PARTS.intersection(part):
            out = self._close_text()
            out.extend(self._close_reasoning())
            out.append(Custom("gemini.part", part))
            out.append(ReasoningEncryptedValue("message", new_id("srv"), signature or "",
                                               metadata={"gemini": {"part": part}}))
            return out
        log.debug("Gemini part with fields %s passed on as RAW", sorted(part))
        return self.builder.raw(part, "gemini")

    def _file(self, part: dict[str, Any], signature: str | None) -> list[BaseEvent]:
        meta: dict[str, Any] = {}
        if signature:
            meta["thoughtSignature"] = signature
        if part.get("thought") is True:
            meta["thought"] = True
        provider_metadata = {"gemini": meta} if meta else None
        inline, ref = part.get("inlineData"), part.get("fileData")
        if isinstance(inline, dict) and isinstance(inline.get("data"), str):
            try:
                data = base64.b64decode(inline["data"], validate=True)
            except (binascii.Error, ValueError):
                raise MalformedChunkError("Gemini inlineData.data is not base64", str(inline["data"])[:200]) from None
            file = FilePart(str(inline.get("mimeType") or "application/octet-stream"), data=data,
                            filename=inline.get("displayName"), provider_metadata=provider_metadata)
        elif isinstance(ref, dict) and isinstance(ref.get("fileUri"), str):
            file = FilePart(str(ref.get("mimeType") or "application/octet-stream"), url=ref["fileUri"],
                            filename=ref.get("displayName"), provider_metadata=provider_metadata)
        else:
            raise MalformedChunkError(f"Gemini file part without data or fileUri: {part!r}"[:200])
        out = self._close_text()
        out.extend(self._close_reasoning())
        out.extend(self.builder.file(file))
        return out

    # -- sources --------------------------------------------------------------------------------
    def _candidate_sources(self, candidate: dict[str, Any]) -> list[BaseEvent]:
        found: list[SourcePart] = []
        grounding = candidate.get("groundingMetadata")
        if isinstance(grounding, dict):
            found.extend(self._grounding_sources(grounding))
        citations = candidate.get("citationMetadata")
        if isinstance(citations, dict):
            entries = citations.get("citationSources") or citations.get("citations") or []
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and isinstance(entry.get("uri"), str):
                    start, end = self._span(entry.get("startIndex", 0), entry.get("endIndex"))
                    found.append(SourcePart(new_id("src"), "url", url=entry["uri"], title=_opt_str(entry.get("title")),
                                            start_index=start, end_index=end,
                                            provider_metadata={"gemini": {"citationSource": entry}}))
        url_context = candidate.get("urlContextMetadata")
        if isinstance(url_context, dict) and isinstance(url_context.get("urlMetadata"), list):
            for entry in url_context["urlMetadata"]:
                if (isinstance(entry, dict) and isinstance(entry.get("retrievedUrl"), str)
                        and entry.get("urlRetrievalStatus") in (None, "URL_RETRIEVAL_STATUS_SUCCESS")):
                    found.append(SourcePart(new_id("src"), "url", url=entry["retrievedUrl"],
                                            provider_metadata={"gemini": {"urlMetadata": entry}}))
        out: list[BaseEvent] = []
        for source in found:
            key = (source.url, source.title, source.cited_text, source.start_index, source.end_index)
            if key in self._sources_seen:
                continue
            self._sources_seen.add(key)
            out.extend(self.builder.source(source))
        return out

    def _grounding_sources(self, grounding: dict[str, Any]) -> list[SourcePart]:
        chunks = grounding.get("groundingChunks")
        chunks = chunks if isinstance(chunks, list) else []
        supports = grounding.get("groundingSupports")
        supports = supports if isinstance(supports, list) else []
        out: list[SourcePart] = []
        cited: set[int] = set()
        for support in supports:
            if not isinstance(support, dict):
                continue
            raw_segment = support.get("segment")
            segment: dict[str, Any] = raw_segment if isinstance(raw_segment, dict) else {}
            start, end = self._span(segment.get("startIndex", 0), segment.get("endIndex"))
            indices = support.get("groundingChunkIndices")
            for i in indices if isinstance(indices, list) else ():
                if isinstance(i, int) and 0 <= i < len(chunks):
                    source = _chunk_source(chunks[i], i, segment)
                    if source is not None:
                        cited.add(i)
                        source.cited_text = _opt_str(segment.get("text"))
                        source.start_index, source.end_index = start, end
                        out.append(source)
        for i, chunk in enumerate(chunks):
            if i not in cited:
                source = _chunk_source(chunk, i, None)
                if source is not None:
                    out.append(source)
        return out

    def _span(self, start: Any, end: Any) -> tuple[int | None, int | None]:
        """Byte offsets into the step's UTF-8 text -> character offsets (``None`` when not given)."""
        if not isinstance(end, int) or not isinstance(start, int):
            return None, None
        encoded = "".join(self._texts).encode("utf-8")
        if not 0 <= start <= end <= len(encoded):
            return None, None
        return (len(encoded[:start].decode("utf-8", errors="ignore")),
                len(encoded[:end].decode("utf-8", errors="ignore")))

    def _text(self, text: str, signature: str | None, thought: bool) -> list[BaseEvent]:
        b = self.builder
        out: list[BaseEvent] = []
        if text:
            if thought:
                out.extend(self._close_text())
                if b.reasoning_open and signature and self._reasoning_sig and signature != self._reasoning_sig:
                    out.extend(self._close_reasoning())
                out.extend(b.reasoning(text))
                if signature:
                    self._reasoning_sig = signature
            else:
                out.extend(self._close_reasoning())
                if b.text_open and signature and self._text_sig and signature != self._text_sig:
                    out.extend(self._close_text())
                out.extend(b.text(text))
                self._texts.append(text)
                if signature:
                    self._text_sig = signature
        elif signature:
            if b.text_open and self._text_sig is None:
                self._text_sig = signature
            elif b.reasoning_open and self._reasoning_sig is None:
                self._reasoning_sig = signature
            else:
                out.extend(self._close_text())
                out.extend(self._close_reasoning())
                out.append(ReasoningEncryptedValue("message", new_id("sig"), signature,
                                                   metadata=_signature_meta(signature)))
        return out

    def _close_text(self) -> list[BaseEvent]:
        out = self.builder.end_text(_signature_meta(self._text_sig))
        self._text_sig = None
        return out

    def _close_reasoning(self) -> list[BaseEvent]:
        out = self.builder.end_reasoning(_signature_meta(self._reasoning_sig))
        self._reasoning_sig = None
        return out

    # -- function calls -------------------------------------------------------------------------
    def _function_call(self, fc: Any, signature: str | None) -> list[BaseEvent]:
        name, args, partial = _checked_call(fc)
        more = fc.get("willContinue") is True
        out: list[BaseEvent] = []
        if self._streamed is not None:
            if not name:  # continuation (or the closing ``functionCall: {}``) of the streamed call
                return self._continue_streamed(self._streamed, args, partial, more, signature)
            out.extend(self._finish_streamed())  # a new call starts: the previous one is complete
        if not name:
            if partial or args:
                raise MalformedChunkError(f"Gemini functionCall without a name: {fc!r}"[:200])
            return out  # a stray closing marker carries nothing
        out.extend(self._close_text())
        out.extend(self._close_reasoning())
        call_id = fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else None
        tool_call_id = self._tool_call_id(call_id)
        meta: dict[str, Any] = {}
        if signature:
            meta["thoughtSignature"] = signature
        if call_id:
            meta["functionCallId"] = call_id
        out.extend(self.builder.tool_start(tool_call_id, name, metadata={"gemini": meta} if meta else None))
        if more or partial:
            self._streamed = _StreamedCall(tool_call_id, args, signature is not None)
            out.extend(self._continue_streamed(self._streamed, None, partial, more, None))
            return out
        value = args or {}
        out.extend(self.builder.tool_args(tool_call_id, json.dumps(value, ensure_ascii=False)))
        out.extend(self.builder.tool_end(tool_call_id, input=value))
        return out

    def _continue_streamed(
        self, streamed: _StreamedCall, args: dict[str, Any] | None, partial: list[Any] | None, more: bool,
        signature: str | None,
    ) -> list[BaseEvent]:
        """Add one piece (``args``, ``partialArgs``) to the streamed call; finish it when ``more`` is
        false. A ``signature`` on a later piece than the start rides on ``TOOL_CALL_END``."""
        if signature and not streamed.signed and streamed.late_signature is None:
            streamed.late_signature = signature
        if args:
            streamed.args = {**(streamed.args or {}), **args}
        for entry in partial or ():
            streamed.partial.add(entry)
        return [] if more else self._finish_streamed()

    def _finish_streamed(self) -> list[BaseEvent]:
        streamed = self._streamed
        if streamed is None:
            return []
        self._streamed = None
        value = {**(streamed.args or {}), **streamed.partial.value()}
        out = self.builder.tool_args(streamed.tool_call_id, json.dumps(value, ensure_ascii=False))
        out.extend(self.builder.tool_end(streamed.tool_call_id, input=value,
                                         metadata=_signature_meta(streamed.late_signature)))
        return out

    def _tool_call_id(self, call_id: str | None) -> str:
        n = self._calls
        self._calls += 1
        tool_call_id = call_id or f"gemini-{self.response_id or self.context.run_id}-{n}"
        if tool_call_id in self._ids:  # ids must not repeat within one call's event stream
            tool_call_id = f"{tool_call_id}-{n}"
        self._ids.add(tool_call_id)
        return tool_call_id


def _checked_call(fc: Any) -> tuple[str | None, dict[str, Any] | None, list[Any] | None]:
    """(``name`` or ``None``, ``args``, ``partialArgs``) of a ``functionCall`` part; raises
    :class:`MalformedChunkError` for one whose fields have the wrong JSON types."""
    if not isinstance(fc, dict):
        raise MalformedChunkError(f"Gemini functionCall is not a JSON object: {fc!r}"[:200])
    name = fc.get("name")
    if name is not None and not isinstance(name, str):
        raise MalformedChunkError(f"Gemini functionCall.name is not a string: {fc!r}"[:200])
    args = fc.get("args")
    if args is not None and not isinstance(args, dict):
        raise MalformedChunkError(f"Gemini functionCall.args is not an object: {fc!r}"[:200])
    partial = fc.get("partialArgs")
    if partial is not None and not isinstance(partial, list):
        raise MalformedChunkError(f"Gemini functionCall.partialArgs is not a list: {fc!r}"[:200])
    return name or None, args, partial


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _chunk_source(chunk: Any, index: int, segment: dict[str, Any] | None) -> SourcePart | None:
    """The source of one grounding chunk (``web``, ``retrievedContext`` or ``maps``), or ``None``."""
    if not isinstance(chunk, dict):
        return None
    for key in ("web", "retrievedContext", "maps"):
        ref = chunk.get(key)
        if isinstance(ref, dict):
            uri = _opt_str(ref.get("uri"))
            meta: dict[str, Any] = {"groundingChunk": chunk, "groundingChunkIndex": index}
            if segment is not None:
                meta["segment"] = segment
            is_web = uri is not None and uri.startswith(("http://", "https://"))
            return SourcePart(new_id("src"), "url" if is_web or key == "web" else "document", url=uri,
                              title=_opt_str(ref.get("title")), provider_metadata={"gemini": meta})
    return None


def _first_candidate(candidates: Any) -> dict[str, Any] | None:
    if candidates is None:
        return None
    if not isinstance(candidates, list):
        raise MalformedChunkError("Gemini candidates is not a list", json.dumps(candidates)[:200])
    for candidate in candidates:
        if isinstance(candidate, dict) and candidate.get("index", 0) == 0:
            return candidate
    return None


def parse_stream(events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
    """AG-UI events of one Gemini stream (see the module docstring). Raises
    :class:`~hookstream.errors.MalformedChunkError` for data that is not Gemini JSON."""
    parser = GeminiStreamParser(context)
    yield from parser.builder.start()
    for sse in events:
        data = sse.data
        if not data or not data.strip():
            continue
        try:
            doc = json_loads(data)
        except ValueError:
            raise MalformedChunkError("Gemini chunk is not valid JSON", data) from None
        # Without ``alt=sse`` Gemini answers a JSON array of responses; accept it in one event too.
        for item in doc if isinstance(doc, list) else (doc,):
            yield from parser.chunk(item)
            if parser.builder.closed:
                return
    closing = parser.end()
    if closing is not None:
        yield from closing
