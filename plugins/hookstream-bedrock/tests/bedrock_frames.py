"""Test helpers: scripted AWS event-stream frames for Bedrock ConverseStream, and credential setup.

botocore decodes event streams but has no encoder, so the frames here are built with
``binascii.crc32`` following the AWS "Event stream encoding" layout (prelude: total length, headers
length, prelude CRC32; string headers of type 7; the JSON payload; the message CRC32). They are
scripted test frames written from the Bedrock API Reference ("ConverseStream" response events), not
recordings; the real recordings live in ``recordings/``. Imported by the test modules (pytest puts
this folder on sys.path).
"""

from __future__ import annotations

import binascii
import copy
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from hookstream.testing import Recording

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "FQoGZXIvYXdzEXAMPLE-session-token-0123456789"
MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
MEDIA_TYPE = "application/vnd.amazon.eventstream"


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("!B", len(n)) + n + b"\x07" + struct.pack("!H", len(v)) + v


def encode(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string ``headers`` and ``payload``, both CRCs correct."""
    hbytes = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(hbytes) + len(payload) + 4
    prelude = struct.pack("!II", total, len(hbytes))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    message = prelude + hbytes + payload
    return message + struct.pack("!I", binascii.crc32(message))


def event(kind: str, doc: dict[str, Any], *, pad: str = "abcdefgh") -> bytes:
    """A ``:message-type event`` frame of ``:event-type kind``; ``pad`` is the ``"p"`` field Bedrock
    adds to every payload."""
    payload = json.dumps({**doc, "p": pad} if pad else doc).encode()
    return encode({":event-type": kind, ":content-type": "application/json", ":message-type": "event"}, payload)


def exception(kind: str, message: str) -> bytes:
    """A ``:message-type exception`` frame (``:exception-type kind``) with ``{"message": ...}``."""
    return encode({":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
                  json.dumps({"message": message}).encode())


def message_start() -> bytes:
    return event("messageStart", {"role": "assistant"})


def text(index: int, *chunks: str) -> bytes:
    return b"".join(event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": c}}) for c in chunks) \
        + event("contentBlockStop", {"contentBlockIndex": index})


def reasoning(index: int, signature: str, *chunks: str) -> bytes:
    out = b"".join(event("contentBlockDelta", {"contentBlockIndex": index,
                                               "delta": {"reasoningContent": {"text": c}}}) for c in chunks)
    out += event("contentBlockDelta",
                 {"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": signature}}})
    return out + event("contentBlockStop", {"contentBlockIndex": index})


def tool_use(index: int, tool_id: str, name: str, *pieces: str) -> bytes:
    out = event("contentBlockStart", {"contentBlockIndex": index,
                                      "start": {"toolUse": {"toolUseId": tool_id, "name": name}}})
    out += b"".join(event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": p}}})
                    for p in pieces)
    return out + event("contentBlockStop", {"contentBlockIndex": index})


def stop(reason: str, usage: tuple[int, int] = (10, 5), **usage_extra: int) -> bytes:
    u = {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage) + sum(usage_extra.values()),
         **usage_extra}
    return event("messageStop", {"stopReason": reason}) + event("metadata", {"usage": u, "metrics": {"latencyMs": 42}})


def set_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, token: bool = False,
                    keys: bool = True) -> None:
    """An AWS environment for one test: no AWS variable from the real environment, empty config and
    credentials files, no instance metadata lookups; the example keys when ``keys``."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    empty = tmp_path / "aws-empty"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if keys:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        if token:
            monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)


def hookstream_expected(recording: Recording) -> Recording:
    """``recording`` with its expected result in hookstream's terms (see ``test_bedrock_conformance``'s docstring: cache
    counts added to ``input_tokens``, server tools not client tool calls)."""
    expected = copy.deepcopy(recording.expected)
    extra = expected.get("extra") or {}
    usage = expected.get("usage") or {}
    cache = (extra.get("cacheReadInputTokens") or 0) + (extra.get("cacheWriteInputTokens") or 0)
    if usage.get("input_tokens") is not None and cache:
        usage["input_tokens"] += cache
    kinds = extra.get("tool_use_types") or {}
    expected["tool_calls"] = [c for c in expected.get("tool_calls") or []
                              if kinds.get(c.get("id")) != "server_tool_use"]
    return Recording(recording.name, recording.body_path, expected)
