"""The model catalogue, aliases and cost (issue 25): ``Usage.cost`` per step and summed on the run, on the
AG-UI wire and in ``final-json``; ``cost_exceeds``; ``hookstream models``; ``hookstream aliases``; the
OTel attribute. Runs go through a real loopback server and the real ``openai`` adapter; the CLI runs in
subprocesses. Expected amounts are computed with genai-prices itself, never copied from a price list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("genai_prices", reason="install hookstream[prices] (requirements/dev.txt) for these tests")

from engine_kit import MODEL, text_body, tool_body, usage
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from hookstream import chat, cost_exceeds, final_json, get_model, models, tool
from hookstream._prices import cost_of, price_source
from hookstream.events import Cost, RunFinished, StepFinished, Usage, from_json, to_json
from hookstream.plugin import ModelCapabilities, Registry, hookimpl, priced, reset_registry
from hookstream.testing import LoopbackServer, Response


def price(inp: int, out: int, model: str = "gpt-4o-mini", provider: str = "openai", **more: int) -> Decimal:
    """What genai-prices' bundled data says ``inp``/``out`` tokens cost (the oracle)."""
    return calc_price(PriceUsage(input_tokens=inp, output_tokens=out, **more), model, provider_id=provider).total_price


def unknown_model(body: bytes) -> bytes:
    """``body`` answered by a model no price list knows (the response names the model that answered)."""
    return body.replace(b'"model": "gpt-4o-mini"', b'"model": "my-local-model"')


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def hs(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOKSTREAM_USER_DIR": str(user_dir), "OPENAI_API_KEY": "k-cost", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True, env=env,
                          timeout=120)


# -- Usage.cost ---------------------------------------------------------------------------------------

def test_a_run_sums_the_cost_of_its_steps_and_says_it_on_the_wire() -> None:
    bodies = [Response(tool_body(("c1", "add", {"a": 1, "b": 2}), u=usage(1000, 500))),
              Response(text_body("3", u=usage(2000, 100, cached=1000)))]
    with LoopbackServer(bodies) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "1+2?", tools=[add])
        events = list(stream)
        result = stream.result()
    first, second = (s.usage.cost for s in result.steps if s.usage is not None)
    assert first is not None and second is not None
    assert first.amount == price(1000, 500)
    assert second.amount == price(2000, 100, cache_read_tokens=1000)  # cached input at its own rate
    assert first.currency == "USD" and first.source == price_source()
    assert first.source is not None and first.source.startswith("genai-prices ")
    assert result.usage.cost == Cost(first.amount + second.amount, "USD", first.source)
    # STEP_FINISHED carries each step's, RUN_FINISHED the sum, as the extra key "cost" of the usage entry.
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert [e.usage.cost for e in steps if e.usage is not None] == [first, second]
    finished = next(e for e in events if isinstance(e, RunFinished))
    wire = json.loads(to_json(finished))
    assert wire["usage"][0]["cost"] == {"amount": float(result.usage.cost.amount), "currency": "USD",
                                        "source": first.source}
    back = from_json(to_json(finished))
    assert isinstance(back, RunFinished) and back.usage is not None and back.usage.cost == result.usage.cost


def test_the_cost_on_the_wire_is_valid_ag_ui() -> None:
    ag_ui_core = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    event = TypeAdapter(ag_ui_core.Event)
    priced_usage = Usage(10, 5, 15, cost=Cost("0.0000045", "USD", "genai-prices (bundled data)"))
    parsed = event.validate_json(to_json(RunFinished("t", "r", usage=priced_usage)), strict=True)
    entry = parsed.usage[0]  # a TokenUsage: declared fields as they were, the cost kept as an extra
    assert entry.input_tokens == 10 and entry.model_extra["cost"]["amount"] == 0.0000045
    event.validate_json(to_json(StepFinished("step-1", usage=priced_usage)), strict=True)


def test_a_model_no_price_list_knows_has_no_cost_and_nor_has_its_run() -> None:
    with LoopbackServer([Response(tool_body(("c1", "add", {"a": 1, "b": 2}))),
                         Response(unknown_model(text_body("3")))]) as srv:
        result = chat(get_model("openai:my-local-model", base_url=srv.url + "/v1", api_key="k"), "1+2?",
                      tools=[add]).result()
    # Step 1 answered as gpt-4o-mini (priced), step 2 as an unknown model: the run's cost is unknown.
    assert [s.usage.cost is not None for s in result.steps if s.usage] == [True, False]
    assert result.usage.cost is None
    assert result.usage.input_tokens == 20  # the counts still add up


