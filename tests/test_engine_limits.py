"""Retries, time limits, cancellation and callbacks over a real loopback OpenAI server."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from engine_kit import frame, run, text_body, text_pieces, tool_body
from holdkit import NEVER, held
from hookstream import Callbacks, Observer, ToolContext, get_model
from hookstream.errors import CancelledError, RateLimitError, StreamTimeoutError
from hookstream.plugin import ModelCallInfo, RetryInfo
from hookstream.testing import CapturedRequest, LoopbackServer, Response


def error_body(message: str, etype: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": etype}}).encode()


def stamped() -> tuple[list[float], Any]:
    times: list[float] = []

    def check(index: int, req: CapturedRequest) -> None:
        times.append(time.monotonic())
        return None

    return times, check


# -- retries ----------------------------------------------------------------------------------------


def test_retry_after_429_honours_retry_after() -> None:
    times, check = stamped()
    responses = [Response(error_body("slow down", "rate_limit_exceeded"), status=429,
                          headers={"Retry-After": "1"}, content_type="application/json"),
                 Response(text_body("ok"))]
    with LoopbackServer(responses, check=check) as srv:
        _events, stream = run(srv.url)
    assert stream.result().text == "ok" and len(srv.requests) == 2
    assert times[1] - times[0] >= 0.98, times  # a minimum wait: load can only lengthen it


def test_5xx_is_retried_with_backoff_and_400_is_not() -> None:
    times, check = stamped()
    responses = [Response(error_body("overloaded", "server_error"), status=503, content_type="application/json"),
                 Response(text_body("ok"))]
    delays: list[float] = []

    class Delays(Observer):
        def model_call_retry(self, call: ModelCallInfo, retry: RetryInfo) -> None:
            delays.append(retry.delay)

    with LoopbackServer(responses, check=check) as srv:
        _, stream = run(srv.url, observers=[Delays()])
    assert stream.result().text == "ok"
    assert len(delays) == 1 and 0.25 <= delays[0] < 0.5, delays  # the first backoff draws from 0.25-0.5 s
    assert times[1] - times[0] >= 0.2, times
    with LoopbackServer([Response(error_body("bad", "invalid_request_error"), status=400,
                                  content_type="application/json")]) as srv:
        events, stream = run(srv.url)
    assert len(srv.requests) == 1 and events[-1].code == "bad_request"


def test_retries_exhausted_or_disabled_end_with_the_typed_error() -> None:
    resp = Response(error_body("slow down", "rate_limit_exceeded"), status=429, headers={"Retry-After": "0.05"},
                    content_type="application/json")
    with LoopbackServer([resp]) as srv:
        events, stream = run(srv.url, max_retries=0)
    assert len(srv.requests) == 1 and events[-1].code == "rate_limit"
    with LoopbackServer([resp]) as srv:
        events, stream = run(srv.url)
    assert len(srv.requests) == 3 and isinstance(stream.result().error, RateLimitError)


def test_connect_error_is_retried_then_reported() -> None:
    from port_kit import refused_port

    with refused_port() as port:  # held, so nothing can start listening there meanwhile
        t0 = time.monotonic()
        events, _stream = run(f"http://127.0.0.1:{port}", max_retries=1)
    assert events[-1].code == "connect_error" and time.monotonic() - t0 >= 0.25


# -- time limits ------------------------------------------------------------------------------------


def test_stall_with_keepalives_ends_with_the_idle_timeout() -> None:
    # The server sends keepalives every 50 ms until the test lets go: if they reset the idle clock the
    # run could only end when the held stream did.
    with held(text_pieces("Hello", " wor")[:3]) as (resp, hold), LoopbackServer([resp]) as srv:
        t0 = time.monotonic()
        events, stream = run(srv.url, timeouts={"idle": 0.5})
        elapsed = time.monotonic() - t0
        assert not hold.body_ended.is_set()
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "timeout"
    err = stream.result().error
    assert isinstance(err, StreamTimeoutError) and err.limit == "idle" and err.seconds == 0.5
    assert "idle timeout after 0.5 s" in events[-1].message
    assert elapsed >= 0.5, elapsed
    res = stream.result()
    assert res.text == "Hello wor" and res.messages[-1].text == "Hello wor"


def test_first_event_timeout() -> None:
    with held([], tail=text_pieces("late")) as (resp, hold), LoopbackServer([resp]) as srv:
        _events, stream = run(srv.url, timeouts={"first_event": 0.3})
        assert not hold.body_ended.is_set()
    err = stream.result().error
    assert isinstance(err, StreamTimeoutError) and err.limit == "first_event"


def test_step_timeout_even_while_events_flow() -> None:
    # Text flows every 20 ms until the test lets go, so only the step limit can end the run.
    x = text_pieces("x")
    with held(x[:2], tail=x[2:], keepalive_every=0.02, filler=x[1]) as (resp, hold), \
            LoopbackServer([resp]) as srv:
        _events, stream = run(srv.url, timeouts={"step": 1.0, "idle": NEVER})
        assert not hold.body_ended.is_set()
    err = stream.result().error
    assert isinstance(err, StreamTimeoutError) and err.limit == "step"
    assert set(stream.result().text) == {"x"}


def test_run_timeout_while_a_tool_runs() -> None:
    release, returned = threading.Event(), threading.Event()

    def wait_forever() -> str:
        release.wait(NEVER)
        returned.set()
        return "late"

    try:
        with LoopbackServer([Response(tool_body(("c1", "wait_forever", {}))), Response(text_body("x"))]) as srv:
            events, stream = run(srv.url, tools=[wait_forever], timeouts={"run": 0.4})
        assert not returned.is_set(), "the run limit waited for the tool to return"
    finally:
        release.set()
    err = stream.result().error
    assert isinstance(err, StreamTimeoutError) and err.limit == "run" and events[-1].code == "timeout"
    assert len(srv.requests) == 1


def test_slow_consumer_is_not_idle() -> None:
    with LoopbackServer([Response(text_body("a", "b", "c"))]) as srv:
        from engine_kit import MODEL
        from hookstream import chat

        # The whole body is already sent: only the consumer is slow, and that time is not idle time. The
        # first event has a hang bound of its own: only the gaps after it (none on the wire) are timed.
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "hi",
                      timeouts={"idle": 0.5, "first_event": NEVER})
        for ev in stream:
            if ev.type == "TEXT_MESSAGE_CONTENT":
                time.sleep(0.6)
    assert stream.result().outcome == "success"


# -- cancellation -----------------------------------------------------------------------------------


def cancel_when(stream: Any, predicate: Any, gate: threading.Event | None = None) -> list[Any]:
    """Iterate ``stream``; once ``predicate(event)`` held, cancel it from another thread (after ``gate``
    is set, when given). Returns the events."""
    events: list[Any] = []
    started = False

    def cancel() -> None:
        if gate is not None:
            assert gate.wait(NEVER)
        stream.cancel()

    for ev in stream:
        events.append(ev)
        if not started and predicate(ev):
            started = True
            threading.Thread(target=cancel, daemon=True).start()
    return events


def test_cancel_mid_text_from_another_thread() -> None:
    from engine_kit import MODEL
    from hookstream import chat
    from hookstream.testing import check_events

    # The server holds the stream open (keepalives) until the test lets go: the run can only end
    # because cancel() broke the blocked read.
    with held(text_pieces("Hel", "lo")[:3], tail=text_pieces("never")[1:]) as (resp, hold), \
            LoopbackServer([resp]) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "hi")
        events = cancel_when(stream, lambda e: e.type == "TEXT_MESSAGE_CONTENT" and e.delta == "lo")
        assert not hold.body_ended.is_set()
    check_events(events, form="run")
    fin = events[-1]
    assert fin.type == "RUN_FINISHED" and fin.outcome.type == "cancelled"
    res = stream.result()
    assert res.outcome == "cancelled" and res.text == "Hello" and res.messages[-1].text == "Hello"


def test_cancel_mid_tool_from_another_thread() -> None:
    from engine_kit import MODEL
    from hookstream import chat
    from hookstream.testing import check_events

    tokens: list[Any] = []
    slow_started, release, returned = threading.Event(), threading.Event(), threading.Event()

    def quick() -> str:
        return "quick result"

    def slow(ctx: ToolContext) -> str:
        tokens.append(ctx.cancellation)
        slow_started.set()
        release.wait(NEVER)
        returned.set()
        return "late"

    # Sequential, so quick's result is in before slow starts and the cancel lands inside slow.
    try:
        with LoopbackServer([Response(tool_body(("c1", "quick", {}), ("c2", "slow", {}))),
                             Response(text_body("never"))]) as srv:
            stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "hi", tools=[quick, slow],
                          executor="sequential")
            events = cancel_when(stream, lambda e: e.type == "STEP_FINISHED", gate=slow_started)
        assert not returned.is_set(), "cancel() waited for the running tool to return"
    finally:
        release.set()
    check_events(events, form="run")
    assert events[-1].outcome.type == "cancelled" and len(srv.requests) == 1
    res = stream.result()
    assert next(r.output for r in res.tool_results) == "quick result"
    assert res.tool_results[1].is_error and "cancelled" in res.tool_results[1].output
    assert tokens[0].cancelled
    assert [m.role for m in res.messages] == ["user", "assistant", "tool"]


# -- callbacks --------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: dict[str, list[Any]] = {}

    def kwargs(self) -> dict[str, Any]:
        names = ("on_chunk", "on_step_start", "on_step_finish", "on_finish", "on_error", "on_abort")
        return {n: (lambda arg, n=n: self.calls.setdefault(n, []).append(arg)) for n in names}

    def fired(self) -> set[str]:
        return set(self.calls)


def test_callbacks_on_success() -> None:
    rec = Recorder()

    def quick() -> str:
        return "r"

    with LoopbackServer([Response(tool_body(("c1", "quick", {}))), Response(text_body("done"))]) as srv:
        run(srv.url, tools=[quick], **rec.kwargs())
    assert rec.fired() == {"on_chunk", "on_step_start", "on_step_finish", "on_finish"}
    first, second = rec.calls["on_step_finish"]
    assert (first.number, first.finish_reason, [c.name for c in first.tool_calls]) == (1, "tool_calls", ["quick"])
    assert [r.output for r in first.tool_results] == ["r"] and first.usage.input_tokens == 10
    assert (second.number, second.text, second.finish_reason) == (2, "done", "stop")
    (final,) = rec.calls["on_finish"]
    assert final.outcome == "success" and len(final.steps) == 2 and final.usage.input_tokens == 20
    assert [s.number for s in rec.calls["on_step_start"]] == [1, 2]


def test_callbacks_on_error() -> None:
    rec = Recorder()
    pieces = [*text_pieces("partial")[:2], frame({"error": {"message": "boom", "type": "server_error"}})]
    with LoopbackServer([Response(pieces=pieces)]) as srv:
        events, stream = run(srv.url, **rec.kwargs())
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "server_error"
    assert rec.fired() == {"on_chunk", "on_step_start", "on_step_finish", "on_finish", "on_error"}
    assert rec.calls["on_step_finish"][0].error == ("server_error", "boom")
    assert rec.calls["on_finish"][0].outcome == "error"
    assert stream.result().text == "partial"


def test_callbacks_on_abort() -> None:
    from engine_kit import MODEL
    from hookstream import chat

    rec = Recorder()
    with held(text_pieces("Hel")[:2]) as (resp, _hold), LoopbackServer([resp]) as srv:
        provider = get_model(MODEL, base_url=srv.url + "/v1", api_key="k")
        stream = chat(provider, "hi", callbacks=Callbacks(**rec.kwargs()))
        cancel_when(stream, lambda e: e.type == "TEXT_MESSAGE_CONTENT")
    assert rec.fired() == {"on_chunk", "on_step_start", "on_step_finish", "on_finish", "on_abort"}
    assert rec.calls["on_abort"][0].outcome == "cancelled" and rec.calls["on_finish"][0].text == "Hel"


def test_consumer_that_stops_early_aborts_the_run() -> None:
    from engine_kit import MODEL
    from hookstream import chat

    rec = Recorder()
    with held(text_pieces("a", "b")[:3]) as (resp, _hold), LoopbackServer([resp]) as srv:
        provider = get_model(MODEL, base_url=srv.url + "/v1", api_key="k")
        stream = chat(provider, "hi", callbacks=Callbacks(**rec.kwargs()))
        for ev in stream:
            if ev.type == "TEXT_MESSAGE_CONTENT":
                break
        res = stream.result()
    assert res.outcome == "cancelled" and "on_abort" in rec.fired() and "on_finish" in rec.fired()


def test_a_raising_observer_does_not_break_the_run() -> None:
    def bad(_: Any) -> None:
        raise RuntimeError("observer bug")

    with LoopbackServer([Response(text_body("fine"))]) as srv:
        _, stream = run(srv.url, on_chunk=bad, on_finish=bad)
    assert stream.result().text == "fine"


@pytest.mark.parametrize("when", ["before", "during"])
def test_cancel_before_or_during_retry_wait(when: str) -> None:
    from engine_kit import MODEL
    from hookstream import chat

    # Retry-After 30 s: were the wait not broken by cancel(), the retry would reach the server.
    asked = threading.Event()

    def check(index: int, req: CapturedRequest) -> None:
        asked.set()

    resp = Response(error_body("slow", "rate_limit_exceeded"), status=429, headers={"Retry-After": "30"},
                    content_type="application/json")
    with LoopbackServer([resp], check=check) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="k"), "hi")
        if when == "before":
            stream.cancel()
        else:
            threading.Thread(target=lambda: asked.wait(NEVER) and stream.cancel(), daemon=True).start()
        events = list(stream)
        assert len(srv.requests) == (0 if when == "before" else 1)
    assert events[-1].type == "RUN_FINISHED" and events[-1].outcome.type == "cancelled"
    assert stream.result().error is None or isinstance(stream.result().error, CancelledError)
