"""Steering a run in flight (``ChatStream.add_message``): a message queued from another thread while a
tool runs is in the next request, after the tool results; one queued before the final answer makes the
run continue with one more step; one the run cannot send any more is reported, never lost. Real loopback
HTTP through the real OpenAI adapter; the tool waits on events, so no timing is assumed."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from engine_kit import MODEL, body_messages, customs, text_body, tool_body, types
from hookstream import Callbacks, Message, chat, get_model
from hookstream.events import MessageAddedPayload
from hookstream.testing import LoopbackServer, Response, check_events, run_cli

NEVER = 60.0  # only keeps a broken test from hanging; nothing is timed


def stream_for(srv: LoopbackServer, **fields: Any) -> Any:
    return chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Look it up.", **fields)


def test_a_message_sent_during_a_tool_call_is_in_the_next_request() -> None:
    entered, release = threading.Event(), threading.Event()

    def lookup(key: str) -> str:
        """Look up a key."""
        entered.set()
        assert release.wait(NEVER)
        return f"value of {key}"

    responses = [Response(tool_body(("c1", "lookup", {"key": "a"}))), Response(text_body("Done, in French."))]
    events: list[Any] = []
    with LoopbackServer(responses) as srv:
        stream = stream_for(srv, tools=[lookup])
        runner = threading.Thread(target=lambda: events.extend(stream))
        runner.start()
        assert entered.wait(NEVER)
        assert stream.add_message("Answer in French, please.") is True  # from this thread, while the tool runs
        release.set()
        runner.join(NEVER)
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "success" and result.text == "Done, in French."
    # The second request: the tool result, then the steering message, then nothing else.
    sent = body_messages(srv.requests[1])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[-1]["content"] == "Answer in French, please."
    # The stored conversation holds it in the same place; the stream said so before step 2 started.
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert result.messages[3].text == "Answer in French, please."
    (added,) = customs(events, "message-added")
    assert added == {"messageId": result.messages[3].id, "role": "user", "content": "Answer in French, please."}
    i = types(events).index("CUSTOM")
    assert events[i + 1].type == "STEP_STARTED" and events[i + 1].step_name == "step-2"
    assert MessageAddedPayload.from_value(added).content == "Answer in French, please."
    assert result.unsent_messages == []


def test_a_message_queued_before_the_final_answer_ends_continues_the_run() -> None:
    streams: list[Any] = []

    def on_step_finish(step: Any) -> None:
        if step.number == 1:  # the model has answered without tools: the run would end here
            assert streams[0].add_message(Message.user("And in one word?")) is True

    responses = [Response(text_body("A long answer.")), Response(text_body("Short."))]
    with LoopbackServer(responses) as srv:
        stream = stream_for(srv, callbacks=Callbacks(on_step_finish=on_step_finish))
        streams.append(stream)
        events = list(stream)
    check_events(events, form="run")
    result = stream.result()
    assert len(srv.requests) == 2 and result.text == "Short."
    assert [(m["role"], m["content"]) for m in body_messages(srv.requests[1])] == [
        ("user", "Look it up."), ("assistant", "A long answer."), ("user", "And in one word?")]
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]


def test_a_message_queued_before_the_run_starts_goes_with_the_first_request() -> None:
    with LoopbackServer([Response(text_body("ok"))]) as srv:
        stream = stream_for(srv)
        assert stream.add_message("Be brief.")
        list(stream)
    assert [m["content"] for m in body_messages(srv.requests[0])] == ["Look it up.", "Be brief."]


def lookup(key: str) -> str:
    """Look up a key."""
    return f"value of {key}"


def test_a_message_the_run_cannot_send_is_unsent_and_after_the_end_refused() -> None:
    streams: list[Any] = []

    def on_step_finish(step: Any) -> None:
        assert streams[0].add_message("too late for max_steps") is True

    with LoopbackServer([Response(tool_body(("c1", "lookup", {"key": "a"})))]) as srv:
        stream = stream_for(srv, tools=[lookup], max_steps=1,
                            callbacks=Callbacks(on_step_finish=on_step_finish))
        streams.append(stream)
        list(stream)
    result = stream.result()
    assert result.stopped_by == "max_steps" and len(srv.requests) == 1
    assert [m.text for m in result.unsent_messages] == ["too late for max_steps"]
    assert all(m.text != "too late for max_steps" for m in result.messages)
    assert stream.add_message("after the end") is False


def test_only_user_messages_steer() -> None:
    stream = chat(MODEL, "hi")
    with pytest.raises(ValueError, match="user message"):
        stream.add_message(Message.system("no"))
    with pytest.raises(TypeError):
        stream.add_message(42)  # type: ignore[arg-type]


class Typing(io.RawIOBase):
    """A terminal's stdin: one line, typed once the model has been asked (``requested``); when read again,
    says so (``asked_again``: the line was handed to the run by then) and ends."""

    def __init__(self, line: bytes, requested: threading.Event, asked_again: threading.Event) -> None:
        self.line, self.requested, self.asked_again = line, requested, asked_again

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.line:
            self.asked_again.set()
            return 0
        assert self.requested.wait(NEVER)
        n = len(self.line)
        buffer[:n], self.line = self.line, b""
        return n


def test_chat_live_sends_lines_typed_during_the_run() -> None:
    requested, asked_again = threading.Event(), threading.Event()

    def hold_first_answer(index: int, _req: Any) -> None:
        if index == 0:  # the model answers only once the typed line was queued
            requested.set()
            assert asked_again.wait(NEVER)

    responses = [Response(text_body("First answer.")), Response(text_body("Zweite Antwort."))]
    with LoopbackServer(responses, check=hold_first_answer) as srv:
        out = run_cli(["chat", "Explain tides.", "--model", MODEL, "--base-url", srv.url + "/v1", "--no-log",
                       "--live"],
                      input=io.BufferedReader(Typing(b"Answer in German.\n", requested, asked_again)),  # type: ignore[arg-type]
                      env={"OPENAI_API_KEY": "sk-test"})
    assert out.exit_code == 0, out.output
    assert "[message sent] Answer in German." in out.output and out.output.rstrip().endswith("Zweite Antwort.")
    assert len(srv.requests) == 2
    assert body_messages(srv.requests[1])[-1] == {"role": "user", "content": "Answer in German."}


def test_chat_live_keeps_stdin_for_steering() -> None:
    out = run_cli(["chat", "hi", "--model", MODEL, "--live", "--approve"])
    assert out.exit_code == 2 and "--live" in out.output
    out = run_cli(["chat", "--model", MODEL, "--live"], input="not a prompt\n")
    assert out.exit_code == 2 and "prompt as an argument" in out.output