def test_costs_follow_each_providers_token_accounting() -> None:
    u = Usage(input_tokens=1000, output_tokens=200, reasoning_tokens=300)
    gemini = cost_of(u, "gemini", "gemini-2.5-flash")
    # Gemini's output count leaves thoughts out: they are billed as output on top.
    assert gemini is not None and gemini.amount == price(1000, 500, "gemini-2.5-flash", "google")
    openai = cost_of(u, "openai", "o4-mini")  # OpenAI's output count includes reasoning
    assert openai is not None and openai.amount == price(1000, 200, "o4-mini")
    anthropic = cost_of(Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=200, cache_write_tokens=300),
                        "anthropic", "claude-sonnet-4-5")
    assert anthropic is not None and anthropic.amount == price(
        1000, 10, "claude-sonnet-4-5", "anthropic", cache_read_tokens=200, cache_write_tokens=300)
    bedrock = cost_of(Usage(100, 10), "bedrock", None, "us.anthropic.claude-sonnet-4-20250514-v1:0")
    assert bedrock is not None and bedrock.amount > 0  # the first model that is known is used
    assert cost_of(Usage(100, 10), "ollama", "llama3.2") is None  # local: no list price, no guess
    assert cost_of(Usage(100, 10), "some-plugin", "gpt-4o-mini") is None  # a provider without a price id
    assert cost_of(Usage(), "openai", "gpt-4o-mini") is None  # nothing reported, nothing priced
    known = Usage(1, 1, cost=Cost(1))
    assert priced(known, "openai", "gpt-4o-mini") is known  # a cost already there is kept


def test_without_genai_prices_every_cost_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import genai_prices now raises ImportError
    assert cost_of(Usage(1000, 500), "openai", "gpt-4o-mini") is None
    with LoopbackServer(Response(text_body("hi", u=usage(1000, 500)))) as srv:
        result = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "hi").result()
    assert result.usage.input_tokens == 1000 and result.usage.cost is None


def test_usage_sums_keep_an_unknown_cost_unknown() -> None:
    a, b = Usage(1, 1, cost=Cost("0.5", source="s")), Usage(2, 2, cost=Cost("0.25", source="s"))
    assert (Usage() + a + b).cost == Cost("0.75", "USD", "s")
    assert (a + Usage(3, 3)).cost is None
    assert (a + Usage(3, 3, cost=Cost(1, "EUR"))).cost is None
    assert str(Cost("0.000435")) == "0.000435 USD"
    # Another AG-UI server's "cost" that is not hookstream's shape is left out, not an unreadable event.
    for other in ("0.5", '{"amount": "n/a"}', '{"amount": true}'):
        ev = from_json('{"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": 1, '
                       f'"cost": {other}}}]}}')
        assert isinstance(ev, RunFinished) and ev.usage == Usage(input_tokens=1)
    assert Cost(0.1).amount == Decimal("0.1")


# -- final-json ---------------------------------------------------------------------------------------

def test_final_json_has_the_runs_cost_for_a_known_model_and_null_otherwise(tmp_path: Path) -> None:
    with LoopbackServer([Response(text_body("Paris.", u=usage(1200, 34))),
                         Response(unknown_model(text_body("Paris.")))]) as srv:
        base = srv.url + "/v1"
        known = hs("chat", "Capital?", "--model", MODEL, "--base-url", base, "--output", "final-json", "--no-log",
                   user_dir=tmp_path)
        unknown = hs("chat", "Capital?", "--model", "openai:my-local-model", "--base-url", base, "--output",
                     "final-json", "--no-log", user_dir=tmp_path)
    assert known.returncode == 0, known.stderr
    doc = json.loads(known.stdout)
    assert doc["cost"] == {"amount": float(price(1200, 34)), "currency": "USD", "source": price_source()}
    assert unknown.returncode == 0, unknown.stderr
    assert json.loads(unknown.stdout)["cost"] is None


def test_final_json_of_a_step_or_of_a_run() -> None:
    with LoopbackServer([Response(tool_body(("c1", "add", {"a": 1, "b": 2}), u=usage(100, 10))),
                         Response(text_body("3", u=usage(200, 20)))]) as srv:
        result = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "1+2?", tools=[add]).result()
    last = result.steps[-1]
    assert final_json(last)["cost"]["amount"] == float(price(200, 20))  # the step's own
    assert final_json(last, total=result.usage)["cost"]["amount"] == float(price(100, 10) + price(200, 20))


