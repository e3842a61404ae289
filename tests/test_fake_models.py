"""The fake models of the testing kit (issue 25): ``FunctionModel`` scripts each reply, ``TestModel``
calls every tool with schema-valid arguments and then answers. Through the public API only: they run
through ``chat()`` like any provider object, and every run is checked with the one-run grammar."""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
from typing import Any, Literal

import hookstream
import jsonschema
import pytest
from hookstream import Output, StreamProcessor, Tool, chat, tool
from hookstream.testing import (
    FunctionModel,
    ModelError,
    Reply,
    RequestInfo,
    TestModel,
    ToolCall,
    check_events,
    schema_example,
)


def run(model: Any, prompt: Any = "hi", **kwargs: Any) -> tuple[list[Any], Any]:
    stream = chat(model, prompt, **kwargs)
    events = check_events(list(stream), form="run")
    return events, stream.result()


def types_of(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def of_type(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


# -- FunctionModel: text, reasoning, usage --------------------------------------------------------

def test_text_streams_in_word_deltas_through_the_adapter_grammar() -> None:
    model = FunctionModel(lambda messages, info: Reply("The answer is  forty two.", thinking="Let me think."))
    events, result = run(model)
    deltas = [e.delta for e in of_type(events, "TEXT_MESSAGE_CONTENT")]
    assert deltas == ["The", " answer", " is", "  forty", " two."]
    assert "".join(e.delta for e in of_type(events, "REASONING_MESSAGE_CONTENT")) == "Let me think."
    assert types_of(events).index("REASONING_START") < types_of(events).index("TEXT_MESSAGE_START")
    assert result.text == "The answer is  forty two." and result.reasoning == "Let me think."
    assert result.outcome == "success" and result.finish_reason == "stop"
    finished = of_type(events, "STEP_FINISHED")[0]
    assert finished.model == "function" and finished.response_id.startswith("resp_")
    assert finished.finish_reason == "stop"
    # Estimated usage: whitespace words in (the prompt) and out (text and thinking).
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1, 8)
    assert result.usage.reasoning_tokens == 3


def test_a_plain_string_reply_and_a_model_name() -> None:
    events, result = run(FunctionModel(lambda m, i: "hello there", model="scripted-1"))
    assert result.text == "hello there"
    assert of_type(events, "STEP_FINISHED")[0].model == "scripted-1"


def test_the_function_sees_messages_and_info() -> None:
    seen: list[tuple[list[Any], RequestInfo]] = []

    def fn(messages: list[Any], info: RequestInfo) -> Any:
        seen.append((messages, info))
        return ToolCall("add", {"a": 2, "b": 3}) if info.step == 1 else "five"

    model = FunctionModel(fn)
    _, result = run(model, "2+3?", tools=[add, weather], system="Be brief.", tool_choice="auto",
                    max_tokens=50, temperature=0.5, options={"seed": 7})
    assert result.text == "five"
    assert [info.step for _, info in seen] == [1, 2]
    first, info = seen[0]
    assert [(m.role, m.text) for m in first] == [("system", "Be brief."), ("user", "2+3?")]
    assert [t.name for t in info.tools] == ["add", "weather"]
    assert info.tools[0].parameters["properties"]["a"] == {"type": "integer"}
    assert (info.tool_choice, info.max_tokens, info.temperature, info.options) == ("auto", 50, 0.5, {"seed": 7})
    assert info.output is None and info.model == "function" and info.request.messages == first
    second, _ = seen[1]
    assert second[-1].role == "tool" and second[-1].tool_results[0].output == 5
    assert len(model.requests) == 2 and model.requests[0].messages == first


def test_a_function_that_returns_something_else_ends_the_run_with_an_adapter_error() -> None:
    events, result = run(FunctionModel(lambda m, i: 42))  # type: ignore[arg-type, return-value]
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "adapter_error"
    assert "Reply" in events[-1].message and result.outcome == "error"


def test_a_bug_in_the_function_ends_the_run_with_its_exception_named() -> None:
    def fn(messages: list[Any], info: RequestInfo) -> str:
        raise KeyError("oops")

    events, _ = run(FunctionModel(fn))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "adapter_error" and "KeyError" in events[-1].message


def test_a_finish_reason_is_checked_and_passed_on() -> None:
    with pytest.raises(ValueError, match="finish_reason"):
        Reply("x", finish_reason="done")
    _, result = run(FunctionModel(lambda m, i: Reply("cut", finish_reason="length")))
    assert result.finish_reason == "length" and result.raw_finish_reason == "length"


# -- tools ----------------------------------------------------------------------------------------

def test_parallel_tool_calls_stream_their_arguments_and_run() -> None:
    def fn(messages: list[Any], info: RequestInfo) -> Any:
        if info.step == 1:
            return Reply("Let me check.", tool_calls=[ToolCall("add", {"a": 20, "b": 22}, id="c1"),
                                                      ToolCall("weather", {"city": "Lisbon, Portugal"}, id="c2")])
        results = {r.tool_call_id: r.output for r in messages[-1].tool_results}
        return f"{results['c1']} and {results['c2']}"

    events, result = run(FunctionModel(fn), tools=[add, weather])
    starts = of_type(events, "TOOL_CALL_START")
    assert [(s.tool_call_id, s.tool_call_name) for s in starts] == [("c1", "add"), ("c2", "weather")]
    for cid, args in (("c1", {"a": 20, "b": 22}), ("c2", {"city": "Lisbon, Portugal"})):
        pieces = [e.delta for e in of_type(events, "TOOL_CALL_ARGS") if e.tool_call_id == cid]
        assert pieces and json.loads("".join(pieces)) == args
    assert len([e for e in of_type(events, "TOOL_CALL_ARGS") if e.tool_call_id == "c2"]) > 1  # in pieces
    assert [e.tool_call_id for e in of_type(events, "TOOL_CALL_RESULT")] == ["c1", "c2"]
    assert result.text == "42 and sunny in Lisbon, Portugal"
    assert result.steps[0].finish_reason == "tool_calls" and len(result.steps) == 2


def test_arguments_that_do_not_parse_give_the_model_an_error_result() -> None:
    def fn(messages: list[Any], info: RequestInfo) -> Any:
        if info.step == 1:
            return ToolCall("add", '{"a": 1, "b"')
        return "saw: " + ("error" if messages[-1].tool_results[0].is_error else "ok")

    _, result = run(FunctionModel(fn), tools=[add])
    assert result.text == "saw: error"


def test_max_steps_and_stop_conditions_end_a_model_that_always_calls_tools() -> None:
    model = FunctionModel(lambda m, info: ToolCall("add", {"a": info.step, "b": 0}))
    events, result = run(model, tools=[add], max_steps=3)
    assert result.stopped_by == "max_steps" and len(result.steps) == 3
    assert of_type(events, "CUSTOM")[-1].name == "loop-stopped"
    _, result = run(model, tools=[add], stop_when=[("step_count_is", 2)])
    assert result.stopped_by == "stop_condition" and len(result.steps) == 2


def test_a_fake_model_is_a_provider_object_prepare_step_can_switch_to() -> None:
    second = FunctionModel(lambda m, i: "from the second model", model="second")
    first = FunctionModel(lambda m, i: ToolCall("add", {"a": 1, "b": 1}), model="first")

    def prepare(step: Any) -> Any:
        return {"model": second} if step.number == 2 else None

    events, result = run(first, tools=[add], loop={"prepare_step": prepare})
    assert [e.model for e in of_type(events, "STEP_FINISHED")] == ["first", "second"]
    assert result.text == "from the second model"


def test_closing_a_fake_model_keeps_it_offline_and_usable() -> None:
    with FunctionModel(lambda m, i: "still here") as model:
        assert chat(model, "hi").result().text == "still here"
    assert chat(model, "hi").result().text == "still here"


# -- TestModel ------------------------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Address:
    street: str
    number: int
    tags: list[str]


def test_test_model_calls_every_tool_once_with_schema_valid_arguments() -> None:
    got: dict[str, dict[str, Any]] = {}

    def record(tool_name: str, /, **kwargs: Any) -> str:
        got[tool_name] = kwargs
        return f"{tool_name} ok"

    def plain(text: str, count: int, ratio: float, flag: bool, items: list[int]) -> str:
        """Every scalar kind."""
        return record("plain", text=text, count=count, ratio=ratio, flag=flag, items=items)

    def nested(address: Address, color: Color, mode: Literal["fast", "slow"], note: str | None = None) -> str:
        """A dataclass, an enum, a literal and an optional."""
        return record("nested", address=address, color=color, mode=mode, note=note)

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 5, "maxLength": 8},
            "age": {"type": "integer", "minimum": 18, "maximum": 20},
            "score": {"type": "number", "exclusiveMinimum": 10, "multipleOf": 0.5},
            "when": {"type": "string", "format": "date-time"},
            "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 3, "uniqueItems": True},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False},
            "size": {"enum": ["S", "M", "L"]},
            "kind": {"const": "fixed"},
            "meta": {"type": "object", "properties": {"inner": {"type": "object", "properties": {
                "deep": {"type": ["null", "string"]}}, "required": ["deep"], "additionalProperties": False}},
                "required": ["inner"], "additionalProperties": False},
            "any": {},
        },
        "required": ["name", "age", "score", "when", "ids", "pair", "size", "kind", "meta"],
        "additionalProperties": False,
    }
    raw = Tool("raw_schema", "A hand-written JSON Schema.", schema, lambda **kw: record("raw_schema", **kw))
    tools = [plain, nested, raw, Tool("no_args", "No arguments.", fn=lambda: "nothing")]
    model = TestModel()
    events, result = run(model, "go", tools=tools)

    starts = of_type(events, "TOOL_CALL_START")
    assert sorted(s.tool_call_name for s in starts) == ["nested", "no_args", "plain", "raw_schema"]
    assert len(result.steps) == 2 and len(result.steps[0].tool_calls) == 4  # all in one step
    offered = {spec.name: spec.parameters for spec in model.requests[0].tools}
    for call in result.steps[0].tool_calls:
        checker = jsonschema.Draft202012Validator(offered[call.name], format_checker=jsonschema.FormatChecker())
        checker.validate(call.arguments)
    assert not [r for r in result.steps[0].tool_results if r.is_error]
    assert isinstance(got["nested"]["address"], Address) and isinstance(got["nested"]["color"], Color)
    assert got["nested"]["mode"] in ("fast", "slow")
    assert 18 <= got["raw_schema"]["age"] <= 20 and 5 <= len(got["raw_schema"]["name"]) <= 8
    assert len(set(got["raw_schema"]["ids"])) == 3
    # The answer names each tool's result.
    for name in ("plain", "nested", "raw_schema"):
        assert f"{name} returned {name} ok" in result.text
    assert "no_args returned nothing" in result.text


