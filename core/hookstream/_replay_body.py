"""Run one recorded response body through a provider adapter over real loopback HTTP.

This is what ``hookstream replay`` and the conformance kit use: the body is served by
:class:`~hookstream.testing.LoopbackServer` (optionally split at random boundaries) and read by
the real transport and adapter, exactly as a live call would be.
"""

from __future__ import annotations

import requests

from ._accumulate import StepAccumulator, StepResult
from ._call import ModelCall
from ._events import BaseEvent
from ._loopback import LoopbackServer, Response
from ._messages import Message
from ._provider import CallContext, ModelRequest
from ._registry import get_registry

__all__ = ["BASE_PATH", "replay_body"]

BASE_PATH = {"openai": "/v1", "openai-responses": "/v1"}
"""API root path per provider under the server URL (``http://host/v1`` for OpenAI, bare host else)."""


def replay_body(
    provider_name: str,
    body: bytes,
    *,
    fragment: tuple[int, int] | None = None,
    seed: int = 0,
    model: str = "recorded-model",
) -> tuple[list[BaseEvent], StepResult]:
    """Serve ``body`` on loopback, run ``provider_name``'s adapter against it for one model call, and
    return (the call's events, the aggregated result). Raises
    :class:`~hookstream.UnknownPluginError` for an unknown provider."""
    provider_cls = get_registry().provider(provider_name)
    with LoopbackServer([Response(body, fragment=fragment)], seed=seed) as srv, requests.Session() as session:
        provider = provider_cls(model, base_url=srv.url + BASE_PATH.get(provider_name, ""), api_key="recorded")
        request = ModelRequest(model=model, messages=[Message.user("replay")])
        acc = StepAccumulator()
        events: list[BaseEvent] = []
        for event in ModelCall(provider, request, CallContext("replay", "replay-1"), session):
            events.append(event)
            acc.add(event)
        return events, acc.finish()