def test_timing_shows_each_calls_cost_and_the_total(tmp_path: Path) -> None:
    with LoopbackServer(Response(text_body("Paris.", u=usage(1200, 34)))) as srv:
        proc = hs("chat", "Capital?", "--model", MODEL, "--base-url", srv.url + "/v1", "--timing", "--no-log",
                  user_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    amount = f"{price(1200, 34):f} USD"
    head, step = proc.stderr.splitlines()[:2]
    assert head.endswith(f"cost {amount}") and step.endswith(amount)


# -- cost_exceeds -------------------------------------------------------------------------------------

def test_cost_exceeds_ends_the_run_between_steps() -> None:
    step = price(1000, 100)
    calls = [Response(tool_body((f"c{i}", "add", {"a": i, "b": 1}), u=usage(1000, 100))) for i in range(5)]
    for limit in (cost_exceeds(step * 2 - Decimal("0.0000001")), ("cost_exceeds", float(step * 2))):
        with LoopbackServer(list(calls)) as srv:
            result = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "count", tools=[add],
                          stop_when=[limit], max_steps=10).result()
        expected = 2 if not isinstance(limit, tuple) else 3  # the step that passes the limit has run
        assert len(result.steps) == expected and result.stopped_by == "stop_condition"
        assert result.usage.cost is not None and result.usage.cost.amount == step * expected


def test_cost_exceeds_never_stops_a_run_it_cannot_price() -> None:
    from hookstream import StepResult

    steps = [StepResult(1, usage=Usage(10**9, 10**9)), StepResult(2, usage=None)]
    assert not cost_exceeds(0)(steps)
    assert cost_exceeds("0.5")([StepResult(1, usage=Usage(1, 1, cost=Cost("0.6")))])
    assert not cost_exceeds(0.5, currency="EUR")([StepResult(1, usage=Usage(1, 1, cost=Cost("0.6")))])


# -- the catalogue ------------------------------------------------------------------------------------

