"""Run hooks (docs/writing-a-run-plugin.md): a plugin sees and changes a run through pluggy — the request,
the events, the tool calls, the step's history and tools, the run's start and end — per run or for every
run; a plugin that raises ends the run with ``plugin_error`` instead of a traceback; two runs on two
threads with different plugins never see each other's. Every run goes to a real loopback server through
the real OpenAI adapter."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from engine_kit import MODEL, text_body, tool_body
from hookstream import RunSettings, ToolResultPart, chat, get_model
from hookstream.errors import PluginError
from hookstream.events import Custom, RunError, TextMessageContent
from hookstream.plugin import ModelCallContext, RunContext, StepContext, ToolCallContext, hookimpl
from hookstream.testing import LoopbackServer, Response, check_events


def _model(server: LoopbackServer) -> Any:
    return get_model(MODEL, base_url=server.url + "/v1", api_key="sk-test")


def _run(server: LoopbackServer, prompt: str = "hi", **fields: Any) -> tuple[list[Any], Any]:
    stream = chat(_model(server), prompt, **fields)
    events = list(stream)
    check_events(events, form="run")
    return events, stream.result()


class Upper:
    """Changes the request (temperature) and every text delta (upper case)."""

    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Any, Any]:
        call.request = attrs.evolve(call.request, temperature=0.25)
        events = yield
        return (TextMessageContent(e.message_id, e.delta.upper()) if type(e) is TextMessageContent else e
                for e in events)


def test_a_wrapper_changes_the_request_and_the_events() -> None:
    with LoopbackServer([Response(text_body("hello ", "world"))]) as server:
        events, result = _run(server, plugins=[Upper()])
    assert server.requests[0].json()["temperature"] == 0.25
    assert result.text == "HELLO WORLD"
    assert "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT") == "HELLO WORLD"


class Answer:
    """Answers every model call from a stored body, without the network."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    @hookimpl(tryfirst=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Iterable[Any]:
        return call.parse_body(self.body)


def test_a_plugin_answers_a_step_without_a_network_call() -> None:
    with LoopbackServer([Response(text_body("live"))]) as server:
        _, live = _run(server)
        _, answered = _run(server, plugins=[Answer(text_body("stored ", "answer"))])
    assert len(server.requests) == 1  # the answered run sent nothing
    assert answered.text == "stored answer"
    assert answered.usage.total_tokens == live.usage.total_tokens  # the same adapter read the stored body


class StopAfter:
    """Sees every event; ends the step with its own error after the first text delta."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Any, Any]:
        events = yield
        return self._cut(events)

    def _cut(self, events: Iterable[Any]) -> Iterator[Any]:
        for ev in events:
            self.seen.append(ev.type)
            yield ev
            if ev.type == "TEXT_MESSAGE_CONTENT":
                yield RunError("the plugin ended the step", code="plugin_stop")
                return


def test_a_wrapper_ends_the_step_and_what_streamed_is_kept() -> None:
    plugin = StopAfter()
    with LoopbackServer([Response(text_body("kept", " dropped"))]) as server:
        events, result = _run(server, plugins=[plugin])
    assert plugin.seen[:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "plugin_stop"
    assert result.outcome == "error" and "kept" in result.text and "dropped" not in result.text


def _file_tool(tmp_path: Path) -> Any:
    log = tmp_path / "ran.txt"

    def write(text: str) -> str:
        """Append text to a file.

        Args:
            text: What to append.
        """
        with open(log, "a", encoding="utf-8") as f:
            f.write(text + "\n")
        return "written"

    return write, log


class ToolGuard:
    """Refuses one call; records the threads the hook ran on."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    @hookimpl(tryfirst=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> ToolResultPart | None:
        self.threads.add(threading.current_thread().name)
        if call.arguments == {"text": "refuse me"}:
            return call.refuse("refused by policy")
        return None


