"""Intermediate iterations (stream_tool_call_responses True/False) and the memory store, over a real
loopback OpenAI server. The saved history keeps every assistant tool-call message paired with its tool
results either way (the spring-ai #6340 failure must not happen)."""

from __future__ import annotations

import pytest
from engine_kit import run, text_body, tool_body, types
from hookstream import Message, get_model
from hookstream.stores import InMemoryStore
from hookstream.testing import CapturedRequest, LoopbackServer, Response


def weather(city: str) -> str:
    return f"sunny in {city}"


def two_step() -> list[Response]:
    return [Response(tool_body(("c1", "weather", {"city": "Paris"}), text="Let me check.")),
            Response(tool_body(("c2", "weather", {"city": "Rome"}))),
            Response(text_body("Paris and ", "Rome are sunny."))]


def assert_paired(messages: list[Message]) -> None:
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            nxt = messages[i + 1]
            assert nxt.role == "tool", [x.role for x in messages]
            assert [r.tool_call_id for r in nxt.tool_results] == [c.id for c in m.tool_calls]


@pytest.mark.parametrize("stream_steps", [True, False])
def test_intermediate_steps_streamed_or_hidden_history_paired_either_way(stream_steps: bool) -> None:
    store = InMemoryStore()
    chunks: list[str] = []
    with LoopbackServer(two_step()) as srv:
        events, stream = run(srv.url, "weather?", tools=[weather], stream_tool_call_responses=stream_steps,
                             memory=store, thread_id="t1", on_chunk=lambda e: chunks.append(e.type))
    t = types(events)
    if stream_steps:
        assert t.count("STEP_STARTED") == 3 and t.count("TOOL_CALL_START") == 2 and t.count("TOOL_CALL_RESULT") == 2
    else:
        # Only the final answer: no tool-call step, no tool result, no "Let me check." text.
        assert t == ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                     "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]
    # on_chunk sees everything either way.
    assert chunks.count("TOOL_CALL_RESULT") == 2
    res = stream.result()
    assert res.text == "Paris and Rome are sunny."
    saved = store.load("t1")
    assert [m.role for m in saved] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert_paired(saved)
    assert_paired(res.messages)
    assert saved[1].text == "Let me check."
    # The next turn continues from the store.
    with LoopbackServer([Response(text_body("You asked about the weather."))]) as srv2:
        run(srv2.url, "what did I ask?", tools=[weather], memory=store, thread_id="t1")
    roles = [m["role"] for m in srv2.requests[0].json()["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user"]


def test_memory_saves_each_step_before_the_next_request_is_sent() -> None:
    store = InMemoryStore()
    seen: list[list[str]] = []

    def check(index: int, req: CapturedRequest) -> str | None:
        roles = [m.role for m in store.load("t2")]
        seen.append(roles)
        if index == 1 and roles != ["user", "assistant", "tool"]:
            return f"step 1 not saved before step 2's request: {roles}"
        if index == 2 and roles != ["user", "assistant", "tool", "assistant", "tool"]:
            return f"step 2 not saved before step 3's request: {roles}"
        return None

    with LoopbackServer(two_step(), check=check) as srv:
        events, _stream = run(srv.url, tools=[weather], memory=store, thread_id="t2")
    assert events[-1].type == "RUN_FINISHED", events[-1]
    assert seen[0] == []  # nothing saved before the first request
    assert [m.role for m in store.load("t2")][-1] == "assistant"


def test_an_interrupted_step_is_saved_with_its_pending_calls_and_resumed_once() -> None:
    from hookstream import chat, tool

    @tool(needs_approval=True)
    def rm(path: str) -> str:
        """Remove."""
        return "removed"

    store = InMemoryStore()
    with LoopbackServer([Response(tool_body(("c1", "rm", {"path": "x"})))]) as srv:
        _, stream = run(srv.url, tools=[rm], memory=store, thread_id="t3")
    # The pending call is stored with the thread (a restarted process resumes from the store alone).
    assert [m.role for m in store.load("t3")] == ["user", "assistant"]
    with LoopbackServer([Response(text_body("ok"))]) as srv2:
        s2 = chat(get_model("openai:gpt-4o-mini", base_url=srv2.url + "/v1", api_key="k"), tools=[rm], memory=store,
                  thread_id="t3", resume=stream.result().resume({"approval_c1": True}))
        list(s2)
    saved = store.load("t3")
    assert [m.role for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert_paired(saved)