def test_hookstream_models_lists_capabilities_from_plugins_and_prices_from_genai_prices(tmp_path: Path) -> None:
    pytest.importorskip("hookstream_openai")
    proc = hs("models", "openai", "--json", user_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["price_source"] == price_source()
    by_name = {m["name"]: m for m in doc["models"]}
    assert all(m["provider"] == "openai" for m in doc["models"])
    mini = by_name["openai:gpt-4o-mini"]
    assert (mini["vision"], mini["tools"], mini["reasoning"], mini["context_window"]) == (True, True, False, 128_000)
    assert mini["source"] == "plugin+prices"
    assert mini["prices"]["input"] == float(price(1_000_000, 0)) and mini["prices"]["currency"] == "USD"
    assert mini["prices"]["output"] == float(price(0, 1_000_000))
    assert by_name["openai:o4-mini"]["reasoning"] is True
    assert any(m["source"] == "prices" for m in doc["models"])  # what only genai-prices lists is there too
    text = hs("models", "openai", user_dir=tmp_path).stdout.splitlines()
    line = next(t for t in text if t.startswith("openai:gpt-4o-mini "))
    assert line.startswith("openai:gpt-4o-mini  vision tools  128k ctx  $") and line.endswith(" out per 1M tokens")
    missing = hs("models", "nosuchprovider", user_dir=tmp_path)
    assert missing.returncode != 0 and "no provider named 'nosuchprovider'" in missing.stderr


class _ModelsPlugin:
    @hookimpl
    def hookstream_register_models(self, register: Any) -> None:
        register("openai:my-finetune", ModelCapabilities(vision=False, tools=True, context_window=8192))
        register("openai:gpt-4o-mini-2024-07-18", ModelCapabilities(vision=True, tools=True))
        register("acme:rocket-1", ModelCapabilities(reasoning=True, description="Acme's model"))


def test_plugins_contribute_models_through_the_hook() -> None:
    reg = Registry(autoload=False)
    info = reg.add_plugin(_ModelsPlugin(), "models-plugin")
    assert info is not None and info.registered["models"] == [
        "openai:my-finetune", "openai:gpt-4o-mini-2024-07-18", "acme:rocket-1"]
    reset_registry(reg)
    try:
        listed = {m.name: m for m in models()}
        acme = models("acme")
    finally:
        reset_registry(None)
    tune = listed["openai:my-finetune"]
    assert (tune.tools, tune.context_window, tune.input_price, tune.source) == (True, 8192, None, "plugin")
    dated = listed["openai:gpt-4o-mini-2024-07-18"]  # genai-prices knows it as gpt-4o-mini: listed once
    assert dated.input_price is not None and dated.context_window == 128_000 and dated.source == "plugin+prices"
    assert "openai:gpt-4o-mini" not in listed
    assert [(m.name, m.reasoning, m.description) for m in acme] == [("acme:rocket-1", True, "Acme's model")]


# -- aliases ------------------------------------------------------------------------------------------

def test_aliases_set_list_use_and_remove(tmp_path: Path) -> None:
    assert hs("aliases", "set", "fast", MODEL, user_dir=tmp_path).returncode == 0
    listed = hs("aliases", "list", "--json", user_dir=tmp_path)
    assert json.loads(listed.stdout) == {"fast": MODEL}
    assert json.loads((tmp_path / "aliases.json").read_text()) == {"fast": MODEL}
    assert "fast  openai:gpt-4o-mini" in hs("aliases", user_dir=tmp_path).stdout
    with LoopbackServer(Response(text_body("Paris.", u=usage(12, 3)))) as srv:
        used = hs("chat", "Capital?", "--model", "fast", "--base-url", srv.url + "/v1", "--output", "final-json",
                  "--no-log", user_dir=tmp_path)
        assert used.returncode == 0, used.stderr
        assert srv.requests[0].json()["model"] == "gpt-4o-mini"
    assert json.loads(used.stdout)["cost"]["amount"] == float(price(12, 3))
    bad = hs("aliases", "set", "x:y", MODEL, user_dir=tmp_path)
    assert bad.returncode == 2 and "without ':'" in bad.stderr
    assert hs("aliases", "remove", "fast", user_dir=tmp_path).returncode == 0
    gone = hs("aliases", "remove", "fast", user_dir=tmp_path)
    assert gone.returncode == 1 and "no alias 'fast'" in gone.stderr
    assert json.loads(hs("aliases", "list", "--json", user_dir=tmp_path).stdout) == {}


def test_an_alias_works_wherever_a_model_string_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hookstream._aliases import set_alias

    monkeypatch.setenv("HOOKSTREAM_USER_DIR", str(tmp_path))
    set_alias("fast", MODEL)
    provider = get_model("fast", api_key="k")
    assert (provider.name, provider.model) == ("openai", "gpt-4o-mini")
    with LoopbackServer(Response(text_body("hi"))) as srv:
        result = chat(get_model("fast", base_url=srv.url + "/v1", api_key="k"), "hi").result()
    assert result.text == "hi" and srv.requests[0].json()["model"] == "gpt-4o-mini"
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        get_model("not-an-alias")


# -- OpenTelemetry ------------------------------------------------------------------------------------

def test_the_otel_spans_carry_the_cost() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from hookstream_otel import OtelPlugin
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    plugin = OtelPlugin(tracer_provider, MeterProvider())
    with LoopbackServer([Response(tool_body(("c1", "add", {"a": 1, "b": 2}), u=usage(1000, 500))),
                         Response(text_body("3", u=usage(2000, 100)))]) as srv:
        result = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "1+2?", tools=[add],
                      plugins=[plugin]).result()
    calls = [dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(calls) == 2
    assert [c["hookstream.usage.cost.amount"] for c in calls] == [float(price(1000, 500)), float(price(2000, 100))]
    assert all(c["hookstream.usage.cost.currency"] == "USD" and c["hookstream.usage.cost.source"] == price_source()
               for c in calls)
    run = next(dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert result.usage.cost is not None
    assert run["hookstream.run.cost.amount"] == float(result.usage.cost.amount)
    assert run["hookstream.run.cost.currency"] == "USD" and "hookstream.usage.cost.amount" not in run


def test_aliases_in_a_fallback_model_and_a_step_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An alias works wherever a model string does: a FallbackModel entry, prepare_step's model."""
    from hookstream import FallbackModel, LoopSettings, StepSettings
    from hookstream._aliases import set_alias

    monkeypatch.setenv("HOOKSTREAM_USER_DIR", str(tmp_path))
    set_alias("fast", "openai:gpt-4o-mini")
    assert FallbackModel("fast").labels == ("openai:gpt-4o-mini",)
    with LoopbackServer([Response(text_body("ok"))]) as srv:
        model = get_model("openai:big", base_url=srv.url + "/v1", api_key="k")
        chat(model, "hi", loop=LoopSettings(prepare_step=lambda s: StepSettings(model="fast"))).result()
        assert srv.requests[0].json()["model"] == "gpt-4o-mini"
