"""Run observers (hookstream._agentloop.observe): what they see of a real run, in which order and on which thread,
that the run's context reaches the tool threads without leaking into the caller, that an observer that
raises is reported once and dropped while the run goes on, and that no observer means no fan-out."""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any

import pytest
from engine_kit import run, text_body, tool_body
from hookstream import ChatStream, Observer, ToolResultPart, chat, get_model
from hookstream._agentloop.hooks import RunHooks, current_hooks
from hookstream.plugin import ModelCallInfo, RetryInfo, RunInfo, ToolInfo
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, LoopbackServer, Response, demo_server, demo_tools

MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_observe_mark", default=None)


def demo_stream(*, delay: float = 0, observers: list[Any]) -> tuple[LoopbackServer, ChatStream]:
    """The offline demo's run (``hookstream chat --demo``) with ``observers``; the caller stops the server."""
    server = demo_server(delay=delay)
    model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
    return server, chat(model, DEMO_PROMPT, tools=demo_tools(), max_steps=4, observers=observers)



class Recorder(Observer):
    """Every observation as (name, detail, thread name); sets MARK in run_start (the run's context)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, str]] = []
        self.lock = threading.Lock()
        self.calls: list[ModelCallInfo] = []
        self.result: Any = None

    def _add(self, name: str, detail: Any = None) -> None:
        with self.lock:
            self.seen.append((name, detail, threading.current_thread().name))

    def run_start(self, run: RunInfo) -> None:
        MARK.set(run.run_id)
        self._add("run_start", run.provider)

    def run_end(self, run: RunInfo, result: Any) -> None:
        self.result = result
        self._add("run_end", result.outcome)

    def model_call_start(self, call: ModelCallInfo) -> None:
        self.calls.append(call)
        self._add("model_call_start", call.model)

    def model_call_first_chunk(self, call: ModelCallInfo) -> None:
        self._add("model_call_first_chunk")

    def model_call_retry(self, call: ModelCallInfo, retry: RetryInfo) -> None:
        self._add("model_call_retry", (retry.attempt, retry.delay, type(retry.error).__name__))

    def model_call_end(self, call: ModelCallInfo) -> None:
        self._add("model_call_end", call.finish_reason)

    def model_call_error(self, call: ModelCallInfo, error: BaseException) -> None:
        self._add("model_call_error", call.error_type)

    def tool_start(self, tool: ToolInfo) -> None:
        self._add("tool_start", (tool.name, tool.call_id, MARK.get()))

    def tool_end(self, tool: ToolInfo, result: ToolResultPart) -> None:
        self._add("tool_end", (tool.name, tool.is_error))

    def names(self) -> list[str]:
        return [n for n, _, _ in self.seen]


def test_no_observers_means_no_fan_out() -> None:
    seen: list[Any] = []

    def probe() -> str:
        """Report what the tool thread sees."""
        seen.append(current_hooks())
        return "ok"

    with LoopbackServer([Response(tool_body(("c1", "probe", {}))), Response(text_body("done"))]) as server:
        _, stream = run(server.url, tools=[probe])
    assert stream.result().outcome == "success"
    # An installed run plugin (hookstream-otel) gives every run hooks; without one nothing is current.
    assert seen and all(s is None or isinstance(s, RunHooks) for s in seen)


def test_no_run_hooks_at_all_the_tool_thread_sees_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from hookstream import _registry

    monkeypatch.setattr(_registry.Registry, "run_hooks", lambda self, plugins=(), observers=(): None)
    seen: list[Any] = []

    def probe() -> str:
        """Report what the tool thread sees."""
        seen.append(current_hooks())
        return "ok"

    with LoopbackServer([Response(tool_body(("c1", "probe", {}))), Response(text_body("done"))]) as server:
        _, stream = run(server.url, tools=[probe])
    assert stream.result().outcome == "success"
    assert seen == [None]


def test_the_demo_run_in_order_with_tools_on_their_threads() -> None:
    rec = Recorder()
    inside: list[str | None] = []
    server, stream = demo_stream(delay=0, observers=[rec])
    try:
        events = list(stream)
    finally:
        server.stop()
    assert events[-1].type == "RUN_FINISHED"
    names = rec.names()
    assert names[0] == "run_start" and names[-1] == "run_end"
    assert names[1:5] == ["model_call_start", "model_call_first_chunk", "model_call_end", names[4]]
    tools = [d for n, d, _ in rec.seen if n == "tool_start"]
    assert sorted(t[0] for t in tools) == ["convert_currency", "get_weather"]
    # tool_start ran on the executor threads, with the run's context (MARK set in run_start).
    run_id = rec.calls[0].run_id
    assert all(t[2] == run_id for t in tools)
    threads = {th for n, _, th in rec.seen if n == "tool_start"}
    assert len(threads) == 2 and threading.current_thread().name not in threads
    assert sorted(d for n, d, _ in rec.seen if n == "tool_end") == [("convert_currency", False), ("get_weather", False)]
    # The second model call starts after both tools ended.
    second = [i for i, n in enumerate(names) if n == "model_call_start"][1]
    assert max(i for i, n in enumerate(names) if n == "tool_end") < second
    assert names.count("model_call_end") == 2 and "model_call_error" not in names
    assert [c.finish_reason for c in rec.calls] == ["tool_calls", "stop"]
    assert all(c.usage is not None and c.first_chunk_at is not None and c.ended_at is not None for c in rec.calls)
    assert rec.result.outcome == "success" and len(rec.result.steps) == 2
    # The run's context never leaked into the caller's.
    inside.append(MARK.get())
    assert inside == [None]


class Boom(Observer):
    def __init__(self) -> None:
        self.calls = 0

    def model_call_start(self, call: ModelCallInfo) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")

    def tool_start(self, tool: ToolInfo) -> None:
        self.calls += 1


def test_an_observer_that_raises_is_reported_once_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    boom, rec = Boom(), Recorder()
    server, stream = demo_stream(delay=0, observers=[boom, rec])
    try:
        with caplog.at_level(logging.WARNING, logger="hookstream.observe"):
            events = list(stream)
    finally:
        server.stop()
    assert events[-1].type == "RUN_FINISHED" and stream.result().outcome == "success"
    assert boom.calls == 1  # disabled after its first failure: no tool_start, no second model call
    warnings = [r for r in caplog.records if r.name == "hookstream.observe"]
    assert len(warnings) == 1 and "Boom" in warnings[0].getMessage() and warnings[0].exc_info
    assert rec.names().count("model_call_start") == 2  # the other observer still sees everything


def test_retries_and_a_failed_call_are_observed() -> None:
    rec = Recorder()
    overloaded = Response(b'{"error": {"message": "busy", "type": "server_error"}}', status=503,
                          content_type="application/json", headers={"Retry-After": "0"})
    with LoopbackServer([overloaded, Response(text_body("hi"))]) as server:
        _, stream = run(server.url, observers=[rec])
    assert stream.result().outcome == "success"
    retries = [d for n, d, _ in rec.seen if n == "model_call_retry"]
    assert len(retries) == 1 and retries[0][0] == 1 and retries[0][1] >= 0
    assert rec.calls[0].attempts == 2

    rec = Recorder()
    bad = Response(b'{"error": {"message": "no such model", "type": "invalid_request_error"}}', status=400,
                   content_type="application/json")
    with LoopbackServer([bad]) as server:
        _, stream = run(server.url, observers=[rec])
    assert stream.result().outcome == "error"
    names = rec.names()
    assert names.count("model_call_error") == 1 and "model_call_end" not in names
    assert rec.calls[0].error_type and rec.seen[-1][1] == "error"


def test_a_tool_error_is_observed_as_an_error_result() -> None:
    rec = Recorder()

    def fails() -> str:
        """Always fails."""
        raise ValueError("nope")

    with LoopbackServer([Response(tool_body(("c1", "fails", {}))), Response(text_body("sorry"))]) as server:
        _, stream = run(server.url, tools=[fails], observers=[rec])
    assert stream.result().outcome == "success"
    assert [d for n, d, _ in rec.seen if n == "tool_end"] == [("fails", True)]


def test_breaking_out_early_still_ends_the_run_once() -> None:
    rec = Recorder()
    server, stream = demo_stream(delay=0, observers=[rec])
    try:
        for ev in stream:
            if ev.type == "TEXT_MESSAGE_CONTENT" or ev.type == "TOOL_CALL_START":
                break
        result = stream.result()
    finally:
        server.stop()
    assert result.outcome == "cancelled"
    names = rec.names()
    assert names.count("run_start") == 1 and names.count("run_end") == 1 and names[-1] == "run_end"
    # The open model call was reported as ended one way or the other, exactly once.
    assert names.count("model_call_end") + names.count("model_call_error") == names.count("model_call_start")
    assert MARK.get() is None


class ObserverPlugin:
    """A plugin object registering three observer factories: one works, one opts out, one raises."""

    def __init__(self) -> None:
        from hookstream.plugin import hookimpl

        made: list[Recorder] = []
        self.made = made

        @hookimpl
        def hookstream_register_observers(register: Any) -> None:
            def good() -> Recorder:
                made.append(Recorder())
                return made[-1]

            def broken() -> Observer:
                raise RuntimeError("factory bug")

            register("good", good)
            register("off", lambda: None)
            register("broken", broken)

        self.hookstream_register_observers = hookstream_register_observers


def test_registered_observer_factories(caplog: pytest.LogCaptureFixture) -> None:
    from hookstream.errors import UnknownPluginError
    from hookstream.plugin import Registry

    reg = Registry(autoload=False)
    plugin = ObserverPlugin()
    info = reg.add_plugin(plugin, "obs")
    assert info is not None and info.registered["observers"] == ["good", "off", "broken"]
    assert reg.names("observers") == ["broken", "good", "off"]
    assert callable(reg.observer("good"))
    with pytest.raises(UnknownPluginError, match="no observer named 'nope'"):
        reg.observer("nope")
    with caplog.at_level(logging.WARNING, logger="hookstream.registry"):
        made = reg.observers()
    assert made == plugin.made and len(made) == 1
    assert any("broken" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("executor", ["thread", ("bounded", 1), "sequential"])
def test_the_run_context_reaches_the_tool_function(executor: Any) -> None:
    rec = Recorder()
    seen: list[tuple[str | None, str]] = []
    lock = threading.Lock()

    def probe(n: int) -> str:
        """Report the context the tool function runs in.

        Args:
            n: Call number.
        """
        with lock:
            seen.append((MARK.get(), threading.current_thread().name))
        return "ok"

    calls = (("c1", "probe", {"n": 1}), ("c2", "probe", {"n": 2}))
    with LoopbackServer([Response(tool_body(*calls)), Response(text_body("done"))]) as server:
        _, stream = run(server.url, tools=[probe], executor=executor, observers=[rec])
    assert stream.result().outcome == "success"
    run_id = rec.calls[0].run_id
    assert [m for m, _ in seen] == [run_id, run_id]
    # The tool function runs on its own guarded thread, never on the caller's.
    assert all(name.startswith("hookstream-tool-probe") for _, name in seen)
    assert MARK.get() is None
