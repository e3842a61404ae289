"""End to end against a real OpenTelemetry backend: Arize Phoenix (PyPI ``arize-phoenix``, installed into
``.otel-backend/`` by ``scripts/install-otel-backend``, which ``./dev test`` runs) is started on
127.0.0.1, ``hookstream demo`` runs in a subprocess with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at it
(the plugin sets the SDK up from the environment and flushes at exit), and the spans are read back
through Phoenix's own REST API (``GET /v1/projects/{project}/spans``).

Skips with a message when Phoenix is not installed; fails instead when the environment variable CI is
set. ``HOOKSTREAM_PHOENIX`` may name another ``phoenix`` executable (phoenix_kit.py)."""

from __future__ import annotations

import json

import pytest
from phoenix_kit import demo_spans, phoenix_fixture  # noqa: F401  (the session fixture `phoenix`)

pytestmark = pytest.mark.slow

PROJECT = "hookstream-e2e"


def test_the_demo_trace_reaches_phoenix(phoenix: str) -> None:
    got = demo_spans(phoenix, PROJECT)
    assert len(got) == 5
    by_id = {s["context"]["span_id"]: s for s in got}
    (agent,) = [s for s in got if s["name"] == "invoke_agent"]
    assert agent.get("parent_id") is None
    children = sorted(s["name"] for s in got if s.get("parent_id") == agent["context"]["span_id"])
    assert children == ["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool convert_currency",
                        "execute_tool get_weather"]
    assert len({s["context"]["trace_id"] for s in by_id.values()}) == 1
    chats = [s for s in got if s["name"].startswith("chat ")]
    assert sorted(s["attributes"]["gen_ai.response.finish_reasons"][0] for s in chats) == ["stop", "tool_calls"]
    assert all(s["attributes"]["gen_ai.provider.name"] == "openai" for s in chats)
    assert all(isinstance(s["attributes"]["gen_ai.usage.output_tokens"], int) for s in chats)
    tools = {s["attributes"]["gen_ai.tool.name"]: s["attributes"]["gen_ai.tool.call.id"]
             for s in got if s["name"].startswith("execute_tool ")}
    assert tools == {"get_weather": "call_hsdemo_weather01", "convert_currency": "call_hsdemo_currency02"}
    assert "demo-key" not in json.dumps(got)
