"""hookstream-otel against the OpenTelemetry SDK's in-memory exporter and metric reader: the span tree of
the offline demo (one invoke_agent, two chat, two execute_tool, with their parents and attributes), the
tool threads carrying the execute_tool span as current, metrics, content capture only when asked,
failures and retries, the installed plugin's run hooks (untouched results until OpenTelemetry is
configured) and the CLI's set-up from the OTEL_* variables (console exporter, subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="install hookstream-otel[cli] (opentelemetry-sdk) for these tests")
pytest.importorskip("hookstream_openai", reason="the demo speaks OpenAI Chat Completions: install the plugin")

from hookstream import ChatStream, chat, get_model
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, LoopbackServer, Response, demo_server, demo_tools
from hookstream_otel import OtelPlugin, global_plugin
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode


def demo_stream(*, delay: float = 0, observers: list[Any]) -> tuple[LoopbackServer, ChatStream]:
    """The offline demo's run (``hookstream chat --demo``) with ``observers``; the caller stops the server."""
    server = demo_server(delay=delay)
    model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
    return server, chat(model, DEMO_PROMPT, tools=demo_tools(), max_steps=4, observers=observers)



def _frame(delta: dict[str, Any] | None, finish: str | None = None, usage: bool = False) -> bytes:
    choices = [] if usage else [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    counts = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10} if usage else None
    doc: dict[str, Any] = {"id": "chatcmpl-otel", "object": "chat.completion.chunk", "created": 1,
                           "model": "gpt-4o-mini", "choices": choices, "usage": counts}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def text_body(text: str) -> bytes:
    """An OpenAI Chat Completions stream answering ``text`` (API reference: the chat completion chunk)."""
    return b"".join([_frame({"role": "assistant", "content": text}), _frame({}, "stop"), _frame(None, usage=True),
                     b"data: [DONE]\n\n"])


def tool_body(*calls: tuple[str, str, dict[str, Any]]) -> bytes:
    """An OpenAI Chat Completions stream asking for ``calls`` (id, name, arguments)."""
    frames = [_frame({"role": "assistant", "content": None})]
    for i, (cid, name, args) in enumerate(calls):
        frames.append(_frame({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                              "function": {"name": name, "arguments": json.dumps(args)}}]}))
    return b"".join([*frames, _frame({}, "tool_calls"), _frame(None, usage=True), b"data: [DONE]\n\n"])


