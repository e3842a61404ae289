"""The engine's tool phase over a real loopback OpenAI server: executors in parallel and in sequence,
prepare_step, repair_tool_call, JSON Schema validation, per-tool timeout and return_direct."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from engine_kit import body_messages, run, text_body, tool_body, tool_names, types
from hookstream import CancellationToken, RepairRequest, StepSettings, StepStart, ToolCallPart, ToolContext, tool
from hookstream.testing import LoopbackServer, Response

# Generous limits that only keep a broken test from hanging; none of them bounds how fast the code is.
NEVER = 30.0


class Probe:
    """Records tool starts and ends under a lock, and how many tool calls were running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.running = 0
        self.most = 0

    def enter(self, city: str) -> None:
        with self.lock:
            self.log.append(f"start {city}")
            self.running += 1
            self.most = max(self.most, self.running)

    def leave(self, city: str) -> None:
        with self.lock:
            self.running -= 1
            self.log.append(f"end {city}")


def two_calls() -> list[Response]:
    return [Response(tool_body(("c1", "slow", {"city": "Paris"}), ("c2", "slow", {"city": "Rome"}))),
            Response(text_body("Both sunny."))]


def check_two_results(srv: LoopbackServer, stream: Any) -> None:
    res = stream.result()
    assert res.outcome == "success" and res.text == "Both sunny."
    assert [r.output for r in res.tool_results] == ["sunny in Paris", "sunny in Rome"]
    # Results in call order, whatever order they finished in.
    assert [r.tool_call_id for r in res.tool_results] == ["c1", "c2"]
    tool_msgs = [m for m in body_messages(srv.requests[1]) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2"]


def test_thread_executor_runs_two_tools_in_parallel() -> None:
    # Both calls must be inside the tool at once to pass the barrier: run one after the other, the
    # first would wait alone until the barrier breaks. Paris then waits for Rome to finish, so the
    # results come back in the reverse of the order they finished in.
    both_in = threading.Barrier(2, timeout=NEVER)
    rome_done = threading.Event()
    probe = Probe()

    def slow(city: str) -> str:
        """Look up the weather, meeting the other call half-way.

        Args:
            city: the city.
        """
        probe.enter(city)
        both_in.wait()
        if city == "Paris":
            assert rome_done.wait(NEVER)
        probe.leave(city)
        if city == "Rome":
            rome_done.set()
        return f"sunny in {city}"

    with LoopbackServer(two_calls()) as srv:
        _events, stream = run(srv.url, tools=[slow], executor="thread")
    check_two_results(srv, stream)
    assert probe.most == 2 and probe.log[-2:] == ["end Rome", "end Paris"]


@pytest.mark.parametrize("executor", ["sequential", ("bounded", 1)], ids=["sequential", "bounded-1"])
def test_sequential_and_bounded_one_never_overlap(executor: Any) -> None:
    # Paris gives Rome a chance to start beside it. Waiting out that chance is the passing path, so a
    # loaded machine can only make this test slower, never make it fail.
    probe = Probe()
    rome_started = threading.Event()

    def slow(city: str) -> str:
        """Look up the weather.

        Args:
            city: the city.
        """
        probe.enter(city)
        if city == "Rome":
            rome_started.set()
        else:
            rome_started.wait(0.3)
        probe.leave(city)
        return f"sunny in {city}"

    with LoopbackServer(two_calls()) as srv:
        _events, stream = run(srv.url, tools=[slow], executor=executor)
    check_two_results(srv, stream)
    assert probe.most == 1
    assert probe.log == ["start Paris", "end Paris", "start Rome", "end Rome"]


def test_prepare_step_changes_tools_model_and_system_of_step_two() -> None:
    def search(q: str) -> str:
        return f"found {q}"

    def answer(text: str) -> str:
        return text

    seen: list[StepStart] = []

    def prepare(info: StepStart) -> StepSettings | None:
        seen.append(info)
        if info.number == 2:
            return StepSettings(model="gpt-4o", active_tools=["answer"], tool_choice="required", system="Be brief.")
        return None

    responses = [Response(tool_body(("c1", "search", {"q": "x"}))), Response(text_body("done"))]
    with LoopbackServer(responses) as srv:
        run(srv.url, tools=[search, answer], prepare_step=prepare, system="Be thorough.")
    first, second = (r.json() for r in srv.requests)
    assert tool_names(srv.requests[0]) == ["search", "answer"] and first["model"] == "gpt-4o-mini"
    assert tool_names(srv.requests[1]) == ["answer"]
    assert second["model"] == "gpt-4o" and second["tool_choice"] == "required"
    assert second["messages"][0] == {"role": "system", "content": "Be brief."}
    # The history itself is unchanged: step 2 still carries the tool call and its result.
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert [s.number for s in seen] == [1, 2] and len(seen[1].steps) == 1


def test_repaired_tool_call_runs_with_the_fixed_input() -> None:
    calls: list[dict[str, Any]] = []

    def add(a: int, b: int) -> int:
        calls.append({"a": a, "b": b})
        return a + b

    def repair(req: RepairRequest) -> ToolCallPart | None:
        assert "unknown tool 'addition'" in req.problem and "add" in req.tools
        return ToolCallPart(req.call.id, "add", {"a": int(req.call.arguments["x"]), "b": 2})  # type: ignore[index]

    responses = [Response(tool_body(("c1", "addition", {"x": "40"}))), Response(text_body("42"))]
    with LoopbackServer(responses) as srv:
        _events, stream = run(srv.url, tools=[add], repair_tool_call=repair)
    assert calls == [{"a": 40, "b": 2}]
    msgs = body_messages(srv.requests[1])
    assistant = msgs[1]
    assert assistant["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a":40,"b":2}'}
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "42"}
    assert stream.result().tool_results[0].output == 42


