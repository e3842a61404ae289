"""The byte heuristic for token counts: 4 characters a token, the rule of thumb OpenAI's tokenizer guide
gives for English (Google's Gemini docs give the same). It is what every count falls back to when neither
the provider's endpoint nor a tokenizer for the model is at hand (:func:`hookstream.count_tokens`, source
``"estimate"``) and what ``History.last_tokens`` sizes a window with.

Thread safety: pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ._messages import Message

__all__ = ["CHARS_PER_TOKEN", "estimate_request_tokens", "estimate_tokens", "message_texts"]

CHARS_PER_TOKEN = 4


def message_texts(message: Message) -> Iterator[str]:
    """The texts of ``message`` a count covers: its text and reasoning, tool-call arguments and tool results."""
    for p in message.parts:
        text = getattr(p, "text", None)
        if text:
            yield text
        raw = getattr(p, "arguments_raw", None)
        if raw:
            yield raw
        output = getattr(p, "output", None)
        if output is not None:
            yield str(output)


def estimate_tokens(message: Message) -> int:
    """A rough token count of ``message`` (characters of its text, tool arguments and results / 4), at least 1."""
    return max(1, sum(len(t) for t in message_texts(message)) // CHARS_PER_TOKEN)


def estimate_request_tokens(messages: Iterable[Message], tool_schemas: Iterable[Any] = ()) -> int:
    """A rough token count of a request: :func:`estimate_tokens` of each message plus the characters of
    the tools' JSON schemas (``{"name", "description", "parameters"}`` values) / 4."""
    n = sum(estimate_tokens(m) for m in messages)
    schemas = list(tool_schemas)
    if schemas:
        n += len(json.dumps(schemas, separators=(",", ":"))) // CHARS_PER_TOKEN
    return n
