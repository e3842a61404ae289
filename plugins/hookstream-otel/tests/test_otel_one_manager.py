"""An installed hookstream-otel sees every call of a run, whichever plugin answers it (issue 39): the run's
plugins, installed and chosen per run, sit in one pluggy manager ordered as pytest orders hooks, so the
installed wrappers are outermost even when a run's own ``tryfirst`` plugin answers (a cache hit) or refuses
(a guardrail). The tracer is the SDK's with an in-memory exporter, the installed plugin an
:class:`~hookstream_otel.OtelPlugin` on it added to a registry of the test's own, and the model a real
loopback HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="install hookstream-otel[cli] (opentelemetry-sdk) for these tests")
pytest.importorskip("hookstream_openai", reason="the runs speak OpenAI Chat Completions: install the plugin")
pytest.importorskip("hookstream_cache", reason="install hookstream-cache")
pytest.importorskip("hookstream_guardrails", reason="install hookstream-guardrails")

from hookstream import chat, get_model
from hookstream.plugin import Registry, reset_registry
from hookstream.testing import LoopbackServer, Response
from hookstream_cache import Cache
from hookstream_guardrails import Guardrails
from test_otel_spans import Otel, by_name, text_body, tool_body


@pytest.fixture
def installed() -> Iterator[Otel]:
    """A registry whose installed plugins include an OtelPlugin on the test's own tracer provider."""
    otel = Otel()
    registry = Registry()
    assert registry.add_plugin(otel.plugin(), "otel-under-test") is not None
    reset_registry(registry)
    try:
        yield otel
    finally:
        reset_registry(None)


def test_an_installed_wrapper_sees_a_cache_hit(installed: Otel, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    with LoopbackServer([Response(text_body("hi there"))]) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-x")
        first = chat(model, "hi", plugins=[cache]).result()
        second = chat(model, "hi", plugins=[cache]).result()
    assert len(server.requests) == 1  # the second run was a hit
    assert first.text == second.text == "hi there"
    assert cache.store.stats().hits == 1
    spans = installed.spans()
    assert len(by_name(spans, "chat gpt-4o-mini")) == 2
    assert len(by_name(spans, "invoke_agent")) == 2


def no_paris(name: str, arguments: dict[str, Any] | None) -> str | None:
    return "Paris is not served" if (arguments or {}).get("city") == "Paris" else None


def test_an_installed_wrapper_sees_a_guardrail_refusal(installed: Otel) -> None:
    ran: list[str] = []

    def get_weather(city: str) -> str:
        """Current weather.

        Args:
            city: City name.
        """
        ran.append(city)
        return f"Sunny in {city}"

    guardrails = Guardrails(tools=[no_paris])
    responses = [Response(tool_body(("call_1", "get_weather", {"city": "Paris"}))), Response(text_body("sorry"))]
    with LoopbackServer(responses) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-x")
        result = chat(model, "weather in Paris?", tools=[get_weather], plugins=[guardrails]).result()
    assert result.error is None and not ran
    assert len(guardrails.refusals) == 1
    (tool_span,) = by_name(installed.spans(), "execute_tool get_weather")
    assert (tool_span.attributes or {})["gen_ai.tool.call.id"] == "call_1"