class ToolRewrite:
    """Changes one call's arguments and replaces another's result."""

    @hookimpl(wrapper=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> Generator[None, Any, Any]:
        if call.arguments == {"text": "change me"}:
            call.arguments = {"text": "changed"}
        result = yield
        if call.arguments == {"text": "replace me"}:
            return ToolResultPart(call.call_id, call.name, "replaced")
        return result


def test_tool_hooks_change_arguments_refuse_and_replace_results(tmp_path: Path) -> None:
    write, log = _file_tool(tmp_path)
    calls = (("c1", "write", {"text": "change me"}), ("c2", "write", {"text": "refuse me"}),
             ("c3", "write", {"text": "replace me"}))
    guard = ToolGuard()
    with LoopbackServer([Response(tool_body(*calls)), Response(text_body("done"))]) as server:
        events, result = _run(server, tools=[write], plugins=[guard, ToolRewrite()])
    assert result.outcome == "success"
    assert sorted(log.read_text().splitlines()) == ["changed", "replace me"]  # the refused call never ran
    results = {e.tool_call_id: e.content for e in events if e.type == "TOOL_CALL_RESULT"}
    assert results["c1"] == "written" and results["c3"] == "replaced"
    assert results["c2"] == "Error: refused by policy"
    assert threading.current_thread().name not in guard.threads  # on the threads that wait for the calls


class Steps:
    """Between steps: drops the tools for the second step and adds a message to what it sends."""

    def __init__(self) -> None:
        self.numbers: list[int] = []

    @hookimpl
    def hookstream_step_start(self, step: StepContext) -> None:
        self.numbers.append(step.number)
        if step.number == 2:
            step.tools = {}
            step.messages = [*step.messages, *step.messages[:0]]
            step.messages.append(step.messages[0].__class__.user("answer now"))


def test_a_step_hook_changes_the_history_and_tools_of_one_step(tmp_path: Path) -> None:
    write, _ = _file_tool(tmp_path)
    steps = Steps()
    with LoopbackServer([Response(tool_body(("c1", "write", {"text": "a"}))), Response(text_body("done"))]) as server:
        _, result = _run(server, tools=[write], plugins=[steps])
    assert steps.numbers == [1, 2]
    first, second = (r.json() for r in server.requests)
    assert "tools" in first and "tools" not in second
    assert second["messages"][-1] == {"role": "user", "content": "answer now"}
    assert all(m.text != "answer now" for m in result.messages)  # the run's own history is unchanged


class Tells:
    """Tells the consumer what it did to each step, with a CUSTOM event of its own."""

    @hookimpl
    def hookstream_step_start(self, step: StepContext) -> None:
        step.emit(Custom("test.step-seen", {"step": step.number, "messages": len(step.messages)}))


def test_a_step_hook_emits_events_right_after_step_started(tmp_path: Path) -> None:
    write, _ = _file_tool(tmp_path)
    with LoopbackServer([Response(tool_body(("c1", "write", {"text": "a"}))), Response(text_body("done"))]) as server:
        events, result = _run(server, tools=[write], plugins=[Tells()])
    told = [i for i, e in enumerate(events) if isinstance(e, Custom) and e.name == "test.step-seen"]
    assert [events[i].value for i in told] == [{"step": 1, "messages": 1}, {"step": 2, "messages": 3}]
    assert all(events[i - 1].type == "STEP_STARTED" for i in told)
    assert result.text == "done"


class Lifecycle:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        run.state["lifecycle"] = "started"
        self.seen.append(("start", run.run_id))

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: Any) -> None:
        self.seen.append(("end", (run.state["lifecycle"], result.outcome)))


def test_run_start_and_end_once_each_also_when_the_consumer_stops_early() -> None:
    plugin = Lifecycle()
    with LoopbackServer([Response(text_body("a", "b", "c"))]) as server:
        stream = chat(_model(server), "hi", plugins=[plugin], loop={"run_id": "run-x"})
        for ev in stream:
            if ev.type == "TEXT_MESSAGE_CONTENT":
                break
        stream.result()
    assert plugin.seen == [("start", "run-x"), ("end", ("started", "cancelled"))]


class Raises:
    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Any, Any]:
        yield
        raise RuntimeError("boom")


def test_a_plugin_that_raises_ends_the_run_with_plugin_error() -> None:
    with LoopbackServer([Response(text_body("x"))]) as server:
        events, result = _run(server, plugins=[Raises()])
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "plugin_error"
    assert "boom" in events[-1].message and result.outcome == "error"


class Misspelt:
    @hookimpl
    def hookstream_model_cal(self, call: Any) -> None: ...


def test_a_misspelt_hook_is_refused_when_the_run_is_made() -> None:
    with pytest.raises(PluginError, match="hookstream_model_cal"):
        chat(get_model(MODEL, base_url="http://127.0.0.1:9/v1", api_key="k"), "hi", plugins=[Misspelt()])


def test_an_unknown_run_plugin_name_is_refused() -> None:
    from hookstream.errors import UnknownPluginError

    with pytest.raises(UnknownPluginError, match="no-such-plugin"):
        chat(get_model(MODEL, base_url="http://127.0.0.1:9/v1", api_key="k"), "hi", plugins=["no-such-plugin"])


