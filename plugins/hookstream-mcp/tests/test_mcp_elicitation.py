"""A server's question in the middle of a tool call (MCP elicitation): answered by a Python callback (with
the schema's defaults filled in, SEP-1034), declined, cancelled, or failing; inside a run the model gets
the tool's answer; with ``elicitation="run"`` the question streams in the run (on 2026-07-28 and on
handshake-era sessions) and is answered with ``answer_elicitation``, and a cancelled run declines it;
``hookstream chat --mcp`` asks on the terminal (a real pty) and declines, saying why, when stdin is not a
terminal. The server is elicit_server.py, on the MCP SDK's own server."""

from __future__ import annotations

import os
import pty
import queue
import selectors
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookstream import chat, get_model
from hookstream.events import BaseEvent, Custom, RunStarted
from hookstream.testing import LoopbackServer, Response, run_cli
from hookstream_mcp import (
    Elicitation,
    ElicitationAnswer,
    MCPServer,
    MCPToolError,
    answer_elicitation,
    in_run_elicitation,
)
from mcp_kit import MODEL, NEVER, text_body, tool_body, tool_messages

SERVER = [sys.executable, str(Path(__file__).with_name("elicit_server.py"))]
ASK = "Booking a table for Friday: how many guests?"


@pytest.fixture(scope="module")
def answers() -> list[Any]:
    """What the next questions are answered with (popped in order), shared by the module's server."""
    return []


@pytest.fixture(scope="module")
def asked() -> list[Elicitation]:
    return []


@pytest.fixture(scope="module")
def server(answers: list[Any], asked: list[Elicitation]) -> Iterator[MCPServer]:
    def answer(request: Elicitation) -> Any:
        asked.append(request)
        value = answers.pop(0)
        if isinstance(value, Exception):
            raise value
        return value

    with MCPServer.stdio(SERVER, elicitation=answer, name="booking") as srv:
        yield srv


def test_the_callback_gets_the_question_and_the_defaults_fill_the_rest(
        server: MCPServer, answers: list[Any], asked: list[Elicitation]) -> None:
    answers.append({"window": True})  # a dict accepts; "guests" is left to its default
    assert server.call("book_table", {"day": "Friday"}) == "booked for 2 on Friday, by the window"
    request = asked[-1]
    assert request.server == "booking" and request.mode == "form" and request.message == ASK
    assert set(request.fields) == {"guests", "window"} and request.required == ["window"]
    assert request.fields["guests"]["default"] == 2


@pytest.mark.parametrize("answer, said", [(ElicitationAnswer.decline(), "decline"), (None, "decline"),
                                          (ElicitationAnswer.cancel(), "cancel")])
def test_decline_and_cancel_reach_the_server(server: MCPServer, answers: list[Any], answer: Any, said: str) -> None:
    answers.append(answer)
    assert server.call("book_table", {"day": "Friday"}) == f"not booked: the user chose {said}"


def test_a_callback_that_raises_fails_the_tool_call(server: MCPServer, answers: list[Any]) -> None:
    answers.append(RuntimeError("no one at the keyboard"))
    with pytest.raises(MCPToolError, match="no one at the keyboard"):
        server.call("book_table", {"day": "Friday"})


def test_without_a_callback_the_server_is_told_the_client_cannot_answer() -> None:
    with MCPServer.stdio(SERVER) as srv, pytest.raises(MCPToolError, match="elicitation"):
        srv.call("book_table", {"day": "Friday"})


def test_in_a_run_the_model_gets_the_answered_tool_result(server: MCPServer, answers: list[Any]) -> None:
    answers.append(ElicitationAnswer.accept({"guests": 4, "window": False}))
    responses = [Response(tool_body(("c1", "book_table", {"day": "Friday"}))), Response(text_body("Booked."))]
    with LoopbackServer(responses) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=server.tools())
        list(stream)
    assert stream.result().text == "Booked."
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "booked for 4 on Friday, inside"


def scripted_model() -> LoopbackServer:
    return LoopbackServer([Response(tool_body(("c1", "book_table", {"day": "Friday"}))),
                           Response(text_body("Done."))])


