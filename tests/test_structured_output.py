"""Structured output (``chat(..., output=SPEC)``) for every provider and every kind of spec.

Each run goes through a real :class:`~hookstream.testing.LoopbackServer` serving a provider stream built
by :mod:`hookstream.testing.provider_bodies` (the answer's JSON as text deltas, or as the arguments of
the forced output tool for Anthropic's tool form) and the real adapter. The tests check the request
shape each provider documents, the typed ``result().output``, the partial object after every delta
(``STATE_DELTA`` JSON Patch applied step by step), invalid output (typed error, raw text kept) and the
opt-in retry (the second request carries the validation problems), and ``hookstream chat --schema``
end to end in a subprocess.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import attrs
import pytest
from hookstream import LoopSettings, Output, StreamProcessor, chat, get_model
from hookstream._agentloop.partial_output import OutputTracker, apply_patch
from hookstream._agentloop.structured import resolve_output, strict_allowed
from hookstream.errors import OutputValidationError
from hookstream.events import StateDelta
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.provider_bodies import BASE_PATH, provider_stream

pytest.importorskip("hookstream_openai")
pytest.importorskip("hookstream_anthropic")
pytest.importorskip("hookstream_gemini")
from hookstream_anthropic.request import native_output

MODELS = {
    "openai": "openai:gpt-4o-mini",
    "openai-responses": "openai-responses:gpt-4o-mini",
    "anthropic": "anthropic:claude-sonnet-4-5",  # has native structured output
    "anthropic-tool": "anthropic:claude-3-5-haiku-latest",  # does not: forced tool
    "gemini": "gemini:gemini-2.5-flash",
}
VALUE = {"city": "Paris", "population": 2102650, "tags": ["capital", "café ☕"], "coast": False}


@dataclasses.dataclass
class CityDC:
    city: str
    population: int
    tags: list[str]
    coast: bool


class CityTD(TypedDict):
    city: str
    population: int
    tags: list[str]
    coast: bool


@attrs.define
class CityAttrs:
    city: str
    population: int
    tags: list[str]
    coast: bool


SCHEMA: dict[str, Any] = {
    "title": "City",
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"},
                   "tags": {"type": "array", "items": {"type": "string"}}, "coast": {"type": "boolean"}},
    "required": ["city", "population", "tags", "coast"],
    "additionalProperties": False,
}


def _pydantic_city() -> Any:
    pydantic = pytest.importorskip("pydantic")

    class CityPD(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        city: str
        population: int
        tags: list[str]
        coast: bool

    return CityPD


def spec_of(kind: str) -> Any:
    return {"dict": SCHEMA, "dataclass": CityDC, "typeddict": CityTD, "attrs": CityAttrs}.get(kind) or _pydantic_city()


def expected_of(kind: str, spec: Any) -> Any:
    if kind in ("dict", "typeddict"):
        return VALUE
    if kind == "pydantic":
        return spec.model_validate(VALUE)
    return spec(**VALUE)


def answer(provider: str, value: Any, name: str, deltas: int = 9) -> bytes:
    """One model call answering with ``value``: JSON text deltas, or the forced tool ``name``'s arguments."""
    wire = "anthropic" if provider == "anthropic-tool" else provider
    if provider == "anthropic-tool":
        script = provider_stream(wire, text="", reasoning="", tool_name=name, tool_args=value, arg_deltas=deltas)
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        script = provider_stream(wire, text=text, reasoning="", tool_name=None, text_deltas=deltas)
    return script.body


def provider_for(provider: str, srv: LoopbackServer) -> Any:
    wire = "anthropic" if provider == "anthropic-tool" else provider
    return get_model(MODELS[provider], base_url=srv.url + BASE_PATH[wire], api_key="test-key")