def test_schema_invalid_input_goes_back_to_the_model_as_an_error() -> None:
    ran: list[Any] = []

    def add(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    responses = [Response(tool_body(("c1", "add", {"a": "one", "b": 2}), ("c2", "add", "{not json"))),
                 Response(text_body("sorry"))]
    with LoopbackServer(responses) as srv:
        events, _stream = run(srv.url, tools=[add])
    assert ran == []
    tool_msgs = [m for m in body_messages(srv.requests[1]) if m["role"] == "tool"]
    assert "invalid input for 'add'" in tool_msgs[0]["content"] and "'one' is not of type 'integer'" in \
        tool_msgs[0]["content"] and "(at a)" in tool_msgs[0]["content"]
    assert "not a JSON object" in tool_msgs[1]["content"]
    results = [e for e in events if e.type == "TOOL_CALL_RESULT"]
    assert all(r.error for r in results)


def test_a_hanging_tool_times_out_with_an_error_result_and_the_run_goes_on() -> None:
    # The tool blocks until the test lets it go, after the run: the run can only have finished
    # because the engine stopped waiting for it, not because it returned.
    tokens: list[CancellationToken] = []
    release, returned = threading.Event(), threading.Event()

    @tool(timeout=0.2)
    def hang(ctx: ToolContext) -> str:
        """Never returns on its own."""
        tokens.append(ctx.cancellation)
        release.wait(NEVER)
        returned.set()
        return "late"

    def quick() -> str:
        return "ok"

    responses = [Response(tool_body(("c1", "hang", {}), ("c2", "quick", {}))), Response(text_body("fine"))]
    try:
        with LoopbackServer(responses) as srv:
            _events, stream = run(srv.url, tools=[hang, quick])
        assert not returned.is_set(), "the run waited for the hanging tool to return"
    finally:
        release.set()
    res = stream.result()
    assert res.outcome == "success" and res.text == "fine"
    assert res.tool_results[0].is_error and "timed out after 0.2 s" in res.tool_results[0].output
    assert res.tool_results[1].output == "ok"
    assert tokens and tokens[0].cancelled and tokens[0].reason == "timeout"


def test_default_tool_timeout_from_timeouts() -> None:
    release, returned = threading.Event(), threading.Event()

    def sleepy() -> str:
        release.wait(NEVER)
        returned.set()
        return "late"

    responses = [Response(tool_body(("c1", "sleepy", {}))), Response(text_body("ok"))]
    try:
        with LoopbackServer(responses) as srv:
            _, stream = run(srv.url, tools=[sleepy], timeouts={"tool": 0.1})
        assert not returned.is_set()
    finally:
        release.set()
    assert "timed out after 0.1 s" in stream.result().tool_results[0].output


def test_return_direct_ends_the_run_with_the_tool_output() -> None:
    @tool(return_direct=True)
    def lookup(key: str) -> dict[str, str]:
        """Fetch a record."""
        return {"key": key, "value": "v"}

    with LoopbackServer([Response(tool_body(("c1", "lookup", {"key": "k"}))), Response(text_body("never"))]) as srv:
        events, stream = run(srv.url, tools=[lookup])
    assert len(srv.requests) == 1
    fin = events[-1]
    assert fin.type == "RUN_FINISHED" and fin.outcome.type == "success" and fin.result == {"key": "k", "value": "v"}
    res = stream.result()
    assert res.result == {"key": "k", "value": "v"}
    assert [m.role for m in res.messages] == ["user", "assistant", "tool"]
    assert types(events).count("TOOL_CALL_RESULT") == 1


def test_usage_per_step_and_summed() -> None:
    from engine_kit import usage

    responses = [Response(tool_body(("c1", "quick", {}), u=usage(100, 10, reasoning=4, cached=60))),
                 Response(text_body("ok", u=usage(150, 20, reasoning=6, cached=100)))]

    def quick() -> str:
        return "ok"

    with LoopbackServer(responses) as srv:
        events, stream = run(srv.url, tools=[quick])
    res = stream.result()
    assert [s.usage.input_tokens for s in res.steps] == [100, 150]  # type: ignore[union-attr]
    u = res.usage
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cached_input_tokens) == (250, 30, 10, 160)
    assert events[-1].usage == u



def test_the_text_fast_path_streams_and_keeps_what_the_general_path_does() -> None:
    # Without on_chunk (nor held output, nor a structured output) a text delta skips acc.add and the
    # per-event checks; with on_chunk every event takes the general path. Same events, steps, messages.
    def lookup(key: str) -> str:
        """Look up a key.

        Args:
            key: the key.
        """
        return f"value of {key}"

    def once(**kw: Any) -> tuple[list[tuple[str, Any]], Any]:
        responses = [Response(tool_body(("c1", "lookup", {"key": "a"}), text="Let me look.")),
                     Response(text_body("It is ", "value ", "of a."))]
        with LoopbackServer(responses) as srv:
            events, stream = run(srv.url, tools=[lookup], **kw)
        return [(e.type, getattr(e, "delta", None)) for e in events], stream.result()

    seen: list[Any] = []
    fast, fast_result = once()
    general, general_result = once(on_chunk=seen.append)
    assert ("TEXT_MESSAGE_CONTENT", "value ") in fast and any(e.type == "TEXT_MESSAGE_CONTENT" for e in seen)
    assert fast == general
    assert [s.text for s in fast_result.steps] == [s.text for s in general_result.steps] == ["Let me look.",
                                                                                            "It is value of a."]
    assert [(m.role, m.text) for m in fast_result.messages] == [(m.role, m.text) for m in general_result.messages]
    assert fast_result.usage == general_result.usage
