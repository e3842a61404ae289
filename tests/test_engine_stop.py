"""Stop conditions and max_steps over a real loopback OpenAI server: the loop continues only while the
step asked for tools, all produced results and no condition is met."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from engine_kit import run, text_body, tool_body, usage
from hookstream import StepResult, finish_reason_is, has_tool_call, step_count_is, total_tokens_exceed
from hookstream.testing import LoopbackServer, Response


def ping(n: int = 0) -> str:
    return "pong"


def finish(answer: str) -> str:
    return answer


def looping(n: int = 6) -> list[Response]:
    """A model that keeps calling ``ping`` (call ids unique per step), each step 100 in / 10 out tokens."""
    return [Response(tool_body((f"c{i}", "ping", {"n": i}), u=usage(100, 10))) for i in range(n)] + [
        Response(text_body("end"))]


@pytest.mark.parametrize(
    ("stop_when", "steps"),
    [
        ([("step_count_is", 2)], 2),
        ([step_count_is(3)], 3),
        ([("total_tokens_exceed", 250)], 3),  # 110, 220, 330 > 250
        ([total_tokens_exceed(100)], 1),
        ([lambda steps: len(steps[-1].tool_results) > 0 and steps[-1].number == 2], 2),  # custom callable
        ([step_count_is(9), ("step_count_is", 2)], 2),  # any one met stops
    ],
)
def test_stop_conditions(stop_when: list[Any], steps: int) -> None:
    with LoopbackServer(looping()) as srv:
        events, stream = run(srv.url, tools=[ping], stop_when=stop_when)
    res = stream.result()
    assert len(srv.requests) == steps and len(res.steps) == steps
    assert res.outcome == "success" and events[-1].outcome.type == "success"
    # The stopping step's tools ran and the history is paired.
    assert [m.role for m in res.messages][-2:] == ["assistant", "tool"]


def test_has_tool_call_stops_after_the_named_tool() -> None:
    responses = [Response(tool_body(("c1", "ping", {}))), Response(tool_body(("c2", "finish", {"answer": "42"}))),
                 Response(text_body("never"))]
    with LoopbackServer(responses) as srv:
        _, stream = run(srv.url, tools=[ping, finish], stop_when=[has_tool_call("finish")])
    assert len(srv.requests) == 2
    assert stream.result().tool_results[-1].output == "42"


def test_finish_reason_is_raw_or_normalised() -> None:
    with LoopbackServer(looping()) as srv:
        _, stream = run(srv.url, tools=[ping], stop_when=[finish_reason_is("tool_calls")])
    assert len(srv.requests) == 1 and stream.result().finish_reason == "tool_calls"


def test_max_steps_guards_every_run() -> None:
    with LoopbackServer(looping(20)) as srv:
        _, stream = run(srv.url, tools=[ping], max_steps=4)
    assert len(srv.requests) == 4 and stream.result().outcome == "success"


def test_default_max_steps_is_ten() -> None:
    with LoopbackServer(looping(20)) as srv:
        run(srv.url, tools=[ping])
    assert len(srv.requests) == 10


def test_no_tool_calls_ends_the_loop_without_any_condition() -> None:
    with LoopbackServer([Response(text_body("hi"))]) as srv:
        _, stream = run(srv.url, tools=[ping])
    assert len(srv.requests) == 1 and stream.result().text == "hi"


def test_cut_off_tool_call_is_not_run_and_the_history_stays_paired() -> None:
    ran: list[int] = []

    def count(n: int) -> int:
        ran.append(n)
        return n

    with LoopbackServer([Response(tool_body(("c1", "count", {"n": 1}), finish="length"))]) as srv:
        _, stream = run(srv.url, tools=[count])
    res = stream.result()
    assert ran == [] and len(srv.requests) == 1
    assert [m.role for m in res.messages] == ["user", "assistant", "tool"]
    assert res.messages[-1].tool_results[0].is_error


def test_a_failing_stop_condition_ends_with_run_error() -> None:
    def broken(steps: Sequence[StepResult]) -> bool:
        raise RuntimeError("boom")

    with LoopbackServer(looping()) as srv:
        events, stream = run(srv.url, tools=[ping], stop_when=[broken])
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "callback_error"
    assert stream.result().outcome == "error"
