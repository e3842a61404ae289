"""Run one recorded response body through a provider adapter over real loopback HTTP.

This is what ``hookstream replay`` and the conformance kit use: the body is served by
:class:`~hookstream.testing.LoopbackServer` (whole, split at random boundaries, one byte, line
or event per read, or cut into given pieces) and read by the real transport and adapter, exactly as a
live call would be.
"""

from __future__ import annotations

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

__all__ = ["replay_body"]


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