@pytest.mark.parametrize("schema", [
    {"type": "string", "format": "uuid"},
    {"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 5},
    {"type": "number", "minimum": -2.5, "maximum": -1},
    {"type": "integer", "multipleOf": 7, "minimum": 50},
    {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 3, "uniqueItems": True},
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "boolean"}},
    {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}, "maxItems": 0}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"type": "integer", "minimum": 4}}, "required": ["b"]}]},
    {"$defs": {"Node": {"type": "object", "properties": {"value": {"type": "integer"},
                                                         "children": {"type": "array",
                                                                      "items": {"$ref": "#/$defs/Node"}}},
                        "required": ["value", "children"]}},
     "$ref": "#/$defs/Node"},
    {"type": ["string", "null"], "maxLength": 0},
])
def test_schema_examples_are_valid(schema: dict[str, Any]) -> None:
    value = schema_example(schema)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(value)
    assert schema_example(schema) == value  # deterministic


def test_test_model_without_tools_and_with_a_tool_choice() -> None:
    _, result = run(TestModel())
    assert result.text == "success (no tool calls)"
    _, result = run(TestModel(), tools=[add, weather], tool_choice={"name": "weather"})
    assert [c.name for c in result.steps[0].tool_calls] == ["weather"]
    _, result = run(TestModel(), tools=[add], tool_choice="none")
    assert result.text == "success (no tool calls)" and len(result.steps) == 1
    _, result = run(TestModel(call_tools=["add"], text="done", thinking="hmm"), tools=[add, weather])
    assert [c.name for c in result.steps[0].tool_calls] == ["add"] and result.text == "done"
    assert result.reasoning == "hmm"


