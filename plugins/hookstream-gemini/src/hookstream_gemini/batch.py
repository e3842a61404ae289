"""The Gemini API's batch mode with inline requests: the batch capability of ``gemini`` (``hookstream
batch --provider-batch``).

Source: Gemini API reference, "Batch API" (https://ai.google.dev/api/batch-api) and the batch mode guide
(https://ai.google.dev/gemini-api/docs/batch-mode):

* ``POST /v1beta/models/{model}:batchGenerateContent`` ``{"batch": {"displayName", "inputConfig":
  {"requests": {"requests": [{"request": <a GenerateContentRequest>, "metadata": {"key": ID}}]}}}}``
  answers with a long-running ``Operation`` whose ``name`` is ``batches/{id}``;
* ``GET /v1beta/batches/{id}`` polls it: ``metadata.state`` (``BATCH_STATE_PENDING``, ``_RUNNING``,
  ``_SUCCEEDED``, ``_FAILED``, ``_CANCELLED``, ``_EXPIRED``), ``metadata.batchStats``
  (``requestCount``, ``successfulRequestCount``, ``failedRequestCount``, ``pendingRequestCount``: int64
  as strings), ``done``;
* once done, ``response.inlinedResponses.inlinedResponses`` holds ``{"response": <a
  GenerateContentResponse>, "metadata": {"key"}}`` or ``{"error": <a Status>, "metadata"}`` per request.

A ``GenerateContentResponse`` is what each event of the streamed call carries, so a result is served to
the provider's own ``parse_stream`` as a one-event SSE stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hookstream.plugin import BatchAPI, BatchItem, BatchStatus, HTTPRequest, send_batch_call

__all__ = ["GeminiBatch"]

# google.rpc.Code numbers -> the status names the streaming endpoint's errors carry (read_error's type).
_CODES = {1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
          6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
          10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
          15: "DATA_LOSS", 16: "UNAUTHENTICATED"}
_ENDED = frozenset({"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"})


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class GeminiBatch(BatchAPI):
    """Batch mode of a :class:`~hookstream_gemini.GeminiProvider` (inline requests: the documented
    limit is 20 MB of requests per batch; larger batches need the file input, not done here)."""

    def _headers(self) -> dict[str, str]:
        key = self.provider.api_key
        return {"x-goog-api-key": key.reveal()} if key else {}

    def entry(self, custom_id: str, request: HTTPRequest) -> dict[str, Any]:
        return {"request": request.json, "metadata": {"key": custom_id}}

    def submit(self, entries: list[dict[str, Any]]) -> str:
        url = f"{self.provider.api_root()}/{self.provider.model_path()}:batchGenerateContent"
        doc = send_batch_call(self.provider, "POST", url,
                              headers=self._headers(), json={"batch": {
                                  "displayName": f"hookstream-{len(entries)}",
                                  "inputConfig": {"requests": {"requests": entries}}}}).json()
        return str(doc["name"])

    def _operation(self, name: str) -> dict[str, Any]:
        doc: dict[str, Any] = send_batch_call(self.provider, "GET", f"{self.provider.api_root()}/{name}",
                                              headers=self._headers()).json()
        return doc

    def poll(self, batch_id: str) -> BatchStatus:
        doc = self._operation(batch_id)
        meta = doc.get("metadata") or {}
        stats = meta.get("batchStats") or {}
        state = str(meta.get("state"))
        done = _int(stats.get("successfulRequestCount")) + _int(stats.get("failedRequestCount"))
        total = _int(stats.get("requestCount")) or None
        failure = doc.get("error")
        error = str(failure.get("message") or failure) if isinstance(failure, dict) else None
        return BatchStatus(state, bool(doc.get("done")) or state in _ENDED, done, total, error)

    def results(self, batch_id: str) -> Iterator[BatchItem]:
        doc = self._operation(batch_id)
        if isinstance(doc.get("error"), dict):  # the whole batch failed: every request gets this error
            return
        output = (doc.get("response") or {}).get("inlinedResponses") or {}
        for item in output.get("inlinedResponses") or ():
            ident = str((item.get("metadata") or {}).get("key"))
            if isinstance(item.get("response"), dict):
                data = json.dumps(item["response"], ensure_ascii=False, separators=(",", ":"))
                yield BatchItem(ident, body=f"data: {data}\n\n".encode())
            else:
                err = item.get("error") or {}
                message, status = self.provider.read_error(400, json.dumps({"error": err}).encode())
                number = err.get("code") if isinstance(err, dict) and not err.get("status") else None
                code = _CODES.get(number) if isinstance(number, int) else None
                yield BatchItem(ident, error=(code or status or "error", message))