def test_the_cli_declines_when_stdin_is_not_a_terminal() -> None:
    with scripted_model() as srv:
        res = run_cli(["chat", "Book Friday", "--model", MODEL, "--base-url", srv.url + "/v1",
                       "--mcp", " ".join(SERVER)], env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 0, res.output
    assert "declined: stdin is not a terminal" in res.output and ASK in res.output
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "not booked: the user chose decline"


def test_the_cli_asks_on_the_terminal() -> None:
    """``hookstream chat`` in a real pseudo-terminal: the question and each field are asked on it, the
    answers typed there reach the server (Enter takes the default)."""
    leader, follower = pty.openpty()
    with scripted_model() as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hookstream", "chat", "Book Friday", "--model", MODEL, "--base-url",
             srv.url + "/v1", "--no-log", "--mcp", " ".join(SERVER)],
            stdin=follower, stderr=follower, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"})
        os.close(follower)
        screen = ""
        with selectors.DefaultSelector() as sel:
            sel.register(leader, selectors.EVENT_READ)
            for prompt, typed in (("Answer? [Y/n/c]", "y"), ("How many people", ""), ("by the window", "yes")):
                while prompt not in screen:
                    assert sel.select(NEVER), f"no prompt {prompt!r}: {screen}"
                    screen += os.read(leader, 4096).decode()
                os.write(leader, typed.encode() + b"\n")
        out, _ = proc.communicate(timeout=NEVER)
        os.close(leader)
    assert proc.returncode == 0, screen
    assert f"MCP server {' '.join(SERVER)} asks: {ASK}" in screen
    assert "Done." in out
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "booked for 2 on Friday, by the window"


# -- in the run: elicitation="run" -----------------------------------------------------------------------

REQUESTED, RESPONDED = "mcp-elicitation-requested", "mcp-elicitation-responded"


@pytest.fixture(scope="module")
def in_run() -> Iterator[MCPServer]:
    with MCPServer.stdio(SERVER, elicitation="run", name="booking") as srv:
        yield srv


@pytest.fixture(scope="module")
def in_run_legacy() -> Iterator[MCPServer]:
    """The same server speaking only the pre-2026 handshake: its question is its own request, naming no
    tool call, so it goes to the server's single call in flight."""
    with MCPServer.stdio([*SERVER, "--legacy"], elicitation="run", name="booking") as srv:
        yield srv


def customs(events: list[BaseEvent]) -> list[tuple[str, Any]]:
    return [(ev.name, ev.value) for ev in events if isinstance(ev, Custom) and ev.name.startswith("mcp-")]


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_in_the_run_the_question_streams_and_the_answer_given_there_reaches_the_tool(
        request: pytest.FixtureRequest, era: str) -> None:
    booking: MCPServer = request.getfixturevalue("in_run" if era == "2026-07-28" else "in_run_legacy")
    events: list[BaseEvent] = []
    with scripted_model() as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=booking.tools())
        for ev in stream:
            events.append(ev)
            if isinstance(ev, Custom) and ev.name == REQUESTED:
                assert answer_elicitation(ev.value["elicitationId"], {"guests": 5, "window": True})
    (asked, asked_value), (said, said_value) = customs(events)
    assert (asked, said) == (REQUESTED, RESPONDED)
    assert asked_value["server"] == "booking" and asked_value["message"] == ASK and asked_value["mode"] == "form"
    assert asked_value["toolCallId"] == "c1" and set(asked_value["schema"]["properties"]) == {"guests", "window"}
    assert said_value == {"elicitationId": asked_value["elicitationId"], "toolCallId": "c1", "action": "accept"}
    # The question is streamed inside the tool call, before its result.
    names = [ev.name if isinstance(ev, Custom) else ev.type for ev in events]
    assert names.index(REQUESTED) < names.index(RESPONDED) < names.index("TOOL_CALL_RESULT")
    assert stream.result().text == "Done."
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "booked for 5 on Friday, by the window"
    # Answered once: a second answer finds nothing waiting.
    assert not answer_elicitation(asked_value["elicitationId"], None)