def test_a_tool_error_is_named_in_the_answer() -> None:
    def broken(x: int) -> int:
        """Always fails."""
        raise RuntimeError("boom")

    _, result = run(TestModel(), tools=[broken])
    assert result.text.startswith("broken failed:") and "boom" in result.text


# -- approval, client tools -----------------------------------------------------------------------

@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@pytest.mark.parametrize("approved", [True, False])
def test_approval_interrupts_and_resume_continues(approved: bool) -> None:
    model = TestModel()
    events, result = run(model, "clean up", tools=[delete_file, add])
    assert result.outcome == "interrupt" and events[-1].outcome.type == "interrupt"
    assert [c.name for c in of_type(events, "CUSTOM") if c.name == "approval-requested"] == ["approval-requested"]
    pending = result.pending_approvals[0]
    assert pending.call.name == "delete_file"

    _, result2 = run(model, None, tools=[delete_file, add],
                           resume=result.resume({pending.approval_id: approved}))
    assert result2.outcome == "success"
    if approved:
        assert "delete_file returned deleted a" in result2.text
    else:
        assert "delete_file failed: Denied" in result2.text
    assert "add returned 2" in result2.text


def test_a_client_tool_waits_and_resumes_with_its_output() -> None:
    pick = Tool("pick_color", "Ask the user for a color.", {"type": "object", "properties": {
        "options": {"type": "array", "items": {"type": "string"}}}, "required": ["options"]})
    model = TestModel()
    events, result = run(model, "choose", tools=[pick])
    assert result.outcome == "success" and [c.name for c in result.pending_tool_calls] == ["pick_color"]
    assert any(e.type == "CUSTOM" and e.name == "tool-input-available" for e in events)
    call_id = result.pending_tool_calls[0].id
    _, result2 = run(model, None, tools=[pick], resume=result.resume(tool_outputs={call_id: "teal"}))
    assert result2.text == "pick_color returned teal"


