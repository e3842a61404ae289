"""Agents and agents as tools, through the public API against real loopback servers: Agent.chat is chat()
with the agent's settings; an agent tool's run streams inside the parent's as AG-UI subagent events, as it
happens, with its own run id; its usage rolls up; cancelling the parent cancels it; the tool's output is the
agent's final text."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from engine_kit import MODEL, text_body, tool_body, usage
from hookstream import Agent, ToolContext, chat, get_model
from hookstream.errors import AgentToolError
from hookstream.testing import LoopbackServer, Response, check_events


def model_at(server: LoopbackServer) -> Any:
    return get_model(MODEL, base_url=server.url + "/v1", api_key="sk-test")


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"{key}=42"


def test_agent_chat_is_chat_with_the_agents_settings() -> None:
    with LoopbackServer([Response(text_body("hi there"))]) as srv:
        agent = Agent(model_at(srv), tools=[lookup], system="Be brief.", max_tokens=50, name="helper")
        result = agent.run("hello")
        sent = srv.requests[0].json()
    assert result.text == "hi there"
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [t["function"]["name"] for t in sent["tools"]] == ["lookup"]
    assert sent["max_tokens"] == 50 or sent.get("max_completion_tokens") == 50
    assert repr(agent) == "Agent('helper', model=" + repr(agent.model) + ", tools=['lookup'])"
    with pytest.raises(TypeError, match="tempreature"):
        Agent(MODEL, tempreature=0.2)


def test_parent_run_id_on_run_started() -> None:
    with LoopbackServer([Response(text_body("ok"))]) as srv:
        events = list(chat(model_at(srv), "hi", loop={"parent_run_id": "run_parent", "run_id": "run_child"}))
    assert events[0].type == "RUN_STARTED"
    assert (events[0].run_id, events[0].parent_run_id) == ("run_child", "run_parent")  # type: ignore[attr-defined]


def nested_run(parent: LoopbackServer, sub: LoopbackServer, **parent_kw: Any) -> tuple[list[Any], Any]:
    researcher = Agent(model_at(sub), tools=[lookup], system="You research.", name="researcher")
    tool = researcher.as_tool("research", "Research a question and answer it.")
    stream = chat(model_at(parent), "What is x?", tools=[tool], **parent_kw)
    events = list(stream)
    return events, stream


def test_an_agent_tool_streams_its_run_nested_in_the_parents() -> None:
    parent_bodies = [Response(tool_body(("call_p1", "research", {"prompt": "find x"}), u=usage(10, 5))),
                     Response(text_body("x is 42.", u=usage(20, 3)))]
    sub_bodies = [Response(tool_body(("call_s1", "lookup", {"key": "x"}), u=usage(7, 2))),
                  Response(text_body("Found: x=42.", u=usage(9, 4)))]
    with LoopbackServer(parent_bodies) as parent, LoopbackServer(sub_bodies) as sub:
        events, stream = nested_run(parent, sub)
        sub_first = sub.requests[0].json()
        parent_second = parent.requests[1].json()
    check_events(events, form="run")  # the parent's grammar and each nested run's
    result = stream.result()
    assert result.outcome == "success" and result.text == "x is 42."
    # the tool's input is the sub-agent's user message; its output the sub-agent's final text
    assert sub_first["messages"] == [{"role": "system", "content": "You research."},
                                     {"role": "user", "content": "find x"}]
    assert result.steps[0].tool_results[0].output == "Found: x=42."
    assert parent_second["messages"][-1]["content"] == "Found: x=42."
    # usage: the parent's two model calls plus the sub-agent's two
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10 + 20 + 7 + 9, 5 + 3 + 2 + 4)
    assert sum(s.usage.input_tokens or 0 for s in result.steps if s.usage) == 30

    kinds = [e.type for e in events]
    started = kinds.index("SUBAGENT_STARTED")
    finished = kinds.index("SUBAGENT_FINISHED")
    parent_result = next(i for i, e in enumerate(events)
                         if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == "call_p1")
    first_step_end = kinds.index("STEP_FINISHED")
    assert first_step_end < started < finished < parent_result
    sub_started = events[started]
    run_id = sub_started.subagent_run_id
    assert run_id.startswith("run_") and run_id != events[0].run_id
    assert (sub_started.name, sub_started.parent_tool_call_id) == ("research", "call_p1")
    assert sub_started.description == "Research a question and answer it."
    inner = events[started + 1:finished]
    assert inner and all(e.subagent_run_id == run_id for e in inner)
    assert [e.type for e in inner].count("STEP_STARTED") == 2
    assert any(e.type == "TOOL_CALL_RESULT" and e.content == "x=42" for e in inner)
    assert "".join(e.delta for e in inner if e.type == "TEXT_MESSAGE_CONTENT") == "Found: x=42."
    end = events[finished]
    assert end.result == "Found: x=42." and end.outcome == {"type": "success"}
    # nothing of the sub-agent's run leaks into the parent's own conversation
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert [e.type for e in events].count("RUN_STARTED") == 1


def test_nested_events_reach_the_consumer_while_the_tool_runs() -> None:
    seen_nested_call = threading.Event()
    order: list[str] = []

    def slow_lookup(key: str) -> str:
        """Look up, once the consumer has seen the call.

        Args:
            key: what to look up.
        """
        assert seen_nested_call.wait(30), "the nested TOOL_CALL_START did not reach the consumer first"
        order.append("tool ran")
        return f"{key}=1"

    researcher = Agent(None, tools=[slow_lookup])  # type: ignore[arg-type]
    with LoopbackServer([Response(tool_body(("call_p1", "research", {"prompt": "go"}))),
                         Response(text_body("done"))]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "slow_lookup", {"key": "k"}))),
                            Response(text_body("k=1"))]) as sub:
        researcher.model = model_at(sub)
        stream = chat(model_at(parent), "go", tools=[researcher.as_tool("research", "Research.")])
        for ev in stream:
            if ev.type == "TOOL_CALL_END" and getattr(ev, "subagent_run_id", None):
                order.append("consumer saw the nested call")
                seen_nested_call.set()
    assert order == ["consumer saw the nested call", "tool ran"]
    assert stream.result().text == "done"


def test_cancelling_the_parent_cancels_the_agent_run() -> None:
    tool_started = threading.Event()
    stopped_by: list[str | None] = []

    def wait_forever(ctx: ToolContext[Any]) -> str:
        """Wait until cancelled."""
        tool_started.set()
        ctx.cancellation.wait(30)
        stopped_by.append(ctx.cancellation.reason)
        return "stopped"

    researcher = Agent(None, tools=[wait_forever])  # type: ignore[arg-type]
    with LoopbackServer([Response(tool_body(("call_p1", "research", {"prompt": "go"})))]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "wait_forever", {})))]) as sub:
        researcher.model = model_at(sub)
        stream = chat(model_at(parent), "go", tools=[researcher.as_tool("research", "Research.")])
        events: list[Any] = []
        for ev in stream:
            events.append(ev)
            if ev.type == "TOOL_CALL_END" and getattr(ev, "subagent_run_id", None):
                assert tool_started.wait(30)
                stream.cancel()
    check_events(events, form="run")  # the parent's grammar and each nested run's
    assert events[-1].type == "RUN_FINISHED" and events[-1].outcome.type == "cancelled"
    error = next(e for e in events if e.type == "SUBAGENT_ERROR")
    assert error.code == "cancelled"
    assert stopped_by == ["cancelled"]  # the sub-agent's own tool saw the cancellation
    assert stream.result().outcome == "cancelled"


def test_a_failing_agent_run_is_an_error_result_for_the_parent() -> None:
    bad = Response(b'{"error": {"message": "no such model", "type": "invalid_request_error"}}', status=404,
                   content_type="application/json")
    with LoopbackServer([Response(tool_body(("call_p1", "research", {"prompt": "go"}))),
                         Response(text_body("could not research"))]) as parent, LoopbackServer([bad]) as sub:
        events, stream = nested_run(parent, sub)
    check_events(events, form="run")  # the parent's grammar and each nested run's
    error = next(e for e in events if e.type == "SUBAGENT_ERROR")
    assert error.code == "not_found" or error.code
    (res,) = stream.result().steps[0].tool_results
    assert res.is_error and res.output.startswith("Error: AgentToolError: agent 'research' failed")
    assert stream.result().text == "could not research"
    assert AgentToolError.__name__ in res.output


def test_an_agent_tool_shares_the_parents_context() -> None:
    got: list[Any] = []

    def whoami(ctx: ToolContext[dict[str, str]]) -> str:
        """Who is asking."""
        got.append(ctx.deps)
        return ctx.deps["user"]

    app = {"user": "alice"}
    with LoopbackServer([Response(tool_body(("call_p1", "ask", {"input": "who?"}))),
                         Response(text_body("alice"))]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "whoami", {}))), Response(text_body("alice"))]) as sub:
        agent = Agent(model_at(sub), tools=[whoami])
        result = chat(model_at(parent), "who?", tools=[agent.as_tool("ask", "Ask.", parameter="input")],
                      context=app).result()
        assert parent.requests[0].json()["tools"][0]["function"]["parameters"]["required"] == ["input"]
    assert got == [app] and got[0] is app and result.text == "alice"