def output_in_request(provider: str, body: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    """Assert ``body`` asks for ``schema`` in the provider's documented structured-output form."""
    if provider == "openai":
        assert body["response_format"] == {"type": "json_schema",
                                           "json_schema": {"name": name, "schema": schema, "strict": True}}
    elif provider == "openai-responses":
        assert body["text"] == {"format": {"type": "json_schema", "name": name, "schema": schema, "strict": True}}
    elif provider == "anthropic":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
        assert "tool_choice" not in body
    elif provider == "anthropic-tool":
        assert "output_config" not in body
        assert body["tools"][-1]["name"] == name and body["tools"][-1]["input_schema"] == schema
        assert body["tool_choice"] == {"type": "tool", "name": name}
    else:
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert body["generationConfig"]["responseJsonSchema"] == schema


PROVIDERS = list(MODELS)
KINDS = ["dict", "dataclass", "typeddict", "attrs", "pydantic"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_output_for_every_provider_and_spec_kind(provider: str, kind: str) -> None:
    spec = spec_of(kind)
    resolved = resolve_output(spec)
    if kind == "pydantic":  # pydantic's schema is its own; strict only when it is closed everywhere
        assert resolved.format.strict == strict_allowed(resolved.format.schema)
    name = resolved.format.name
    with LoopbackServer([Response(answer(provider, VALUE, name))]) as srv:
        stream = chat(provider_for(provider, srv), "Describe Paris", output=spec)
        events = list(stream)
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "success", result.error
    assert result.output == expected_of(kind, spec)
    assert type(result.output) is (dict if kind in ("dict", "typeddict") else spec)
    body = srv.requests[0].json()
    if resolved.format.strict:
        output_in_request(provider, body, name, resolved.format.schema)
    # The partial object after every STATE_DELTA is a prefix of the final value, and ends equal to it.
    state: dict[str, Any] = {}
    seen = []
    for ev in events:
        if isinstance(ev, StateDelta):
            state = apply_patch(state, copy.deepcopy(ev.delta))
            seen.append(copy.deepcopy(state["output"]))
    assert len(seen) > 3 and seen[0] == {} and seen[-1] == VALUE
    assert any(s.get("city") == "Paris" and "tags" not in s for s in seen)  # a member before the rest
    # The stream processor publishes the same partial object.
    proc = StreamProcessor()
    assert proc.process(events).output == VALUE


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_output_is_a_typed_error_keeping_the_text(provider: str) -> None:
    bad = {"city": "Paris", "population": "two million", "tags": [], "coast": False}
    with LoopbackServer([Response(answer(provider, bad, "City"))]) as srv:
        stream = chat(provider_for(provider, srv), "Describe Paris", output=SCHEMA)
        events = list(stream)
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "error" and result.output is None
    err = result.error
    assert isinstance(err, OutputValidationError) and err.code == "output_invalid"
    assert json.loads(err.raw_text) == bad
    assert any("population" in p for p in err.problems)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "output_invalid"
    assert len(srv.requests) == 1  # no retry unless asked for
    if provider != "anthropic-tool":
        assert json.loads(result.text) == bad  # the text stays in the result and the history


def test_text_that_is_not_json_is_an_output_error() -> None:
    with LoopbackServer([Response(answer("openai", "Sure! Paris is big.", "City"))]) as srv:
        stream = chat(provider_for("openai", srv), "Describe Paris", output=CityDC)
        list(stream)
    err = stream.result().error
    assert isinstance(err, OutputValidationError) and "not JSON" in err.problems[0]
    assert err.raw_text == "Sure! Paris is big."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retry_sends_the_validation_error_back(provider: str) -> None:
    bad = {"city": "Paris", "population": -1.5, "tags": [], "coast": False}
    # A new tool call id for the second answer (the scripted Anthropic stream always uses the same).
    second_answer = answer(provider, VALUE, "CityDC").replace(b"toolu_fault1", b"toolu_fault2")
    responses = [Response(answer(provider, bad, "CityDC")), Response(second_answer)]
    with LoopbackServer(responses) as srv:
        stream = chat(provider_for(provider, srv), "Describe Paris", output=CityDC,
                      loop=LoopSettings(output_retries=1))
        events = list(stream)
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "success", result.error
    assert result.output == CityDC(**VALUE)
    assert len(srv.requests) == 2 and len(result.steps) == 2
    second = json.dumps(srv.requests[1].json(), ensure_ascii=False)
    assert "does not match the required output schema" in second and "population" in second
    if provider == "anthropic-tool":
        # The forced tool's call gets an error tool_result carrying the problems.
        last_user = srv.requests[1].json()["messages"][-1]
        block = last_user["content"][0]
        assert block["type"] == "tool_result" and block.get("is_error") is True
    # The partial object of the retried answer starts again from an empty object.
    roots = [ev for ev in events if isinstance(ev, StateDelta) and ev.delta[0]["path"] == "/output"]
    assert len(roots) == 2


def test_retries_run_out_and_the_run_fails() -> None:
    bad = {"city": 1}
    responses = [Response(answer("openai", bad, "City")) for _ in range(3)]  # openai: ids are per call
    with LoopbackServer(responses) as srv:
        stream = chat(provider_for("openai", srv), "x", output=SCHEMA, loop={"output_retries": 2})
        list(stream)
    err = stream.result().error
    assert isinstance(err, OutputValidationError) and err.attempts == 3 and len(srv.requests) == 3


def test_output_after_a_tool_step() -> None:
    """Tools run first; the answer after them is the structured output."""
    calls = provider_stream("openai", text="", reasoning="", tool_name="lookup", tool_args={"q": "Paris"})
    with LoopbackServer([Response(calls.body), Response(answer("openai", VALUE, "City"))]) as srv:
        def lookup(q: str) -> str:
            """Look a city up."""
            return "2102650 people"

        stream = chat(provider_for("openai", srv), "Describe Paris", tools=[lookup], output=SCHEMA)
        list(stream)
    result = stream.result()
    assert result.output == VALUE and len(result.steps) == 2
    assert all("response_format" in r.json() for r in srv.requests)


# -- the Anthropic form rule ------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "native"), [
    ("claude-sonnet-4-5", True), ("claude-sonnet-4-5-20250929", True), ("claude-haiku-4-5-20251001", True),
    ("claude-opus-4-1-20250805", True), ("claude-opus-4-6", True), ("claude-sonnet-5", True),
    ("claude-sonnet-4-20250514", False), ("claude-opus-4-0", False), ("claude-3-5-haiku-latest", False),
    ("claude-3-7-sonnet-20250219", False), ("my-proxy-alias", False),
])
def test_anthropic_native_rule(model: str, native: bool) -> None:
    assert native_output(model) is native