def test_an_answer_bound_to_another_run_or_thread_is_not_delivered(in_run: MCPServer) -> None:
    """Issue 38, finding 13: ``answer_elicitation(..., run_id=)`` answers only a question of that run (and
    ``thread_id=`` of that thread), so a route that checked the caller owns the run cannot be used to
    answer someone else's question by its id; the question still waits for its own run's answer."""
    with scripted_model() as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=in_run.tools(), thread_id="thread-owner")
        run_id = None
        refused: list[bool] = []
        for ev in stream:
            if isinstance(ev, RunStarted):
                run_id = ev.run_id
            if isinstance(ev, Custom) and ev.name == REQUESTED:
                asked = ev.value["elicitationId"]
                assert ev.value["runId"] == run_id is not None
                refused += [answer_elicitation(asked, {"guests": 9}, run_id="run-of-someone-else"),
                            answer_elicitation(asked, {"guests": 9}, run_id=run_id, thread_id="another-thread")]
                assert answer_elicitation(asked, {"guests": 3, "window": True}, run_id=run_id,
                                          thread_id="thread-owner")
    assert refused == [False, False]
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "booked for 3 on Friday, by the window"


def test_in_the_run_another_thread_may_answer_and_none_declines(in_run: MCPServer) -> None:
    asked: queue.SimpleQueue[str] = queue.SimpleQueue()

    def ui() -> None:  # a UI's thread: it sees the id (here through a queue) and answers
        answer_elicitation(asked.get(), None)

    answerer = threading.Thread(target=ui)
    answerer.start()
    with scripted_model() as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=in_run.tools())
        events = []
        for ev in stream:
            events.append(ev)
            if isinstance(ev, Custom) and ev.name == REQUESTED:
                asked.put(ev.value["elicitationId"])
    answerer.join()
    assert [name for name, _ in customs(events)] == [REQUESTED, RESPONDED]
    assert customs(events)[1][1]["action"] == "decline"
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "not booked: the user chose decline"


def test_cancelling_the_run_declines_the_unanswered_question(in_run: MCPServer) -> None:
    with scripted_model() as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=in_run.tools())
        asked = None
        events = []
        for ev in stream:
            events.append(ev)
            if isinstance(ev, Custom) and ev.name == REQUESTED:
                asked = ev.value["elicitationId"]
                stream.cancel()
    assert asked is not None
    assert stream.result().outcome == "cancelled"
    assert not answer_elicitation(asked, {"guests": 1})  # declined already: nothing waits
    assert len(srv.requests) == 1  # the model is not asked again
    # The server is still usable: the next call's question is asked (and, outside a run, declined).
    assert in_run.call("book_table", {"day": "Friday"}) == "not booked: the user chose decline"


def test_outside_a_run_the_fallback_answers(in_run_legacy: MCPServer) -> None:
    """A direct call has no run to ask in: ``in_run_elicitation(fallback)`` passes it to the fallback."""
    asked: list[Elicitation] = []

    def fallback(question: Elicitation) -> Any:
        asked.append(question)
        return {"window": True}

    with MCPServer.stdio(SERVER, elicitation=in_run_elicitation(fallback)) as srv:
        assert srv.call("book_table", {"day": "Friday"}) == "booked for 2 on Friday, by the window"
    assert [q.message for q in asked] == [ASK]
    # Without one, it is declined (here on the pre-2026 session).
    assert in_run_legacy.call("book_table", {"day": "Friday"}) == "not booked: the user chose decline"


def test_with_two_calls_in_flight_a_handshake_era_question_is_declined(
        in_run_legacy: MCPServer, caplog: pytest.LogCaptureFixture) -> None:
    """While the run's question waits for its answer, a second call of the same server asks too: on a
    handshake-era session nothing says which call asked, so that question is declined and logged."""
    with scripted_model() as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Book Friday",
                      tools=in_run_legacy.tools())
        for ev in stream:
            if isinstance(ev, Custom) and ev.name == REQUESTED:
                with caplog.at_level("WARNING", logger="hookstream_mcp"):
                    second = in_run_legacy.call("book_table", {"day": "Saturday"})
                assert answer_elicitation(ev.value["elicitationId"], {"window": False})
    assert second == "not booked: the user chose decline"
    assert "2 tool calls in flight" in caplog.text
    (msg,) = tool_messages(srv.requests[1])
    assert msg["content"] == "booked for 2 on Friday, inside"
