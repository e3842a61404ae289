"""Shared pieces of the hookstream-vertex tests: SSE bodies in the two wire formats Vertex AI streams,
test credentials, and the environment of a machine without any Google credentials."""

from __future__ import annotations

import datetime
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import google.auth.credentials

TOKEN = "ya29.vertex-test-SECRET-token"
"""An access token the tests hand out; it must never reach an error message (see redaction tests)."""


def gemini_sse(*chunks: dict[str, Any]) -> bytes:
    """A ``streamGenerateContent?alt=sse`` body: one ``GenerateContentResponse`` per SSE event."""
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def gemini_text(text: str, finish: str = "STOP") -> bytes:
    return gemini_sse({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
        "modelVersion": "gemini-2.5-flash",
    })


def gemini_calls(*calls: tuple[str, dict[str, Any]]) -> bytes:
    parts = [{"functionCall": {"name": name, "args": args}} for name, args in calls]
    return gemini_sse({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 13},
    })


def anthropic_sse(*events: dict[str, Any]) -> bytes:
    """A Messages API stream as ``streamRawPredict`` sends it (``event:`` name + ``data:`` JSON)."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


def _start(usage_in: int = 11) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "id": "msg_vrtx_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage_in, "output_tokens": 1}}}


def anthropic_text(text: str) -> bytes:
    return anthropic_sse(
        _start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    )


def anthropic_calls(*calls: tuple[str, str, dict[str, Any]]) -> bytes:
    events: list[dict[str, Any]] = [_start()]
    for i, (call_id, name, args) in enumerate(calls):
        text = json.dumps(args)
        events += [
            {"type": "content_block_start", "index": i,
             "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": i,
             "delta": {"type": "input_json_delta", "partial_json": text[:5]}},
            {"type": "content_block_delta", "index": i,
             "delta": {"type": "input_json_delta", "partial_json": text[5:]}},
            {"type": "content_block_stop", "index": i},
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 20}},
        {"type": "message_stop"},
    ]
    return anthropic_sse(*events)


def utcnow() -> datetime.datetime:
    """Now as google-auth keeps expiries: a naive UTC datetime."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


class CountingCredentials(google.auth.credentials.Credentials):  # type: ignore[misc]
    """google-auth credentials whose :meth:`refresh` counts its calls and mints ``fresh-N`` tokens that
    live ``lifetime`` seconds. ``delay`` seconds per refresh widen the window in which threads race."""

    def __init__(self, token: str | None, expires_in: float | None, *, lifetime: float = 3600.0,
                 delay: float = 0.0, quota_project: str | None = None) -> None:
        super().__init__()
        self.token = token
        self.expiry = None if expires_in is None else utcnow() + datetime.timedelta(seconds=expires_in)
        self.lifetime = lifetime
        self.delay = delay
        self.refreshes = 0
        self._quota_project_id = quota_project
        self._count_lock = threading.Lock()

    def refresh(self, request: Any) -> None:
        with self._count_lock:
            self.refreshes += 1
            n = self.refreshes
        time.sleep(self.delay)
        self.token = f"fresh-{n}"
        self.expiry = utcnow() + datetime.timedelta(seconds=self.lifetime)


def no_credentials_env(home: Path) -> dict[str, str]:
    """The environment of a machine with no Google credentials at all: HOME and the gcloud config
    folder point at an empty directory, no GOOGLE_APPLICATION_CREDENTIALS, and google-auth told not to
    probe the GCE metadata server (``NO_GCE_CHECK``, read by google-auth at import; the metadata host
    also points at a closed local port should it probe anyway)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "CLOUDSDK_", "GCLOUD_", "ANTHROPIC_VERTEX_", "CLOUD_ML_"))}
    env.update({
        "HOME": str(home),
        "CLOUDSDK_CONFIG": str(home / "gcloud"),
        "NO_GCE_CHECK": "true",
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
    })
    return env
