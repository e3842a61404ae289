"""Run one recorded response body through a provider adapter over real loopback HTTP.

This is what ``hookstream replay`` and the conformance kit use: the body is served by
:class:`~hookstream.testing.LoopbackServer` (whole, split at random boundaries, one byte, line
or event per read, or cut into given pieces) and read by the real transport and adapter, exactly as a
live call would be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import requests

from ._events import BaseEvent
from ._messages import Message
from ._registry import get_registry
from ._stream.accumulate import StepAccumulator, StepResult
from ._stream.call import CallOptions, ModelCall
from ._stream.loopback import LoopbackServer, Response
from ._stream.provider import CallContext, ModelRequest

__all__ = ["body_problem", "replay_body", "unread_stream_problem"]


def replay_body(
    provider_name: str,
    body: bytes,
    *,
    fragment: tuple[int, int] | None = None,
    seed: int = 0,
    model: str = "recorded-model",
    split: str | None = None,
    per_read: int = 1,
    cuts: Sequence[int] | None = None,
    options: CallOptions | None = None,
) -> tuple[list[BaseEvent], StepResult]:
    """Serve ``body`` (labelled with the provider framing's media type) on loopback, run
    ``provider_name``'s adapter against it for one model call, and
    return (the call's events, the aggregated result).

    How the body is cut into reads (see :class:`~.server.Response`; the first that is set wins):
    ``cuts`` (byte offsets into ``body`` where one read ends and the next begins, any order,
    out-of-range ones ignored), ``split``
    (``"bytes"``, ``"lines"`` or ``"events"``: the provider's framing's events, SSE events, NDJSON
    lines or binary messages; ``per_read`` units per read), ``fragment`` = (lo, hi)
    random sizes in bytes seeded by ``seed``; else whole. ``options`` are the call's
    :class:`~hookstream._stream.call.CallOptions` (e.g. ``max_event_bytes``). Raises
    :class:`~hookstream.errors.UnknownPluginError` for an unknown provider, :class:`ValueError` for an
    unknown ``split`` or ``per_read`` < 1."""
    provider_cls = get_registry().provider(provider_name)
    framing = provider_cls.framing
    pieces = _cut(body, cuts) if cuts is not None else None
    if pieces is None and split == "events":
        if per_read < 1:
            raise ValueError(f"per_read must be at least 1, not {per_read}")
        units = framing.split_events(body)  # SSE events, NDJSON lines, event-stream messages
        pieces = [b"".join(units[i:i + per_read]) for i in range(0, len(units), per_read)]
    response = Response(body, fragment=fragment, split=split, per_read=per_read, pieces=pieces,
                        content_type=framing.media_type)
    with LoopbackServer([response], seed=seed) as srv, requests.Session() as session:
        # The API root sits under the server URL where it sits under the provider's own host (``/v1``
        # for OpenAI, the bare host for Anthropic and Gemini), as the recorder keeps it.
        base_path = urlsplit(provider_cls.default_base_url).path.rstrip("/")
        provider = provider_cls(model, base_url=srv.url + base_path, api_key="recorded")
        request = ModelRequest(model=model, messages=[Message.user("replay")])
        acc = StepAccumulator()
        events: list[BaseEvent] = []
        for event in ModelCall(provider, request, CallContext("replay", "replay-1"), session, options):
            events.append(acc.add(event))  # as the engine yields it: TOOL_CALL_END with the call's text
        return events, acc.finish()


def _cut(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


# What a body of each first-party provider holds, to name the right --provider for a body replayed as
# another's: (provider, bytes only its streams carry), most specific first.
_SIGNS = (
    ("openai-responses", (b'"type":"response.', b'"type": "response.', b"event: response.")),
    ("anthropic", (b"event: message_start", b'"type":"message_start"', b'"type": "message_start"')),
    ("gemini", (b'"candidates"',)),
    ("ollama", (b'"done":', b'"done" :')),
    ("openai", (b'"choices"',)),
)
# Providers whose streams are another's wire format (their adapters are that provider's).
_FAMILY = {"azure": "openai", "azure-responses": "openai-responses", "vertex": "gemini",
           "vertex-anthropic": "anthropic"}
_SSE_FIELD = re.compile(rb"^(data|event|id|retry):", re.M)


def _looks_like_event_stream(body: bytes) -> bool:
    # AWS event-stream (vnd.amazon.eventstream) message: 4-byte total length, 4-byte headers length,
    # prelude CRC, then headers such as ":event-type" / ":message-type" (Bedrock's ConverseStream).
    if len(body) < 16 or (b":event-type" not in body[:512] and b":message-type" not in body[:512]):
        return False
    return int.from_bytes(body[:4], "big") <= len(body)


def _guess(body: bytes) -> str | None:
    if _looks_like_event_stream(body):
        return "bedrock"
    head = body[:65536]
    for name, signs in _SIGNS:
        if any(sign in head for sign in signs):
            return name
    return None


def guess_provider(body: bytes) -> str | None:
    """The provider whose recorded stream ``body`` looks like (``openai``, ``anthropic``, ``gemini``,
    ``bedrock``...), from the event names and fields it holds; ``None`` when it tells no provider."""
    return _guess(body)


def _what(body: bytes) -> str:
    text = body.lstrip()[:1]
    if text in (b"{", b"["):
        try:
            json.loads(body)
        except ValueError:
            return "text that is not a stream"
        return "one JSON document (a request, or a response that was not streamed?)"
    return "text that is not a stream"


_FRAMING_NAMES = {"sse": "SSE", "ndjson": "NDJSON", "aws-eventstream": "AWS event-stream"}


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeio' else 'a'} {name}"


def body_problem(provider_name: str, body: bytes) -> str | None:
    """Why ``body`` cannot be ``provider_name``'s recorded stream body, in one line, before it is
    replayed: empty, an AWS event-stream body for a provider that does not read one, or no event of
    the provider's framing at all (no ``data:`` line of SSE, no JSON line of NDJSON), naming what it
    looks like instead. ``None`` when it may be one. Raises
    :class:`~hookstream.errors.UnknownPluginError` for an unknown provider."""
    framing = get_registry().provider(provider_name).framing
    expected = f"is this {_a(provider_name)} stream body?"
    kind = _FRAMING_NAMES.get(framing.name, framing.name)
    if not body.strip():
        return f"the file is empty: no {kind} events found; {expected}"
    guess = _guess(body)
    if guess == "bedrock" and framing.name != "aws-eventstream":
        return f"the file looks like an AWS event-stream (Amazon Bedrock) body, not {kind}: use --provider bedrock"
    if framing.name == "sse" and not _SSE_FIELD.search(body):
        return f"no SSE events found (the file is {_what(body)}); {expected}"
    if framing.name == "ndjson":
        first = body.strip().splitlines()[0].strip()
        if not first.startswith((b"{", b"[")):
            return f"no NDJSON lines found (the file is {_what(body)}); {expected}"
    return None


def unread_stream_problem(provider_name: str, body: bytes, step: StepResult) -> str | None:
    """Why a replay of ``body`` as ``provider_name`` produced nothing, in one line, when the call ended
    in an error having read no text, reasoning or tool call and the body looks like another provider's
    stream (naming it) or like none (the stream ended early or did not parse). ``None`` otherwise, also
    for the provider's own stream ending in its own error."""
    if step.error is None or step.text or step.reasoning or step.tool_calls:
        return None
    code, message = step.error
    guess = _guess(body)
    if guess is not None and guess == _FAMILY.get(provider_name, provider_name):
        return None  # the provider's own stream, ending in its own error (a recorded overload, say)
    if guess is None and code not in ("connection_closed", "malformed_chunk"):
        return None
    hint = f"it looks like {_a(guess)} stream: try --provider {guess}" if guess else (
        f"is this {_a(provider_name)} stream body?")
    return f"{provider_name}'s adapter read nothing from this stream ({code}: {message}); {hint}"
