"""OpenAI's Batch API for Chat Completions: the batch capability of ``openai`` (``hookstream batch
--provider-batch``).

Source: OpenAI API reference, "Batch" (https://platform.openai.com/docs/api-reference/batch) and the
Batch API guide (https://platform.openai.com/docs/guides/batch):

* the input file is JSON Lines of ``{"custom_id", "method": "POST", "url": "/v1/chat/completions",
  "body": {...}}``, uploaded with ``POST /v1/files`` (multipart, ``purpose=batch``);
* ``POST /v1/batches`` ``{"input_file_id", "endpoint": "/v1/chat/completions", "completion_window": "24h"}``
  creates the batch; ``GET /v1/batches/{id}`` polls it (``status``: ``validating``, ``in_progress``,
  ``finalizing``, ``completed``, ``failed``, ``expired``, ``cancelling``, ``cancelled``;
  ``request_counts`` ``{total, completed, failed}``);
* ``GET /v1/files/{output_file_id}/content`` and ``{error_file_id}`` are JSON Lines of
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``; a request that did
  not run has ``response: null`` and ``error: {"code", "message"}`` (``batch_expired``, ``batch_cancelled``).

A result body is a ``chat.completion`` object; it is rewritten as the ``chat.completion.chunk`` stream a
streamed call would have sent (:func:`completion_stream`) and parsed by the provider's own ``parse_stream``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hookstream.errors import MalformedChunkError
from hookstream.plugin import BatchAPI, BatchItem, BatchStatus, HTTPRequest, send_batch_call

__all__ = ["OpenAIBatch", "completion_stream"]

ENDPOINT = "/v1/chat/completions"
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_STREAM_ONLY = ("stream", "stream_options")


def _sse(doc: Any) -> bytes:
    return b"data: " + json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def completion_stream(completion: dict[str, Any]) -> bytes:
    """The SSE body of ``chat.completion.chunk`` events a streamed call answering ``completion`` (a
    ``chat.completion`` object) would have sent: choice 0's message as one delta with its finish reason,
    then a usage chunk, then ``[DONE]``. Raises :class:`~hookstream.errors.MalformedChunkError` for an
    object without choices."""
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedChunkError("batch result is not a chat.completion", json.dumps(completion)[:200])
    choice = choices[0]
    message: dict[str, Any] = choice.get("message") or {}
    delta: dict[str, Any] = {k: v for k, v in message.items() if v is not None and k != "tool_calls"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    head: dict[str, Any] = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")
                            if k in completion}
    chunk: dict[str, Any] = {**head, "object": "chat.completion.chunk",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}]}
    body = _sse(chunk)
    if completion.get("usage") is not None:
        body += _sse({**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]})
    return body + b"data: [DONE]\n\n"


class OpenAIBatch(BatchAPI):
    """The Batch API of an :class:`~hookstream_openai.OpenAIChatProvider` (its ``base_url`` is the
    ``/v1`` root, so paths here are relative to it)."""

    def _headers(self) -> dict[str, str]:
        key = self.provider.api_key
        return {"Authorization": f"Bearer {key.reveal()}"} if key else {}

    def entry(self, custom_id: str, request: HTTPRequest) -> dict[str, Any]:
        body = {k: v for k, v in request.json.items() if k not in _STREAM_ONLY}
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def submit(self, entries: list[dict[str, Any]]) -> str:
        data = b"".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
                        for e in entries)
        base = self.provider.base_url
        upload = send_batch_call(self.provider, "POST", base + "/files", headers=self._headers(),
                                 data={"purpose": "batch"},  # a form field
                                 files={"file": ("batch.jsonl", data, "application/jsonl")}).json()
        created = send_batch_call(self.provider, "POST", base + "/batches", headers=self._headers(), json={
            "input_file_id": upload["id"], "endpoint": ENDPOINT, "completion_window": "24h"}).json()
        return str(created["id"])

    def _batch(self, batch_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = send_batch_call(self.provider, "GET", f"{self.provider.base_url}/batches/{batch_id}",
                                              headers=self._headers()).json()
        return doc

    def poll(self, batch_id: str) -> BatchStatus:
        doc = self._batch(batch_id)
        counts = doc.get("request_counts") or {}
        status = str(doc.get("status"))
        errors = (doc.get("errors") or {}).get("data") or []  # a failed batch: why its input was refused
        error = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict)) or None
        return BatchStatus(status, status in _ENDED, int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
                           counts.get("total"), error if status == "failed" else None)

    def results(self, batch_id: str) -> Iterator[BatchItem]:
        doc = self._batch(batch_id)
        for key in ("output_file_id", "error_file_id"):
            file_id = doc.get(key)
            if not file_id:
                continue
            content = send_batch_call(self.provider, "GET", f"{self.provider.base_url}/files/{file_id}/content",
                                      headers=self._headers()).content
            for raw in content.splitlines():
                if raw.strip():
                    yield self._item(json.loads(raw))

    def _item(self, line: dict[str, Any]) -> BatchItem:
        ident = str(line.get("custom_id"))
        response = line.get("response")
        if response is None:
            err = line.get("error") or {}
            return BatchItem(ident, error=(str(err.get("code") or "error"), str(err.get("message") or "no response")))
        status, body = int(response.get("status_code") or 0), response.get("body")
        if status != 200 or not isinstance(body, dict):
            message, error_type = self.provider.read_error(status, json.dumps(body).encode("utf-8"))
            return BatchItem(ident, error=(error_type or f"http_{status}", message))
        return BatchItem(ident, body=completion_stream(body))