# -- structured output ----------------------------------------------------------------------------

@dataclasses.dataclass
class Forecast:
    city: str
    celsius: float
    rain: bool
    hours: list[int]
    kind: Literal["sun", "cloud"]


@pytest.mark.parametrize("mode", ["auto", "tool"])
def test_test_model_answers_structured_output_with_a_schema_valid_value(mode: str) -> None:
    events, result = run(TestModel(), "forecast", tools=[weather], output=Output(Forecast, mode=mode))
    assert result.outcome == "success" and isinstance(result.output, Forecast)
    assert result.output.kind in ("sun", "cloud") and [c.name for c in result.steps[0].tool_calls] == ["weather"]
    assert of_type(events, "STATE_DELTA")  # the partial output streamed
    last = result.steps[-1]
    assert (last.text != "") == (mode == "auto") and bool(last.tool_calls) == (mode == "tool")


def test_test_model_with_a_given_output_value() -> None:
    value = {"city": "Oslo", "celsius": -3.5, "rain": False, "hours": [9], "kind": "cloud"}
    _, result = run(TestModel(output=value), "forecast", output=Forecast)
    assert result.output == Forecast("Oslo", -3.5, False, [9], "cloud")


def test_function_model_structured_output_with_a_retry() -> None:
    def fn(messages: list[Any], info: RequestInfo) -> Any:
        assert info.output is not None and info.output.name == "Forecast"
        if messages[-1].text == "forecast":
            return '{"city": "Oslo"}'  # missing fields: invalid
        return Reply(json.dumps({"city": "Oslo", "celsius": 1, "rain": True, "hours": [], "kind": "sun"}))

    _, result = run(FunctionModel(fn), "forecast", output=Forecast, loop={"output_retries": 1})
    assert result.output == Forecast("Oslo", 1, True, [], "sun") and len(result.steps) == 2


# -- HTTP errors, retries, in-stream errors -------------------------------------------------------

def test_an_error_status_is_retried_like_a_real_providers() -> None:
    attempts: list[int] = []

    def fn(messages: list[Any], info: RequestInfo) -> str:
        attempts.append(info.step)
        if len(attempts) == 1:
            raise ModelError(503, "overloaded", retry_after=0)
        return "second attempt"

    model = FunctionModel(fn)
    events, result = run(model)
    assert result.text == "second attempt" and attempts == [1, 1] and len(model.requests) == 2
    assert types_of(events).count("RUN_STARTED") == 1


@pytest.mark.parametrize(("status", "code"), [(400, "bad_request"), (401, "authentication_error"),
                                              (429, "rate_limit"), (500, "server_error")])
def test_an_error_status_ends_the_run_with_its_code(status: int, code: str) -> None:
    calls: list[int] = []

    def fn(messages: list[Any], info: RequestInfo) -> str:
        calls.append(1)
        raise ModelError(status, "no thanks", type="fake_error", retry_after=0)

    events, result = run(FunctionModel(fn))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == code
    assert "no thanks" in events[-1].message and result.outcome == "error"
    assert getattr(result.error, "status", None) == status
    assert len(calls) == (1 if status < 429 else 3)  # 429 and 5xx: the two retries chat() allows


