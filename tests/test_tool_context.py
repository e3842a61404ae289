"""App context for tools: ``chat(..., context=obj)`` reaches a tool's ``ToolContext[T]`` parameter as ``.deps``
on the thread, sequential and process executors; never in the tool's JSON schema; a context that does not
pickle gives a process call a clear error result (the run goes on)."""

from __future__ import annotations

import os
import threading
from typing import Any

import executor_tools
import pytest
from engine_kit import run, text_body, tool_body
from executor_tools import AppContext
from hookstream import ToolContext, tool
from hookstream.testing import LoopbackServer, Response


class Db:
    """An application object that is not pickled: a lock, like a connection pool."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows = {"alice": "admin", "bob": "viewer"}


def test_the_context_never_enters_the_schema() -> None:
    @tool
    def role(name: str, ctx: ToolContext[Db]) -> str:
        """A user's role.

        Args:
            name: the user.
        """
        return ctx.deps.rows[name]

    assert role.context_param == "ctx"
    assert role.parameters == {"type": "object", "properties": {"name": {"type": "string", "description": "the user."}},
                               "required": ["name"], "additionalProperties": False}

    @tool
    def optional(ctx: ToolContext[Db] | None = None) -> str:
        """Optional context."""
        return "ok"

    assert optional.context_param == "ctx" and optional.parameters["properties"] == {}


@pytest.mark.parametrize("executor", ["thread", "sequential", ("bounded", 2)])
def test_in_process_executors_pass_the_same_object(executor: Any) -> None:
    db = Db()
    seen: list[tuple[str, Any]] = []
    both = threading.Barrier(2) if executor != "sequential" else None

    def role(name: str, ctx: ToolContext[Db]) -> str:
        """A user's role.

        Args:
            name: the user.
        """
        if both is not None:
            both.wait(timeout=30)  # the two calls of the step run at once and share the object
        seen.append((ctx.tool_call_id, ctx.deps))
        return ctx.deps.rows[name]

    def plain(name: str) -> str:
        """No context here."""
        return name

    with LoopbackServer([Response(tool_body(("c1", "role", {"name": "alice"}), ("c2", "role", {"name": "bob"}))),
                         Response(text_body("done"))]) as srv:
        _, stream = run(srv.url, tools=[role, plain], executor=executor, context=db)
        sent_tools = srv.requests[0].json()["tools"]
    result = stream.result()
    assert [r.output for r in result.steps[0].tool_results] == ["admin", "viewer"]
    assert sorted(c for c, _ in seen) == ["c1", "c2"] and all(d is db for _, d in seen)
    role_schema = next(t["function"]["parameters"] for t in sent_tools if t["function"]["name"] == "role")
    assert "ctx" not in role_schema["properties"]


def test_without_a_context_deps_is_none() -> None:
    got: list[Any] = []

    def probe(ctx: ToolContext[Any]) -> str:
        """Probe."""
        got.append(ctx.deps)
        return "ok"

    with LoopbackServer([Response(tool_body(("c1", "probe", {}))), Response(text_body("done"))]) as srv:
        run(srv.url, tools=[probe])
    assert got == [None]


def test_the_process_executor_sends_a_pickled_copy() -> None:
    app = AppContext("alice")
    with LoopbackServer([Response(tool_body(("c1", "whoami", {"greeting": "hello"}))),
                         Response(text_body("done"))]) as srv:
        _, stream = run(srv.url, tools=[executor_tools.whoami], executor="process", context=app)
    (result,) = stream.result().steps[0].tool_results
    assert not result.is_error, result.output
    assert result.output["text"] == "hello, alice" and result.output["call"] == "c1"
    assert result.output["pid"] != os.getpid()


def test_a_context_that_does_not_pickle_is_a_clear_error_result() -> None:
    db = Db()  # holds a lock
    with LoopbackServer([Response(tool_body(("c1", "whoami", {"greeting": "hi"}), ("c2", "where", {"label": "x"}))),
                         Response(text_body("done"))]) as srv:
        _, stream = run(srv.url, tools=[executor_tools.whoami, executor_tools.where], executor="process", context=db)
    result = stream.result()
    assert result.outcome == "success" and result.text == "done"
    failed, other = result.steps[0].tool_results
    assert failed.is_error
    assert failed.output.startswith("Error: 'whoami' cannot run in another process: its context "
                                    "(chat(context=...), a Db) cannot be pickled: TypeError:"), failed.output
    # a tool that takes no ToolContext is not sent the context, so it runs
    assert not other.is_error and other.output["label"] == "x"


def test_a_tool_call_hook_sees_what_its_tool_streams_and_can_stream_in_its_place() -> None:
    """``ToolCallContext.on_stream`` gets each event and usage the run took from the tool, in order;
    ``ToolCallContext.emit`` streams in the tool's place (a plugin answering from a journal)."""
    from hookstream import ToolResultPart
    from hookstream.events import Custom, Usage
    from hookstream.plugin import ToolCallContext, hookimpl

    tapped: list[Any] = []

    def work(step: str, ctx: ToolContext[Any]) -> str:
        """Work and tell how it goes.

        Args:
            step: what to do.
        """
        ctx.emit(Custom("progress", {"step": step}))
        ctx.add_usage(Usage(1, 2, 3))
        return "worked"

    class Journal:
        @hookimpl(tryfirst=True)
        def hookstream_tool_call(self, call: ToolCallContext) -> ToolResultPart | None:
            if call.call_id == "c2":  # answered in the tool's place, its progress streamed again
                assert call.emit(Custom("progress", {"step": "replayed"}))
                return ToolResultPart(call.call_id, call.name, "from the journal")
            call.on_stream.append(tapped.append)
            return None

    with LoopbackServer([Response(tool_body(("c1", "work", {"step": "one"}))),
                         Response(tool_body(("c2", "work", {"step": "two"}))), Response(text_body("done"))]) as srv:
        events, stream = run(srv.url, tools=[work], plugins=[Journal()])
    assert tapped == [Custom("progress", {"step": "one"}), Usage(1, 2, 3)]
    progress = [e.value["step"] for e in events if e.type == "CUSTOM" and e.name == "progress"]
    assert progress == ["one", "replayed"]
    assert [r.output for s in stream.result().steps for r in s.tool_results] == ["worked", "from the journal"]


def test_a_tapped_channel_is_a_view_that_holds_no_queue_of_its_own() -> None:
    """The per-call view ``on_stream`` puts over the run's channel passes items through to it and keeps
    no queue of its own (one was built for every tapped call, and never used)."""
    import gc
    import queue

    from hookstream._agentloop.tools import ToolChannel
    from hookstream.events import Custom, Usage

    def queues(obj: object) -> list[object]:
        return [o for o in gc.get_referents(obj) if isinstance(o, queue.SimpleQueue)]

    channel = ToolChannel("run", "thread")
    seen: list[Any] = []
    view = channel.tapped([seen.append])
    assert queues(channel) and not queues(view)
    assert (view.run_id, view.thread_id) == ("run", "thread")
    assert view.emit(Custom("progress", {})) and view.add_usage(Usage(1, 2, 3))
    view.put_marker("done")
    assert [channel.get(timeout=0), channel.get(timeout=0), view.get(timeout=0)] == [
        Custom("progress", {}), Usage(1, 2, 3), "done"]
    assert seen == [Custom("progress", {}), Usage(1, 2, 3)]
    view.close()
    assert not channel.emit(Custom("late", {})) and not view.emit(Custom("late", {})) and seen[-1] == Usage(1, 2, 3)