class Otel:
    """An SDK tracer and meter provider of the test's own (the global ones stay untouched)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def plugin(self, capture: bool = False) -> OtelPlugin:
        return OtelPlugin(self.tracer_provider, self.meter_provider, capture=capture)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out.setdefault(m.name, []).extend(m.data.data_points)
        return out


@pytest.fixture
def otel() -> Otel:
    return Otel()


def demo_run(server: LoopbackServer, plugin: OtelPlugin) -> ChatStream:
    model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
    return chat(model, DEMO_PROMPT, tools=demo_tools(), max_steps=4, plugins=[plugin])


def run_demo(plugin: OtelPlugin) -> Any:
    with demo_server() as server:
        stream = demo_run(server, plugin)
        events = list(stream)
    assert events[-1].type == "RUN_FINISHED"
    return stream.result()


def by_name(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_the_demo_span_tree(otel: Otel) -> None:
    result = run_demo(otel.plugin())
    spans = otel.spans()
    assert len(spans) == 5
    (agent,) = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    tools = by_name(spans, "execute_tool ")
    assert [s.name for s in chats] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    assert sorted(s.name for s in tools) == ["execute_tool convert_currency", "execute_tool get_weather"]
    root = agent.context.span_id
    assert agent.parent is None
    assert all(parent_id(s) == root for s in chats + tools)
    assert len({s.context.trace_id for s in spans}) == 1

    a = agent.attributes or {}
    assert agent.kind is SpanKind.INTERNAL
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-4o-mini" and a["hookstream.run.outcome"] == "success"
    assert a["hookstream.run.steps"] == 2
    assert a["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert a["gen_ai.usage.output_tokens"] == result.usage.output_tokens

    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    for span, reason, step in ((first, "tool_calls", result.steps[0]), (second, "stop", result.steps[1])):
        c = span.attributes or {}
        assert span.kind is SpanKind.CLIENT and span.status.status_code is StatusCode.UNSET
        assert c["gen_ai.operation.name"] == "chat" and c["gen_ai.provider.name"] == "openai"
        assert c["gen_ai.request.model"] == "gpt-4o-mini"
        assert tuple(c["gen_ai.response.finish_reasons"]) == (reason,)  # type: ignore[arg-type]
        assert c["gen_ai.usage.input_tokens"] == step.usage.input_tokens
        assert c["gen_ai.usage.output_tokens"] == step.usage.output_tokens
        assert c["server.address"] == "127.0.0.1" and isinstance(c["server.port"], int)
        assert [e.name for e in span.events] == ["hookstream.first_chunk"]
        assert "gen_ai.input.messages" not in c and "gen_ai.output.messages" not in c
    # The tools ran between the two model calls, in parallel.
    assert all((first.end_time or 0) <= (t.start_time or 0) for t in tools)
    assert all((t.end_time or 0) <= (second.start_time or 0) for t in tools)

    ids = {"get_weather": "call_hsdemo_weather01", "convert_currency": "call_hsdemo_currency02"}
    for t in tools:
        ta = t.attributes or {}
        name = ta["gen_ai.tool.name"]
        assert t.kind is SpanKind.INTERNAL and t.name == f"execute_tool {name}"
        assert ta["gen_ai.operation.name"] == "execute_tool" and ta["gen_ai.tool.call.id"] == ids[str(name)]
        assert ta["gen_ai.tool.type"] == "function" and "gen_ai.tool.call.arguments" not in ta
        assert t.status.status_code is StatusCode.UNSET
    # No secret anywhere (the demo's API key is "demo-key").
    dumped = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    assert "demo-key" not in dumped


def test_metrics_of_the_demo(otel: Otel) -> None:
    run_demo(otel.plugin())
    m = otel.metrics()
    durations = m["gen_ai.client.operation.duration"]
    assert sum(p.count for p in durations) == 2
    assert sum(p.count for p in m["gen_ai.client.operation.time_to_first_chunk"]) == 2
    kinds = {p.attributes["gen_ai.token.type"]: p for p in m["gen_ai.client.token.usage"]}
    assert set(kinds) == {"input", "output"} and kinds["input"].count == 2
    assert all(p.attributes["gen_ai.provider.name"] == "openai" for p in durations)


def test_tool_code_runs_under_its_execute_tool_span(otel: Otel) -> None:
    seen: list[int] = []

    def probe() -> str:
        """Report the current span inside the tool."""
        seen.append(trace.get_current_span().get_span_context().span_id)
        return "ok"

    with LoopbackServer([Response(tool_body(("c1", "probe", {}), ("c2", "probe", {}))),
                         Response(text_body("done"))]) as server:
        stream = chat(get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-x"), "hi",
                      tools=[probe], plugins=[otel.plugin()])
        list(stream)
    tools = by_name(otel.spans(), "execute_tool ")
    assert len(tools) == 2 and sorted(seen) == sorted(t.context.span_id for t in tools)


def test_content_only_when_capture_is_on(otel: Otel) -> None:
    run_demo(otel.plugin(capture=True))
    first, second = sorted(by_name(otel.spans(), "chat "), key=lambda s: s.start_time or 0)
    inputs = json.loads(str((first.attributes or {})["gen_ai.input.messages"]))
    assert inputs[0]["role"] == "user" and "Paris" in inputs[0]["parts"][0]["content"]
    out1 = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
    assert out1[0]["finish_reason"] == "tool_calls"
    assert sorted(p["name"] for p in out1[0]["parts"] if p["type"] == "tool_call") == ["convert_currency",
                                                                                       "get_weather"]
    assert {"type": "tool_call", "id": "call_hsdemo_weather01", "name": "get_weather",
            "arguments": {"city": "Paris"}} in out1[0]["parts"]
    out2 = json.loads(str((second.attributes or {})["gen_ai.output.messages"]))
    assert out2[0]["parts"][0]["type"] == "text" and out2[0]["parts"][0]["content"]
    tool = by_name(otel.spans(), "execute_tool get_weather")[0].attributes or {}
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "Paris" in str(tool["gen_ai.tool.call.result"])


def test_a_failed_call_and_a_retry(otel: Otel) -> None:
    busy = Response(b'{"error": {"message": "busy", "type": "server_error"}}', status=503,
                    content_type="application/json", headers={"Retry-After": "0"})
    with LoopbackServer([busy, Response(text_body("hi"))]) as server:
        list(chat(get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-x"), "hi",
                  plugins=[otel.plugin()]))
    (span,) = by_name(otel.spans(), "chat ")
    retry = [e for e in span.events if e.name == "hookstream.retry"]
    assert len(retry) == 1 and (retry[0].attributes or {})["hookstream.retry.attempt"] == 1

    otel = Otel()
    bad = Response(b'{"error": {"message": "nope sk-secret-123", "type": "invalid_request_error"}}', status=400,
                   content_type="application/json")
    with LoopbackServer([bad]) as server:
        stream = chat(get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-secret-123"), "hi",
                      plugins=[otel.plugin()])
        list(stream)
    assert stream.result().outcome == "error"
    (span,) = by_name(otel.spans(), "chat ")
    (agent,) = by_name(otel.spans(), "invoke_agent")
    for s in (span, agent):
        assert s.status.status_code is StatusCode.ERROR and (s.attributes or {})["error.type"]
        assert "sk-secret-123" not in (s.status.description or "")
    assert "sk-secret-123" not in json.dumps([dict(s.attributes or {}) for s in otel.spans()], default=str)
    durations = otel.metrics()["gen_ai.client.operation.duration"]
    assert [p.attributes.get("error.type") for p in durations] == [(span.attributes or {})["error.type"]]


def test_a_fallback_model_gives_one_chat_span_per_model_tried(otel: Otel) -> None:
    from hookstream import FallbackModel

    busy = Response(b'{"error": {"message": "busy", "type": "server_error"}}', status=503,
                    content_type="application/json")
    with LoopbackServer([busy]) as first, LoopbackServer([Response(text_body("hi"))]) as second:
        model = FallbackModel(get_model("openai:model-a", base_url=first.url + "/v1", api_key="sk-x"),
                              get_model("openai:model-b", base_url=second.url + "/v1", api_key="sk-x"))
        result = chat(model, "hi", plugins=[otel.plugin()], loop={"max_retries": 0}).result()
    assert result.outcome == "success" and result.steps[0].provider == "openai:model-b"
    failed, answered = by_name(otel.spans(), "chat ")
    assert (failed.name, answered.name) == ("chat model-a", "chat model-b")
    assert (failed.attributes or {})["gen_ai.request.model"] == "model-a"
    assert failed.status.status_code is StatusCode.ERROR and (failed.attributes or {})["error.type"]
    # the chat span of the model that answered carries its model
    assert (answered.attributes or {})["gen_ai.request.model"] == "model-b"
    assert answered.status.status_code is not StatusCode.ERROR
    (agent,) = by_name(otel.spans(), "invoke_agent")
    assert agent.status.status_code is not StatusCode.ERROR
    assert parent_id(failed) == parent_id(answered) == agent.context.span_id


def test_the_installed_plugin_traces_nothing_until_opentelemetry_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
              "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(k, raising=False)
    assert global_plugin() is None
    # Nothing asked for an exporter: the global provider is still the API's proxy.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    with LoopbackServer([Response(text_body("hi"))]) as server:
        result = chat(get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-x"), "hi").result()
    assert result.outcome == "success"
    out = subprocess.run([sys.executable, "-m", "hookstream", "plugins"], capture_output=True, text=True, check=True)
    otel = out.stdout.split("otel  [", 1)[1].split("\n", 2)[1]
    for hook in ("hookstream_run_start", "hookstream_model_call", "hookstream_model_call_retry",
                 "hookstream_tool_call", "hookstream_run_end"):
        assert hook in otel


def test_the_installed_plugin_traces_runs_once_configured() -> None:
    # A fresh process whose application sets a global tracer provider (the SDK's), then runs the demo.
    code = """