def test_an_error_after_content_keeps_the_text_and_is_not_retried() -> None:
    calls: list[int] = []

    def fn(messages: list[Any], info: RequestInfo) -> Reply:
        calls.append(1)
        return Reply("partial answer", error=ModelError(503, "went away"))

    events, result = run(FunctionModel(fn))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "503" and "went away" in events[-1].message
    assert result.text == "partial answer" and calls == [1]


FallbackModel = getattr(hookstream, "FallbackModel", None)


@pytest.mark.skipif(FallbackModel is None, reason="hookstream.FallbackModel is not exported yet")
def test_a_fallback_model_moves_on_from_a_failing_fake_model_only_before_content() -> None:
    assert FallbackModel is not None
    second = FunctionModel(lambda m, i: "from the second model", model="second")
    down = FunctionModel(lambda m, i: (_ for _ in ()).throw(ModelError(503, "down", retry_after=0)), model="down")
    events, result = run(FallbackModel(down, second))
    assert result.outcome == "success" and result.text == "from the second model"
    assert [e.model for e in of_type(events, "STEP_FINISHED")] == ["second"]
    assert len(down.requests) >= 1 and len(second.requests) == 1

    late = FunctionModel(lambda m, i: Reply("some text", error=ModelError(503, "went away")), model="late")
    events, result = run(FallbackModel(late, second))
    assert events[-1].type == "RUN_ERROR" and result.text == "some text"
    assert len(second.requests) == 1  # not asked again: no fallback once content streamed


def test_an_in_stream_overload_before_content_is_retried() -> None:
    calls: list[int] = []

    def fn(messages: list[Any], info: RequestInfo) -> Reply:
        calls.append(1)
        return Reply(error=ModelError(type="overloaded_error")) if len(calls) == 1 else Reply("ok")

    _, result = run(FunctionModel(fn))
    assert result.text == "ok" and len(calls) == 2


def test_cancel_stops_a_fake_stream_where_it_is() -> None:
    stream = chat(FunctionModel(lambda m, i: " ".join(f"w{k}" for k in range(50))), "hi")
    events = []
    for event in stream:
        events.append(event)
        if event.type == "TEXT_MESSAGE_CONTENT" and event.delta.strip() == "w3":
            stream.cancel()
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "cancelled" and result.text == "w0 w1 w2 w3"


# -- processors, threads --------------------------------------------------------------------------

def test_a_stream_processor_sees_every_word_delta_and_builds_the_ui_message() -> None:
    updates: list[str] = []
    processor = StreamProcessor(on_text_update=lambda message_id, text: updates.append(text))
    processor.process(chat(TestModel(text="all done here"), "hi", tools=[add]))
    assert updates == ["all", "all done", "all done here"]
    message = processor.messages[-1]
    kinds = [p.type for p in message.parts]
    assert kinds[0].startswith("tool") and kinds[-1] == "text"
    assert message.parts[-1].content == "all done here"


@pytest.mark.parametrize("model_kind", ["function", "test"])
def test_one_fake_model_serves_runs_on_many_threads_at_once(model_kind: str) -> None:
    n = 6
    barrier = threading.Barrier(n)

    def echo(messages: list[Any], info: RequestInfo) -> Any:
        if info.step == 1:
            barrier.wait(timeout=60)  # every run is inside the model at once: nothing serialises them
            return ToolCall("add", {"a": int(messages[-1].text), "b": 1})
        return f"run {messages[-1].tool_results[0].output}"

    class Waiting(TestModel):
        def reply(self, messages: list[Any], info: RequestInfo) -> Any:
            if info.step == 1:
                barrier.wait(timeout=60)
            return super().reply(messages, info)

    model: Any = FunctionModel(echo) if model_kind == "function" else Waiting()
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            stream = chat(model, str(i * 10), tools=[add])
            check_events(list(stream), form="run")
            results[i] = stream.result()
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not barrier.broken
    assert len(model.requests) == 2 * n
    for i, result in results.items():
        assert result.outcome == "success"
        assert result.text == (f"run {i * 10 + 1}" if model_kind == "function" else "add returned 2")
