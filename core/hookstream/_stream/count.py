"""Input-token counts of one model request, each saying where it came from (:class:`TokenCount`).

In order: the provider's own endpoint when its adapter has one (:meth:`Provider.token_count_request`:
Anthropic ``/v1/messages/count_tokens``, Gemini ``models/{model}:countTokens``, OpenAI Responses
``/v1/responses/input_tokens``, Bedrock ``CountTokens``), source ``"provider"``; else a maintained
tokenizer for the model's family when it is installed (``tiktoken`` for OpenAI models, the
``hookstream[tokens]`` extra), source ``"tokenizer"``; else 4 characters a token
(:mod:`hookstream._estimate`), source ``"estimate"``.

A count endpoint that answers 404 or 405 (an OpenAI- or Anthropic-compatible server that has no such
endpoint) is counted locally instead and the source says so; every other failure raises its typed error.
tiktoken downloads its BPE file on first use (cached under ``TIKTOKEN_CACHE_DIR``); when that fails
(offline) or takes more than :data:`LOAD_TIMEOUT` seconds, the count is the estimate, and the failure is
remembered for the process so it is not retried on every count.

Thread safety: functions only; the tokenizer cache is filled under a lock.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from .._errors import HookstreamError, HTTPStatusError, redact_exception
from .._estimate import estimate_request_tokens, files_tokens, message_texts
from .._messages import Message
from .provider import ModelRequest, Provider, ToolSpec
from .transport import post_json

__all__ = ["TokenCount", "TokenSource", "count_request", "local_count", "tokenizer_count"]

log = logging.getLogger("hookstream.tokens")

TokenSource = Literal["provider", "tokenizer", "estimate"]
"""Where a count came from: the provider's count endpoint, a local tokenizer, or 4 characters a token."""

# Statuses meaning "this server has no count endpoint" (a compatible server): count locally instead.
_NO_ENDPOINT = frozenset({404, 405})


@attrs.frozen(slots=True)
class TokenCount:
    """The input tokens of one request to ``model`` (``"PROVIDER:MODEL"``), and where the number came from:
    ``source`` is ``"provider"`` (the provider's count endpoint: what it will bill), ``"tokenizer"`` (a
    local tokenizer of the model's family, close to the provider's count) or ``"estimate"`` (characters / 4)."""

    input_tokens: int
    source: TokenSource
    model: str


def count_request(
    provider: Provider, request: ModelRequest, *, connect_timeout: float | None = 10.0,
    read_timeout: float | None = 60.0,
) -> TokenCount:
    """The input tokens of ``request`` sent to ``provider``: its count endpoint when it has one, else
    :func:`local_count`. Raises :class:`~hookstream.errors.MissingCredentialsError` before sending,
    :class:`~hookstream.errors.ConnectError`, :class:`~hookstream.errors.StreamTimeoutError`, an
    :class:`~hookstream.errors.HTTPStatusError` subclass (but 404/405: counted locally) or
    :class:`~hookstream.errors.MalformedChunkError` for an answer without a count; every message masked
    with the provider's key."""
    label = provider.label(request.model)
    http = provider.token_count_request(request)
    if http is not None:
        try:
            provider.check_api_key()
            body = http.body()
            provider.sign(http, body)
            answer = post_json(provider.session, http, body=body, error_reader=provider.read_error,
                               connect_timeout=connect_timeout, read_timeout=read_timeout)
            return TokenCount(provider.read_token_count(answer), "provider", label)
        except HTTPStatusError as exc:
            redact_exception(exc, provider.redact)
            if exc.status not in _NO_ENDPOINT:
                raise
            log.info("%s has no token-count endpoint (HTTP %s): counting locally", http.redacted_url(), exc.status)
        except HookstreamError as exc:
            redact_exception(exc, provider.redact)
            raise
    n, source = local_count(request.model, request.messages, request.tools)
    return TokenCount(n, source, label)


def local_count(model: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> tuple[int, TokenSource]:
    """``(tokens, source)`` counted here: :func:`tokenizer_count` when a tokenizer knows ``model``, else
    the estimate."""
    n = tokenizer_count(model, messages, tools)
    if n is not None:
        return n, "tokenizer"
    return estimate_request_tokens(messages, (_schema(t) for t in tools)), "estimate"


def _schema(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


# tiktoken encoding per model name (None: no tokenizer for it); filled on first use.
_encodings: dict[str, Any] = {}
_failed: set[str] = set()  # encoding names whose BPE file could not be loaded (offline)
_lock = threading.Lock()
LOAD_TIMEOUT = 10.0
"""Seconds tiktoken may take to load (download) an encoding's BPE file before counts fall back to the estimate."""


def _encoding(model: str) -> Any:
    if model in _encodings:
        return _encodings[model]
    with _lock:
        if model in _encodings:
            return _encodings[model]
        _encodings[model] = enc = _load_encoding(model)
        return enc


def _load_encoding(model: str) -> Any:
    try:
        import tiktoken
        import tiktoken.model
    except ImportError:
        return None
    try:
        name = tiktoken.model.encoding_name_for_model(model)
    except KeyError:  # not an OpenAI model name tiktoken knows
        return None
    if name in _failed:
        return None
    # tiktoken fetches its BPE file over HTTP on first use, with no time limit of its own: load it on a
    # daemon thread and give up after LOAD_TIMEOUT seconds, so a firewalled network cannot hang a count
    # (or a run whose budget counts each step).
    done = threading.Event()
    box: list[Any] = []

    def load() -> None:
        try:
            box.append(tiktoken.get_encoding(name))
        except Exception as exc:  # offline: a connection error; a damaged cache file: a hash mismatch
            box.append(exc)
        finally:
            done.set()

    threading.Thread(target=load, name=f"hookstream-tiktoken-{name}", daemon=True).start()
    if not done.wait(LOAD_TIMEOUT):
        box.append(TimeoutError(f"no answer in {LOAD_TIMEOUT:g} s"))
    result = box[0]
    if isinstance(result, BaseException):
        _failed.add(name)
        log.warning("tiktoken could not load %s (%s: %s); token counts for %s are estimates",
                    name, type(result).__name__, result, model)
        return None
    return result


# OpenAI cookbook, "How to count tokens with tiktoken": every chat message costs 3 tokens besides its
# content, and every reply is primed with 3 more.
_PER_MESSAGE = 3
_REPLY_PRIMING = 3


def tokenizer_count(model: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int | None:
    """The tokens of ``messages`` and ``tools`` by the tokenizer of ``model``'s family (tiktoken for the
    OpenAI models it knows, counted as the OpenAI cookbook does), or ``None`` when no tokenizer is
    installed or loadable for it."""
    enc = _encoding(model)
    if enc is None:
        return None
    n = _REPLY_PRIMING
    for m in messages:
        n += _PER_MESSAGE + len(enc.encode(m.role, disallowed_special=()))
        for text in message_texts(m):
            n += len(enc.encode(text, disallowed_special=()))
        n += files_tokens(m)  # the tokenizer reads text only: files count by the providers' rules
    for t in tools:
        n += len(enc.encode(json.dumps(_schema(t), separators=(",", ":")), disallowed_special=()))
    return n