def test_anthropic_forced_tool_beside_other_tools_and_with_thinking() -> None:
    from hookstream import Message
    from hookstream.plugin import ModelRequest, ToolSpec
    from hookstream_anthropic.request import build_body

    fmt = resolve_output(Output(SCHEMA, mode="tool")).format
    body = build_body(ModelRequest("claude-sonnet-4-5", [Message.user("x")], tools=[ToolSpec("lookup")], output=fmt))
    assert [t["name"] for t in body["tools"]] == ["lookup", "City"] and body["tool_choice"] == {"type": "any"}
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    body = build_body(ModelRequest("claude-sonnet-4-5", [Message.user("x")], options=thinking, output=fmt))
    assert body["tool_choice"] == {"type": "auto"}
    # auto: a schema that is not closed everywhere takes the forced tool even on a native model
    open_fmt = resolve_output({"type": "object", "properties": {"a": {"type": "string"}}}).format
    body = build_body(ModelRequest("claude-sonnet-4-5", [Message.user("x")], output=open_fmt))
    assert "output_config" not in body and body["tool_choice"] == {"type": "tool", "name": "output"}


# -- spec resolution ------------------------------------------------------------------------------


@dataclasses.dataclass
class WithDefault:
    city: str
    note: str = ""


def test_strict_only_where_the_schema_allows() -> None:
    assert resolve_output(CityDC).format.strict is True
    assert resolve_output(WithDefault).format.strict is False  # an optional field: not all required
    with pytest.raises(ValueError, match="strict=True"):
        resolve_output(Output(WithDefault, strict=True))
    assert resolve_output(Output(CityDC, strict=False)).format.strict is False
    nested = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}},
                                                     "required": ["b"]}},
              "required": ["a"], "additionalProperties": False}
    assert strict_allowed(nested) is False  # the inner object is open


