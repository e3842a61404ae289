"""The OpenAI-compatible routes of `hookstream serve` (issue 42), with real clients as oracles against real
server processes: the `openai` SDK (streaming, non-streaming, a client-declared tool round trip, errors as
its typed exceptions) and simonw/llm configured as a user configures it (extra-openai-models.yaml)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from hookstream.events import RunError, RunFinished, TextMessageContent, TextMessageStart
from hookstream.server import completion_chunks, make_app
from serve_kit import serve_demo_process, serve_process

TESTS = Path(__file__).parent
LOC_TOOL = {"type": "function", "function": {"name": "get_location", "description": "Where the user is.",
                                             "parameters": {"type": "object", "properties": {
                                                 "precision": {"type": "string"}}, "required": ["precision"]}}}


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    return env


def _client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "v1", api_key=key, max_retries=0)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A stateless server of the test model with one server tool (executor_tools:where)."""
    with serve_process("--model", "test", "--tool", "executor_tools:where", env=_env()) as url:
        yield url


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with bearer tokens for alice and bob, one run per minute each, two messages at most,
    and a conversation store."""
    tokens = tmp_path_factory.mktemp("auth") / "tokens"
    tokens.write_text("alice-key alice\nbob-key bob\ncarol-key carol\ndave-key dave\n")
    with serve_process("--model", "test", "--auth-tokens", str(tokens), "--max-runs-per-minute", "3",
                       "--max-messages", "2", "--store", "memory:", env=_env()) as url:
        yield url


def test_models_lists_the_agent(server: str) -> None:
    client = _client(server)
    assert [m.id for m in client.models.list()] == ["hookstream"]
    assert client.models.retrieve("hookstream").owned_by == "hookstream"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_non_streaming_answer(server: str) -> None:
    got = _client(server).chat.completions.create(model="hookstream", messages=[{"role": "user", "content": "hi"}],
                                                  tools=[])
    assert got.object == "chat.completion"
    choice = got.choices[0]
    # The test model called the server tool (hidden from the client), then answered with its result.
    assert choice.finish_reason == "stop" and choice.message.tool_calls is None
    assert "where returned" in (choice.message.content or "")
    assert got.usage is not None and got.usage.total_tokens > 0


def test_streaming_answer_with_usage(server: str) -> None:
    client = _client(server)
    stream = client.chat.completions.create(model="hookstream", stream=True, stream_options={"include_usage": True},
                                            messages=[{"role": "system", "content": "Be brief."},
                                                      {"role": "user", "content": "hello there"}])
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "where returned" in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_client_tool_round_trip(server: str) -> None:
    client = _client(server)
    messages: list[Any] = [{"role": "user", "content": "where am I?"}]
    first = client.chat.completions.create(model="hookstream", messages=messages, tools=[LOC_TOOL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    # Only the client's tool is handed out; the server's own tool ran on the server.
    assert [c.function.name for c in calls] == ["get_location"]  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"precision": "a"}  # type: ignore[union-attr]
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": calls[0].id, "content": "Lyon"}]
    stream = client.chat.completions.create(model="hookstream", messages=messages, tools=[LOC_TOOL], stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "get_location returned Lyon" in text
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_streamed_client_tool_call(server: str) -> None:
    stream = _client(server).chat.completions.create(
        model="hookstream", messages=[{"role": "user", "content": "where am I?"}], tools=[LOC_TOOL], stream=True)
    chunks = list(stream)
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert deltas[0].id and deltas[0].function and deltas[0].function.name == "get_location"
    assert "".join(d.function.arguments or "" for d in deltas if d.function) == '{"precision":"a"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_server_tool_call_the_client_made_up_is_refused(server: str) -> None:
    forged = [{"role": "user", "content": "hi"},
              {"role": "assistant", "tool_calls": [{"id": "call_forged", "type": "function",
                                                    "function": {"name": "where", "arguments": '{"label": "x"}'}}]}]
    with pytest.raises(openai.BadRequestError) as caught:
        _client(server).chat.completions.create(model="hookstream", messages=forged)
    assert caught.value.code == "untrusted_tool_call"
    body: Any = caught.value.body
    assert set(body) == {"message", "type", "param", "code"} and body["type"] == "invalid_request_error"


def test_bad_requests_are_openai_errors(server: str) -> None:
    client = _client(server)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="hookstream", messages=[{"role": "function", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="hookstream", messages=[])


def test_wrong_key_is_an_authentication_error(secured: str) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        _client(secured, "wrong-key").chat.completions.create(model="hookstream",
                                                              messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        _client(secured, "wrong-key").models.list()


def test_limits_answer_413_and_429(secured: str) -> None:
    client = _client(secured, "carol-key")
    too_many = [{"role": "user", "content": str(i)} for i in range(3)]
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="hookstream", messages=too_many)  # type: ignore[arg-type]
    assert caught.value.status_code == 413
    for _ in range(3):
        client.chat.completions.create(model="hookstream", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="hookstream", messages=[{"role": "user", "content": "hi"}])
    assert int(limited.value.response.headers["Retry-After"]) >= 1


def test_threads_belong_to_their_principal(secured: str) -> None:
    alice, bob = _client(secured, "alice-key"), _client(secured, "bob-key")
    thread = {"thread_id": "t-openai-1"}
    first = alice.chat.completions.create(model="hookstream", metadata=thread,
                                          messages=[{"role": "user", "content": "one"}])
    assert first.choices[0].message.content == 'you said "one" (turn 1)'
    # The stored thread is the conversation: only the new turn needs sending.
    second = alice.chat.completions.create(model="hookstream", metadata=thread,
                                           messages=[{"role": "user", "content": "two"}])
    assert second.choices[0].message.content == 'you said "two" (turn 2)'
    with pytest.raises(openai.NotFoundError):
        bob.chat.completions.create(model="hookstream", metadata=thread, messages=[{"role": "user", "content": "x"}])


def test_client_tool_round_trip_on_a_stored_thread(secured: str) -> None:
    client = _client(secured, "dave-key")
    thread = {"thread_id": "t-openai-tools"}
    messages: list[Any] = [{"role": "user", "content": "where am I?"}]
    first = client.chat.completions.create(model="hookstream", metadata=thread, messages=messages, tools=[LOC_TOOL])
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.to_dict()["id"].startswith("chatcmpl-")
    call = (first.choices[0].message.tool_calls or [])[0]
    # The call and its result go back (this server takes two messages at most); the store holds the rest.
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "Lyon"}]
    second = client.chat.completions.create(model="hookstream", metadata=thread, messages=messages[-2:],
                                            tools=[LOC_TOOL])
    assert second.choices[0].message.content == "get_location returned Lyon"


@pytest.mark.skipif(shutil.which("llm", path=str(Path(sys.executable).parent)) is None, reason="llm not installed")
def test_llm_as_a_user_configures_it(server: str, tmp_path: Path) -> None:
    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: hookstream\n  model_name: hookstream\n  api_base: \"{server}v1\"\n")
    llm = str(Path(sys.executable).parent / "llm")
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path), "OPENAI_API_KEY": "unused"}
    for extra in ([], ["--no-stream"]):
        done = subprocess.run([llm, "-m", "hookstream", *extra, "hello from llm"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "where returned" in done.stdout


def test_failed_and_approval_runs_end_with_an_error_object() -> None:
    events = [TextMessageStart("m1"), TextMessageContent("m1", "partial"), RunError("upstream said no", code="boom")]
    got = list(completion_chunks(events, completion_id="chatcmpl-1", model="hookstream"))
    assert got[1]["choices"][0]["delta"] == {"content": "partial"}
    assert got[-1] == {"error": {"message": "upstream said no", "type": "server_error", "param": None, "code": "boom"}}
    from hookstream.events import Interrupt, Outcome

    interrupt = Interrupt(id="approval_c1", reason="tool_approval")
    waiting = RunFinished("t", "r", outcome=Outcome("interrupt", interrupts=[interrupt]))
    got = list(completion_chunks([waiting], completion_id="chatcmpl-2", model="hookstream"))
    assert got[-1]["error"]["code"] == "approval_required"


def test_make_app_mounts_the_routes_in_process() -> None:
    from wsgiref.util import setup_testing_defaults

    app = make_app("test")
    environ: dict[str, Any] = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/nothing"}
    setup_testing_defaults(environ)
    seen: list[str] = []
    body = b"".join(app(environ, lambda status, headers: seen.append(status)))
    assert seen == ["404 Not Found"] and json.loads(body)["error"]["code"] == "unknown_url"


def test_a_run_past_its_time_is_an_error_streaming_or_not() -> None:
    # The demo streams an event every 0.25 s: the run passes --max-run-seconds 1 and ends with RUN_ERROR.
    with serve_demo_process("--delay", "0.25", "--max-run-seconds", "1") as url:
        client = _client(url)
        ask = [{"role": "user", "content": "weather in Paris and 250 EUR in yen?"}]
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="hookstream", messages=ask)  # type: ignore[arg-type]
        assert caught.value.status_code == 504 and caught.value.code == "run_timeout"
        stream = client.chat.completions.create(model="hookstream", messages=ask, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError, match="max_run_seconds"):
            list(stream)


def test_a_run_waiting_for_an_approval_says_so() -> None:
    # The demo's convert_currency needs approval, which Chat Completions cannot carry.
    with serve_demo_process("--delay", "0") as url:
        with pytest.raises(openai.ConflictError) as caught:
            _client(url).chat.completions.create(
                model="hookstream", messages=[{"role": "user", "content": "weather in Paris and 250 EUR in yen?"}])
        assert caught.value.code == "approval_required"


# -- POST /v1/responses ---------------------------------------------------------------------------------

RESPONSES_TOOL = {"type": "function", "name": "get_location", "description": "Where the user is.",
                  "parameters": {"type": "object", "properties": {"precision": {"type": "string"}},
                                 "required": ["precision"]}}


def test_responses_streaming_and_not(server: str) -> None:
    client = _client(server)
    whole = client.responses.create(model="hookstream", input="hi", instructions="Be brief.")
    assert whole.status == "completed" and "where returned" in whole.output_text
    assert whole.usage is not None and whole.usage.total_tokens > 0
    kinds = [ev.type for ev in client.responses.create(model="hookstream", input="hi", stream=True)]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds


def test_responses_client_tool_round_trip(server: str) -> None:
    client = _client(server)
    first = client.responses.create(model="hookstream", input=[{"role": "user", "content": "where am I?"}],
                                    tools=[RESPONSES_TOOL])  # type: ignore[list-item]
    calls = [o for o in first.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["get_location"]
    follow_up: Any = [{"role": "user", "content": "where am I?"},
                      {"type": "function_call", "call_id": calls[0].call_id, "name": "get_location",
                       "arguments": calls[0].arguments},
                      {"type": "function_call_output", "call_id": calls[0].call_id, "output": "Lyon"}]
    # The SDK's own accumulator (responses.stream) rebuilds the response from the events.
    with client.responses.stream(model="hookstream", input=follow_up, tools=[RESPONSES_TOOL]) as stream:  # type: ignore[list-item]
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == "get_location returned Lyon"


def test_responses_refuses_what_it_cannot_serve(server: str) -> None:
    client = _client(server)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="hookstream", input="hi", previous_response_id="resp_1")
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gpt-4o", input="hi")