def test_settings_are_checked_at_construction() -> None:
    with pytest.raises(TypeError, match="max_tokens"):
        RunSettings(max_tokens="many")
    with pytest.raises(ValueError, match="max_steps"):
        RunSettings(max_steps=0)
    with pytest.raises(TypeError):
        RunSettings(no_such_field=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        chat("openai:gpt-4o-mini", "hi", no_such_field=1)


def test_two_runs_on_two_threads_keep_their_own_plugins() -> None:
    barrier = threading.Barrier(2, timeout=30)
    out: dict[str, str] = {}

    class Tag:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        @hookimpl(wrapper=True)
        def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Any, Any]:
            barrier.wait()  # both runs are inside their model-call hook at once
            events = yield
            return (TextMessageContent(e.message_id, self.tag + e.delta) if type(e) is TextMessageContent else e
                    for e in events)

    with LoopbackServer([Response(text_body("x")), Response(text_body("x"))]) as server:
        settings = RunSettings(max_steps=1)

        def worker(tag: str) -> None:
            out[tag] = chat(_model(server), "hi", settings=settings, plugins=[Tag(tag)]).result().text

        threads = [threading.Thread(target=worker, args=(t,)) for t in ("A", "B")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert out == {"A": "Ax", "B": "Bx"}


class RaisesMidStream:
    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Any, Any]:
        events = yield
        return self._boom(events)

    def _boom(self, events: Iterable[Any]) -> Iterator[Any]:
        for ev in events:
            yield ev
            if ev.type == "TEXT_MESSAGE_CONTENT":
                raise RuntimeError("boom mid-stream")


def test_a_plugin_iterator_that_raises_mid_stream_keeps_what_streamed() -> None:
    with LoopbackServer([Response(text_body("kept", " never"))]) as server:
        events, result = _run(server, plugins=[RaisesMidStream()])
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "plugin_error"
    assert "boom mid-stream" in events[-1].message
    assert result.text == "kept"


# -- prepare_step is a built-in run plugin on hookstream_step_start (issue 39) --------------------------------


class SeesTheStep:
    """Records what each step looks like when a plain hookstream_step_start runs."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, list[str], str | None]] = []

    @hookimpl
    def hookstream_step_start(self, step: StepContext) -> None:
        system = next((m.text for m in step.messages if m.role == "system"), None)
        self.seen.append((step.model, sorted(step.tools), system))


def test_prepare_step_runs_first_on_the_step_hook_and_plugins_see_what_it_changed() -> None:
    from hookstream import LoopSettings, StepSettings

    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: City name.
        """
        return city

    sees = SeesTheStep()
    loop = LoopSettings(prepare_step=lambda s: StepSettings(system="Be brief.", active_tools=[], model="gpt-4o"))
    with LoopbackServer([Response(text_body("ok"))]) as server:
        _, result = _run(server, tools=[lookup], plugins=[sees], loop=loop)
    assert result.outcome == "success"
    assert sees.seen == [("gpt-4o", [], "Be brief.")]
    sent = server.requests[0].json()
    assert sent["model"] == "gpt-4o" and "tools" not in sent
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}


def test_a_prepare_step_that_raises_ends_the_run_with_callback_error() -> None:
    from hookstream import LoopSettings

    def broken(step: Any) -> None:
        raise RuntimeError("no plan")

    with LoopbackServer([Response(text_body("never"))]) as server:
        events, result = _run(server, loop=LoopSettings(prepare_step=broken))
    assert not server.requests
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "callback_error"
    assert "prepare_step failed: RuntimeError: no plan" in events[-1].message and result.outcome == "error"


class StepEnds:
    def __init__(self) -> None:
        self.ended: list[tuple[int, str]] = []

    @hookimpl
    def hookstream_step_end(self, run: RunContext, result: Any) -> None:
        self.ended.append((result.number, result.finish_reason))


def test_step_end_is_called_once_per_step_after_its_tools_as_on_step_finish_is(tmp_path: Path) -> None:
    from hookstream import Callbacks

    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: City name.
        """
        return city

    finished: list[int] = []
    ends = StepEnds()
    responses = [Response(tool_body(("call_1", "lookup", {"city": "Paris"}))), Response(text_body("done"))]
    with LoopbackServer(responses) as server:
        _, result = _run(server, tools=[lookup], plugins=[ends],
                         callbacks=Callbacks(on_step_finish=lambda step: finished.append(step.number)))
    assert result.outcome == "success"
    assert ends.ended == [(1, "tool_calls"), (2, "stop")]
    assert finished == [1, 2]