def test_bad_specs_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(TypeError, match="output="):
        chat("openai:gpt-4o-mini", "x", output=int)
    with pytest.raises(ValueError, match="like a tool"):
        chat("openai:gpt-4o-mini", "x", output=Output(SCHEMA, name="lookup"), tools=[{"name": "lookup"}])
    with pytest.raises(ValueError, match="mode"):
        resolve_output(Output(SCHEMA, mode="psychic"))  # type: ignore[arg-type]


def test_name_is_cleaned_for_the_providers() -> None:
    assert resolve_output({"title": "My City (v2)", "type": "object"}).format.name == "My_City_v2"
    assert resolve_output({"type": "object"}).format.name == "output"


# -- the partial object ----------------------------------------------------------------------------


def is_prefix(part: Any, whole: Any) -> bool:
    """Whether ``part`` is what a partial parse of ``whole`` may show: keys and items a subset, in order."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and is_prefix(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(part) <= len(whole) and all(map(is_prefix, part, whole))
    return bool(part == whole)


def test_tracker_patches_follow_the_partial_value_after_every_delta() -> None:
    shallow = {"a": [1, "x/y~z", None, True, 2.5], "a/b": "ok", "": {"e": "é\n"}, "n": -3e2}
    text = json.dumps(shallow, ensure_ascii=False)
    tracker = OutputTracker("text")
    state: dict[str, Any] = {}
    for ch in text:  # one character per delta: every split point
        state = apply_patch(state, copy.deepcopy(tracker.feed(ch)))
        assert state.get("output") == tracker.value  # shallow: every value is published as it completes
    assert state["output"] == shallow


def test_deep_containers_are_published_whole() -> None:
    doc = {"items": [{"id": i, "tags": ["a", {"deep": [i]}]} for i in range(50)], "done": True}
    text = json.dumps(doc)
    tracker = OutputTracker("text")
    state: dict[str, Any] = {}
    ops = 0
    for ch in text:
        delta = tracker.feed(ch)
        ops += len(delta)
        state = apply_patch(state, copy.deepcopy(delta))
        assert is_prefix(state.get("output"), doc) and is_prefix(state.get("output"), tracker.value)
    assert state["output"] == doc
    assert ops == 1 + 1 + 50 + 1  # root, the list, one per record, "done"


def test_tracker_stops_quietly_on_text_that_is_not_json() -> None:
    tracker = OutputTracker("text")
    assert tracker.feed('{"a": 1') != []
    assert tracker.feed("} trailing") == [] and tracker.failed
    assert tracker.feed("more") == []


def test_a_structured_run_is_valid_ag_ui() -> None:
    """Every event of a run with output=, STATE_DELTA included, validates against ag-ui-protocol."""
    ag_ui = pytest.importorskip("ag_ui.core")
    from hookstream.events import to_json
    from pydantic import TypeAdapter

    official = TypeAdapter(ag_ui.Event)
    with LoopbackServer([Response(answer("openai", VALUE, "City"))]) as srv:
        events = list(chat(provider_for("openai", srv), "x", output=SCHEMA))
    parsed = [official.validate_json(to_json(ev)) for ev in events]
    deltas = [p for p in parsed if isinstance(p, ag_ui.StateDeltaEvent)]
    assert deltas and all(op.op == "add" for d in deltas for op in d.delta)


# -- CLI ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
def test_cli_schema_end_to_end(provider: str, tmp_path: Path) -> None:
    schema_file = tmp_path / "city.json"
    schema_file.write_text(json.dumps(SCHEMA))
    with LoopbackServer([Response(answer(provider, VALUE, "City"))]) as srv:
        env = dict(os.environ, OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test", GEMINI_API_KEY="g-test")
        proc = subprocess.run(
            [sys.executable, "-m", "hookstream", "chat", "Describe Paris", "--model", MODELS[provider],
             "--base-url", srv.url + BASE_PATH[provider], "--schema", str(schema_file), "--output", "final-json"],
            capture_output=True, text=True, env=env, timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["output"] == VALUE and doc["error"] is None
    assert json.loads(doc["text"]) == VALUE  # existing keys keep their meaning
    output_in_request(provider, srv.requests[0].json(), "City", SCHEMA)


def test_cli_invalid_output_and_bad_schema_file(tmp_path: Path) -> None:
    schema_file = tmp_path / "city.json"
    schema_file.write_text(json.dumps(SCHEMA))
    env = dict(os.environ, OPENAI_API_KEY="sk-test")
    with LoopbackServer([Response(answer("openai", {"city": 3}, "City"))]) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "hookstream", "chat", "x", "--model", MODELS["openai"], "--base-url",
             srv.url + "/v1", "--schema", str(schema_file), "--output", "final-json"],
            capture_output=True, text=True, env=env, timeout=120,
        )
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["output"] is None and doc["error"]["code"] == "output_invalid" and doc["text"] == '{"city": 3}'
    (tmp_path / "bad.json").write_text("[1, 2]")
    proc = subprocess.run([sys.executable, "-m", "hookstream", "chat", "x", "--model", MODELS["openai"],
                           "--schema", str(tmp_path / "bad.json")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 2 and "--schema" in proc.stderr


def test_output_fields_sit_beside_the_options() -> None:
    from hookstream import Message
    from hookstream.plugin import ModelRequest
    from hookstream_anthropic.request import build_body
    from hookstream_openai.responses import responses_body

    fmt = resolve_output(SCHEMA).format
    body = build_body(ModelRequest("claude-sonnet-4-5", [Message.user("x")], output=fmt,
                                   options={"output_config": {"effort": "low"}}))
    assert body["output_config"] == {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}}
    body = responses_body(ModelRequest("gpt-5", [Message.user("x")], output=fmt,
                                       options={"text": {"verbosity": "low"}}))
    assert body["text"]["verbosity"] == "low" and body["text"]["format"]["name"] == "City"


def test_partial_output_is_current_after_every_event() -> None:
    with LoopbackServer([Response(answer("gemini", VALUE, "City", deltas=20))]) as srv:
        stream = chat(provider_for("gemini", srv), "x", output=SCHEMA)
        seen = [json.dumps(stream.partial_output) for _ in stream]
    assert seen[0] == "null" and json.loads(seen[-1]) == VALUE
    assert any('"tags": ["capital"]' in s for s in seen)  # a list as far as it has come


def test_processor_state_events() -> None:
    from hookstream.events import StateSnapshot

    changes: list[Any] = []
    proc = StreamProcessor(on_state_change=changes.append)
    proc.process_chunk(StateSnapshot({"app": 1}))
    proc.process_chunk(StateDelta([{"op": "add", "path": "/output", "value": {"a": []}},
                                   {"op": "add", "path": "/output/a/-", "value": 1}]))
    proc.process_chunk(StateDelta([{"op": "add", "path": "/missing/x", "value": 2}]))  # does not apply
    proc.process_chunk({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/app"}]})
    assert proc.state == {"output": {"a": [1]}} and proc.stats.state_patch_errors == 1
    assert proc.result.output == {"a": [1]} and len(changes) == 3