import json
from hookstream import chat, get_model
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, demo_server, demo_tools
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with demo_server() as server:
    model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
    chat(model, DEMO_PROMPT, tools=demo_tools(), max_steps=4).result()
print(json.dumps(sorted(s.name for s in exporter.get_finished_spans())))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == [
        "chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool convert_currency", "execute_tool get_weather",
        "invoke_agent"]


def test_the_cli_sets_the_sdk_up_from_the_environment() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none", OTEL_SERVICE_NAME="otel-cli-test")
    out = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0", "--output", "final-json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    # The console exporter prints each span as an indented JSON object, flushed at exit.
    names = [json.loads(line.split(":", 1)[1].rstrip(",")) for line in out.stdout.splitlines()
             if line.startswith('    "name": ')]
    assert sorted(names) == ["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool convert_currency",
                             "execute_tool get_weather", "invoke_agent"]
    assert '"service.name": "otel-cli-test"' in out.stdout


def test_a_run_stopped_early_still_ends_its_spans(otel: Otel) -> None:
    with demo_server() as server:
        stream = demo_run(server, otel.plugin())
        for ev in stream:
            if ev.type == "TOOL_CALL_START":
                break
        assert stream.result().outcome == "cancelled"
    spans = otel.spans()
    (agent,) = by_name(spans, "invoke_agent")
    assert (agent.attributes or {})["hookstream.run.outcome"] == "cancelled"
    assert by_name(spans, "chat ") and all(parent_id(s) == agent.context.span_id for s in spans if s is not agent)
    # Nothing of the run stays current in the caller's context.
    assert not trace.get_current_span().get_span_context().is_valid


def test_unconfigured_hooks_hand_the_inner_results_back_untouched() -> None:
    # A run whose start found OpenTelemetry unconfigured keeps nothing in run.state: the wrappers give
    # back the very objects the inner implementations returned (no iterator around the events).
    from types import SimpleNamespace

    from hookstream_otel import plugin

    run = SimpleNamespace(state={})
    for hook, call in ((plugin.hookstream_model_call, SimpleNamespace(run=run)),
                       (plugin.hookstream_tool_call, SimpleNamespace(run=run)),
                       (plugin.hookstream_tool_call, SimpleNamespace(run=None))):
        inner = object()
        wrapper = hook(call)  # type: ignore[arg-type]  # only .run.state is read when not traced
        next(wrapper)
        with pytest.raises(StopIteration) as stop:
            wrapper.send(inner)  # type: ignore[arg-type]
        assert stop.value.value is inner
