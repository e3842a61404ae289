"""The ``agui:`` provider (hookstream as an AG-UI client) against real servers: a loopback server playing
AG-UI event streams other agents send, and a real ``hookstream serve --demo`` process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hookstream import Message, chat, get_model
from hookstream.server import messages_from_agui
from hookstream.testing import Response, check_events
from serve_kit import serve_demo_process

DEMO_ANSWER = ("In **Paris** it is 18 °C and partly cloudy, with a light breeze from the west.\n\n"
               "**250 EUR** is about **40,575 JPY** at the demo rate of 162.30 yen per euro.")


def sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# -- the model string ----------------------------------------------------------------------------------

def test_the_model_is_the_url_and_base_url_does_not_break_it():
    p = get_model("agui:http://127.0.0.1:8000/agent")
    assert p.model == "http://127.0.0.1:8000/agent" and p.url == "http://127.0.0.1:8000/agent"
    assert get_model("agui:http://h/a", base_url="http://other").url == "http://h/a"
    assert get_model("agui:/agent", base_url="http://h/").url == "http://h/agent"
    with pytest.raises(ValueError, match="agent's URL"):
        get_model("agui:not-a-url")


# -- requests and event mapping on a loopback server ------------------------------------------------

def test_text_reasoning_usage_and_the_run_agent_input(hookstream_server):
    body = sse(START,
               {"type": "REASONING_START", "messageId": "r1"},
               {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "thinking"},
               {"type": "REASONING_END", "messageId": "r1"},
               {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
               {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi "},
               {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "there"},
               {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
               {**DONE, "usage": [{"inputTokens": 3, "outputTokens": 2}]})
    server = hookstream_server([Response(body, fragment=(1, 7))])
    stream = chat(get_model(f"agui:{server.url}/agent", api_key="tok", state={"n": 1}), "hello", system="be brief",
                  tools=[add], options={"forwardedProps": {"x": 1}})
    check_events(list(stream), form="run")
    result = stream.result()
    assert (result.text, result.reasoning) == ("Hi there", "thinking")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 2)
    req = server.requests[0]
    assert req.path == "/agent"
    assert req.headers["Accept"] == "text/event-stream" and req.headers["Authorization"] == "Bearer tok"
    doc = req.json()
    assert doc["threadId"] and doc["runId"] and doc["state"] == {"n": 1} and doc["forwardedProps"] == {"x": 1}
    assert [(m["role"], m["content"]) for m in doc["messages"]] == [("system", "be brief"), ("user", "hello")]
    assert all(m["id"] for m in doc["messages"])
    assert doc["tools"] == [{"name": "add", "description": "Add two integers.",
                             "parameters": doc["tools"][0]["parameters"]}]
    assert doc["tools"][0]["parameters"]["properties"].keys() == {"a", "b"}


def test_a_frontend_tool_runs_locally_and_its_result_is_posted_back(hookstream_server):
    call = sse(START,
               {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "add", "parentMessageId": "a1"},
               {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a": 2,'},
               {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": ' "b": 3}'},
               {"type": "TOOL_CALL_END", "toolCallId": "c1"}, DONE)
    answer = sse(START, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "role": "assistant", "delta": "It is 5."},
                 DONE)
    server = hookstream_server([Response(call), Response(answer)])
    stream = chat(f"agui:{server.url}/", "2+3?", tools=[add])
    check_events(list(stream), form="run")
    result = stream.result()
    assert result.text == "It is 5." and result.steps[0].finish_reason == "tool_calls"
    second = server.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["id"] == "a1"  # the agent's own message id comes back
    assert second[1]["toolCalls"] == [{"id": "c1", "type": "function",
                                       "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]
    assert second[2]["toolCallId"] == "c1" and second[2]["content"] == "5"
    # The conversion mirrors the server's reader.
    back = messages_from_agui(second)
    assert back[1].tool_calls[0].arguments == {"a": 2, "b": 3} and back[2].tool_results[0].output == "5"


def test_server_side_tools_are_surfaced_not_run_and_kept_for_history(hookstream_server):
    ran: list[int] = []

    def search(q: str) -> str:
        """A local tool the agent must not trigger through its own server tool."""
        ran.append(1)
        return "local"

    first = sse(START,
                {"type": "TOOL_CALL_CHUNK", "toolCallId": "s1", "toolCallName": "web_search", "delta": '{"q": '},
                {"type": "TOOL_CALL_CHUNK", "delta": '"x"}'},
                {"type": "TOOL_CALL_RESULT", "messageId": "res1", "toolCallId": "s1", "content": "found",
                 "role": "tool"},
                {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Found it."},
                {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, DONE)
    server = hookstream_server([Response(first), Response(sse(START, DONE))])
    stream = chat(f"agui:{server.url}/", "search", tools=[search])
    events = check_events(list(stream), form="run")
    result = stream.result()
    assert result.text == "Found it." and result.tool_calls == [] and not ran
    customs = {e.name: e.value for e in events if e.type == "CUSTOM"}
    assert customs["agui-server-tool-call"] == {"toolCallId": "s1", "toolName": "web_search",
                                                "arguments": '{"q": "x"}', "input": {"q": "x"}}
    assert customs["agui-server-tool-result"]["content"] == "found"
    # The next turn sends the exchange back in place, before the answer.
    chat(f"agui:{server.url}/", [*result.messages, Message.user("more")]).result()
    msgs = server.requests[1].json()["messages"]
    assert [(m["role"], m["id"]) for m in msgs[1:4]] == [("assistant", msgs[1]["id"]), ("tool", "res1"),
                                                         ("assistant", "m1")]
    assert msgs[1]["toolCalls"][0]["function"] == {"name": "web_search", "arguments": '{"q": "x"}'}
    assert msgs[3]["content"] == "Found it."


def test_unknown_and_unmapped_events_become_raw_never_a_crash(hookstream_server):
    body = sse(START,
               {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
               {"type": "MESSAGES_SNAPSHOT", "messages": []},
               {"type": "SOMETHING_NEW_IN_2027", "x": 1},
               {"type": "CUSTOM", "name": "approval-requested", "value": {}},
               {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ok"}, DONE)
    server = hookstream_server([Response(body)])
    stream = chat(f"agui:{server.url}/", "hi", loop={"include_raw": True})
    events = check_events(list(stream), form="run")
    raws = [e.event["type"] for e in events if e.type == "RAW"]
    assert raws == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "SOMETHING_NEW_IN_2027", "CUSTOM"]
    assert stream.result().text == "ok" and stream.result().steps[0].unknown_events == 4


def test_a_remote_run_error_is_a_run_error_with_its_code(hookstream_server):
    body = sse(START, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "partial"},
               {"type": "RUN_ERROR", "message": "agent blew up", "code": "agent_failed"})
    server = hookstream_server([Response(body)])
    stream = chat(f"agui:{server.url}/", "hi")
    events = check_events(list(stream), form="run")
    assert (events[-1].type, events[-1].code, events[-1].message) == ("RUN_ERROR", "agent_failed", "agent blew up")
    assert stream.result().text == "partial"


def test_a_stream_cut_before_run_finished_is_connection_closed(hookstream_server):
    server = hookstream_server([Response(sse(START, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                                     "delta": "par"}))])
    events = check_events(list(chat(f"agui:{server.url}/", "hi")), form="run")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "connection_closed"


# -- a real `hookstream serve --demo` ----------------------------------------------------------------

def test_the_demo_server_interrupt_is_surfaced_and_resumed_to_the_demo_answer():
    with serve_demo_process("--delay", "0") as url:
        first = chat(f"agui:{url}", "What's the weather in Paris?", thread_id="t-weather")
        events = check_events(list(first), form="run")
        interrupt = next(e.value for e in events if e.type == "CUSTOM" and e.name == "agui-interrupt")
        # The demo server keeps no store: it signs the approval it hands out (issue 31), in its thread.
        signed = interrupt["interrupts"][0]["id"]
        assert signed.startswith("approval_call_hsdemo_currency02.")
        calls = [e.value["toolName"] for e in events if e.type == "CUSTOM" and e.name == "agui-server-tool-call"]
        assert calls == ["get_weather", "convert_currency"]
        resume = [{"interruptId": signed, "status": "resolved", "payload": {"approved": True}}]
        second = chat(f"agui:{url}", first.result().messages, options={"resume": resume}, thread_id="t-weather")
        check_events(list(second), form="run")
        assert second.result().text == DEMO_ANSWER


def test_a_remote_interrupt_is_a_hookstream_interrupt_resumed_with_result_resume():
    with serve_demo_process("--delay", "0") as url:
        first = chat(f"agui:{url}", "What's the weather in Paris?", thread_id="t-paris")
        events = check_events(list(first), form="run")
        result = first.result()
        assert result.outcome == "interrupt" and events[-1].outcome.type == "interrupt"
        [pending] = result.pending_approvals
        # signed by the stateless demo server for this thread (issue 31): resumed in the same thread
        assert pending.approval_id.startswith("approval_call_hsdemo_currency02.")
        assert [i.id for i in events[-1].outcome.interrupts] == [pending.approval_id]
        assert (pending.call.id, pending.call.name) == ("call_hsdemo_currency02", "convert_currency")
        assert pending.call.arguments == {"amount": 250, "from_currency": "EUR", "to_currency": "JPY"}
        second = chat(f"agui:{url}", result.messages, resume=result.resume({pending.approval_id: True}),
                      thread_id="t-paris")
        check_events(list(second), form="run")
        assert second.result().outcome == "success" and second.result().text == DEMO_ANSWER


def test_cli_chat_approve_answers_the_remote_interrupt_and_gives_the_demo_answer():
    with serve_demo_process("--delay", "0") as url:
        done = subprocess.run([sys.executable, "-m", "hookstream", "chat", "What's the weather in Paris?",
                               "--model", f"agui:{url}", "--approve"], input="y\n", capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Run tool convert_currency(" in done.stderr
    assert done.stdout.strip() == DEMO_ANSWER


def test_approve_answers_a_remote_interrupt_with_resume_entries_on_the_runs_thread(hookstream_server):
    asked = sse(START,
                {"type": "TOOL_CALL_START", "toolCallId": "s1", "toolCallName": "pay", "parentMessageId": "a1"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": "s1", "delta": '{"eur": 5}'},
                {"type": "TOOL_CALL_END", "toolCallId": "s1"},
                {**DONE, "outcome": {"type": "interrupt", "interrupts": [
                    {"id": "i1", "reason": "tool_approval", "toolCallId": "s1"}]}})
    answer = sse(START, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "role": "assistant", "delta": "Not paid."},
                 DONE)
    server = hookstream_server([Response(asked), Response(answer)])
    seen: list[tuple[str, object]] = []
    stream = chat(f"agui:{server.url}/", "pay 5", thread_id="thread-x",
                  approve=lambda call: seen.append((call.name, call.arguments)) is not None)
    check_events(list(stream), form="run")
    assert stream.result().outcome == "success" and stream.result().text == "Not paid."
    assert seen == [("pay", {"eur": 5})]
    first, second = (r.json() for r in server.requests)
    assert first["threadId"] == second["threadId"] == "thread-x" and "resume" not in first
    assert second["resume"] == [{"interruptId": "i1", "status": "resolved", "payload": {"approved": False}}]
    assert second["messages"][1]["toolCalls"][0]["id"] == "s1"  # the agent's call goes back in place


# The demo app without the approval step, served by waitress as `hookstream serve` does, so that one
# `hookstream chat --model agui:URL` command without --approve gets the whole answer.
_NO_APPROVAL_APP = """
import sys
from waitress.server import create_server
from hookstream.server import make_app
from hookstream.testing import demo_factory
server = create_server(make_app(stream_factory=demo_factory(delay=0, approval=False)), host="127.0.0.1", port=0)
print(f"listening on http://127.0.0.1:{server.effective_port}/", flush=True)
server.run()
"""


def test_cli_chat_against_the_demo_app_gives_the_demo_answer():
    proc = subprocess.Popen([sys.executable, "-c", _NO_APPROVAL_APP], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        url = line.rsplit(" ", 1)[-1].strip()
        done = subprocess.run([sys.executable, "-m", "hookstream", "chat", "What's the weather in Paris?",
                               "--model", f"agui:{url}"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == DEMO_ANSWER
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


def test_cli_chat_against_hookstream_serve_demo_shows_the_remote_interrupt():
    # The remote run waits for an approval nothing here can give (no terminal, no --approve): the CLI says
    # so on stderr and exits 3 (issue 32: it used to print nothing and exit 0), and final-json carries it.
    with serve_demo_process("--delay", "0") as url:
        base = [sys.executable, "-m", "hookstream", "chat", "What's the weather in Paris?", "--model", f"agui:{url}"]
        done = subprocess.run([*base, "--output", "events"], capture_output=True, text=True, timeout=60)
        final = subprocess.run([*base, "--output", "final-json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(e["type"] == "CUSTOM" and e["name"] == "agui-interrupt" for e in events)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "waiting for approval of " in done.stderr and "resume with --approve" in done.stderr
    assert final.returncode == 3, final.stderr
    doc = json.loads(final.stdout)
    assert doc["outcome"] == "interrupt" and doc["interrupts"]
    assert all(i["kind"] == "approval" and i["name"] and i["id"] for i in doc["interrupts"])
