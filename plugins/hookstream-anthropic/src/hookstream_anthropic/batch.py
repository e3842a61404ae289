"""Anthropic's Message Batches API: the batch capability of ``anthropic`` (``hookstream batch
--provider-batch``).

Source: Anthropic API reference, "Message Batches" (https://docs.anthropic.com/en/api/creating-message-batches,
".../retrieving-message-batches", ".../retrieving-message-batch-results") and the batch processing guide:

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params": <a Messages body>}]}`` creates the
  batch (``custom_id``: 1-64 characters of ``[A-Za-z0-9_-]``);
* ``GET /v1/messages/batches/{id}`` polls it: ``processing_status`` ``in_progress`` | ``canceling`` |
  ``ended``, ``request_counts`` ``{processing, succeeded, errored, canceled, expired}``, and once ended
  ``results_url``;
* ``results_url`` is JSON Lines of ``{"custom_id", "result": {"type": "succeeded", "message": {...}}}``, or
  a result of type ``errored`` (``error``: the error body ``{"type": "error", "error": {"type", "message"}}``),
  ``canceled`` or ``expired``.

A succeeded result is a Messages ``message`` object; it is rewritten as the event stream a streamed
call would have sent (:func:`message_stream`) and parsed by the provider's own ``parse_stream``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hookstream.plugin import BatchAPI, BatchItem, BatchStatus, HTTPRequest, send_batch_call

from .request import ANTHROPIC_VERSION

__all__ = ["AnthropicBatch", "message_stream"]


def _sse(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """``content_block_start`` / ``_delta``s / ``_stop`` of one whole content block, as the streaming API
    sends them (API reference, "Streaming Messages": text and thinking start empty and arrive as deltas,
    a tool's input as ``input_json_delta`` text)."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    start: dict[str, Any]
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas.append({"type": "text_delta", "text": block.get("text", "")})
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or ()]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        if block.get("thinking"):
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {**block, "input": {}}
        deltas.append({"type": "input_json_delta",
                       "partial_json": json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))})
    else:  # redacted thinking, server tools and their results: whole on their start, as the adapter takes them
        start = block
    return [{"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]


def message_stream(message: dict[str, Any]) -> bytes:
    """The SSE body of the Messages stream answering with ``message`` (a ``message`` object):
    ``message_start`` (content empty), each block's events, ``message_delta`` (stop reason, usage) and
    ``message_stop``."""
    usage = message.get("usage") or {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 0}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message.get("content") or ()):
        if isinstance(block, dict):
            events += _block_events(i, block)
    events.append({"type": "message_delta", "usage": usage,
                   "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}})
    events.append({"type": "message_stop"})
    return b"".join(_sse(e) for e in events)


class AnthropicBatch(BatchAPI):
    """The Message Batches API of an :class:`~hookstream_anthropic.AnthropicProvider`."""

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.provider.api_key:
            headers["x-api-key"] = self.provider.api_key.reveal()
        return headers

    def entry(self, custom_id: str, request: HTTPRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": {k: v for k, v in request.json.items() if k != "stream"}}

    def submit(self, entries: list[dict[str, Any]]) -> str:
        doc = send_batch_call(self.provider, "POST", f"{self.provider.base_url}/v1/messages/batches",
                              headers=self._headers(), json={"requests": entries}).json()
        return str(doc["id"])

    def _batch(self, batch_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = send_batch_call(
            self.provider, "GET", f"{self.provider.base_url}/v1/messages/batches/{batch_id}",
            headers=self._headers()).json()
        return doc

    def poll(self, batch_id: str) -> BatchStatus:
        doc = self._batch(batch_id)
        counts = doc.get("request_counts") or {}
        done = sum(int(counts.get(k) or 0) for k in ("succeeded", "errored", "canceled", "expired"))
        state = str(doc.get("processing_status"))
        return BatchStatus(state, state == "ended", done, done + int(counts.get("processing") or 0))

    def results(self, batch_id: str) -> Iterator[BatchItem]:
        url = self._batch(batch_id).get("results_url")
        if not url:
            return
        content = send_batch_call(self.provider, "GET", str(url), headers=self._headers()).content
        for raw in content.splitlines():
            if raw.strip():
                yield self._item(json.loads(raw))

    def _item(self, line: dict[str, Any]) -> BatchItem:
        ident = str(line.get("custom_id"))
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return BatchItem(ident, body=message_stream(result["message"]))
        if kind == "errored":
            message, error_type = self.provider.read_error(400, json.dumps(result.get("error")).encode("utf-8"))
            return BatchItem(ident, error=(error_type or "errored", message))
        if kind in ("canceled", "expired"):
            return BatchItem(ident, error=(str(kind), f"the batch {kind} this request before it ran"))
        return BatchItem(ident, error=("error", f"unknown batch result type {kind!r}"))
