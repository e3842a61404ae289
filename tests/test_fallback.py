"""FallbackModel through the public API, against real loopback servers: a step goes to the next model on a
retryable failure before any content (503, an in-stream overload, a first-event timeout), with the same
provider-neutral conversation, also across providers; never after content (the run ends with the error,
keeping the text, and says why); which model answered is on STEP_FINISHED and in RunResult.steps."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

pytest.importorskip("hookstream_openai", reason="the fallback tests speak OpenAI Chat Completions")
pytest.importorskip("hookstream_anthropic", reason="the fallback tests speak the Anthropic Messages API")

from engine_kit import text_body, tool_body
from hookstream import FallbackModel, Message, Provider, batch, chat, get_model
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.provider_bodies import error_body, final_stream

KEY = "sk-test"


def openai_at(server: LoopbackServer, model: str = "gpt-4o-mini") -> Provider:
    return get_model(f"openai:{model}", base_url=server.url + "/v1", api_key=KEY)


def anthropic_at(server: LoopbackServer, model: str = "claude-haiku-4-5") -> Provider:
    return get_model(f"anthropic:{model}", base_url=server.url, api_key=KEY)


def unavailable(provider: str = "openai") -> Response:
    return Response(error_body(provider, 503, "the service is unavailable"), status=503,
                    content_type="application/json")


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


NO_RETRY = {"max_retries": 0}


def test_a_503_goes_to_the_second_model_and_the_step_names_it() -> None:
    with LoopbackServer([unavailable()]) as first, LoopbackServer([Response(text_body("From ", "B."))]) as second:
        model = FallbackModel(openai_at(first, "model-a"), openai_at(second, "model-b"))
        stream = chat(model, "hi", loop=NO_RETRY)
        events = list(stream)
        assert len(first.requests) == 1 and len(second.requests) == 1
        assert second.requests[0].json()["model"] == "model-b"
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "success" and result.text == "From B."
    assert result.steps[0].provider == "openai:model-b"
    assert result.steps[0].fallbacks == ["openai:model-a"]
    finished = [e for e in events if e.type == "STEP_FINISHED"]
    assert [e.metadata for e in finished] == [{"hookstream": {"provider": "openai:model-b"}}]
    # the failed attempt leaves nothing on the stream: one RUN_STARTED, no RUN_ERROR
    assert [e.type for e in events].count("RUN_STARTED") == 1 and "RUN_ERROR" not in [e.type for e in events]


def test_the_call_retries_before_falling_back() -> None:
    busy = Response(error_body("openai", 429, "slow down"), status=429, content_type="application/json",
                    headers={"Retry-After": "0"})
    with LoopbackServer([busy, busy]) as first, LoopbackServer([Response(text_body("ok"))]) as second:
        result = chat(FallbackModel(openai_at(first), openai_at(second, "b")), "hi",
                      loop={"max_retries": 1}).result()
        assert len(first.requests) == 2  # the call's own retry came first
    assert result.text == "ok" and result.steps[0].provider == "openai:b"


def test_fallback_across_providers_sends_the_same_conversation() -> None:
    conversation = [Message.system("Answer briefly."), Message.user("Weather in Paris?"),
                    Message.assistant("Which unit?"), Message.user("Celsius.")]
    answer = final_stream("anthropic", text="18 °C.")
    with LoopbackServer([unavailable()]) as first, LoopbackServer([Response(answer.body)]) as second:
        model = FallbackModel(openai_at(first), anthropic_at(second))
        stream = chat(model, conversation, loop=NO_RETRY, max_tokens=100)
        events = list(stream)
        sent_openai = first.requests[0].json()
        sent_anthropic = second.requests[0].json()
    check_events(events, form="run")
    assert stream.result().text == "18 °C." and stream.result().steps[0].provider == "anthropic:claude-haiku-4-5"
    assert sent_anthropic["model"] == "claude-haiku-4-5"
    # the same provider-neutral history, in each provider's own form
    assert [(m["role"], m["content"]) for m in sent_openai["messages"]] == [
        ("system", "Answer briefly."), ("user", "Weather in Paris?"), ("assistant", "Which unit?"),
        ("user", "Celsius.")]
    system = sent_anthropic["system"]
    assert (system if isinstance(system, str) else system[0]["text"]) == "Answer briefly."

    def text_of(content: Any) -> str:
        return content if isinstance(content, str) else "".join(p["text"] for p in content)

    assert [(m["role"], text_of(m["content"])) for m in sent_anthropic["messages"]] == [
        ("user", "Weather in Paris?"), ("assistant", "Which unit?"), ("user", "Celsius.")]


def test_an_overload_after_text_ends_the_run_without_fallback() -> None:
    script = final_stream("anthropic", text="Partial answer that goes on")
    first_text = next(i for i, t in enumerate(script.text_after) if t)
    body = b"".join(script.events[:first_text]) + sse(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
    with LoopbackServer([Response(body)]) as first, LoopbackServer([Response(text_body("never"))]) as second:
        stream = chat(FallbackModel(anthropic_at(first), openai_at(second)), "hi", loop=NO_RETRY)
        events = list(stream)
        assert len(second.requests) == 0
    check_events(events, form="run")
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "overloaded_error"  # type: ignore[attr-defined]
    assert "no fallback once the step has streamed content" in last.message  # type: ignore[attr-defined]
    assert "openai:gpt-4o-mini" in last.message  # type: ignore[attr-defined]
    result = stream.result()
    assert result.outcome == "error" and "no fallback" in str(result.error)
    assert result.text == script.text_after[first_text] and result.text
    assert result.steps[0].provider == "anthropic:claude-haiku-4-5" and result.steps[0].fallbacks == []
    assert result.messages[-1].role == "assistant" and result.messages[-1].text == result.text


def test_an_openai_in_stream_error_before_content_falls_back() -> None:
    limited = sse({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})
    with LoopbackServer([Response(limited)]) as first, LoopbackServer([Response(text_body("second"))]) as second:
        result = chat(FallbackModel(openai_at(first), openai_at(second, "b")), "hi", loop=NO_RETRY).result()
    assert result.text == "second" and result.steps[0].fallbacks == ["openai:gpt-4o-mini"]


def test_a_failure_another_model_would_not_fix_is_not_retried_elsewhere() -> None:
    bad = Response(error_body("openai", 400, "bad request"), status=400, content_type="application/json")
    with LoopbackServer([bad]) as first, LoopbackServer([Response(text_body("never"))]) as second:
        stream = chat(FallbackModel(openai_at(first), openai_at(second)), "hi", loop=NO_RETRY)
        events = list(stream)
        assert len(second.requests) == 0
    assert events[-1].type == "RUN_ERROR" and "no fallback" not in events[-1].message  # type: ignore[attr-defined]


def test_every_model_failing_ends_with_the_last_error() -> None:
    with LoopbackServer([unavailable()]) as first, LoopbackServer([unavailable("anthropic")]) as second:
        stream = chat(FallbackModel(openai_at(first), anthropic_at(second)), "hi", loop=NO_RETRY)
        events = list(stream)
    check_events(events, form="run")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "server_error"  # type: ignore[attr-defined]
    result = stream.result()
    assert result.steps[0].provider == "anthropic:claude-haiku-4-5"
    assert result.steps[0].fallbacks == ["openai:gpt-4o-mini"]


class _Silent:
    """A response that sends headers and then nothing until released (a model that never starts)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, wfile: Any, sock: Any) -> None:
        self.release.wait(30)


def test_a_first_event_timeout_falls_back() -> None:
    silent = _Silent()
    try:
        with LoopbackServer([Response(writer=silent)]) as first, \
                LoopbackServer([Response(text_body("in time"))]) as second:
            # The limit holds for both models: the silent one can only time out, and the one that answers
            # at once has 2 s (was 0.2 s, which a loaded runner can spend before a server thread runs).
            stream = chat(FallbackModel(openai_at(first), openai_at(second, "b")), "hi", loop=NO_RETRY,
                          timeouts={"first_event": 2.0})
            events = list(stream)
    finally:
        silent.release.set()
    check_events(events, form="run")
    result = stream.result()
    assert result.outcome == "success" and result.text == "in time"
    assert result.steps[0].fallbacks == ["openai:gpt-4o-mini"]


def test_each_step_starts_again_from_the_first_model() -> None:
    def weather(city: str) -> str:
        """Weather."""
        return f"sunny in {city}"

    with LoopbackServer([unavailable(), Response(text_body("Sunny."))]) as first, \
            LoopbackServer([Response(tool_body(("c1", "weather", {"city": "Oslo"})))]) as second:
        result = chat(FallbackModel(openai_at(first, "a"), openai_at(second, "b")), "Weather?", tools=[weather],
                      loop=NO_RETRY).result()
        # step 2 sends the tool result, produced after model b's call, to model a
        sent = first.requests[1].json()["messages"]
    assert [s.provider for s in result.steps] == ["openai:b", "openai:a"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}


def test_strings_are_built_once_and_closed_with_the_fallback_model() -> None:
    with LoopbackServer([Response(text_body("one")), Response(text_body("two"))]) as server:
        model = FallbackModel("openai:gpt-4o-mini", openai_at(server))
        assert model.labels == ("openai:gpt-4o-mini", "openai:gpt-4o-mini") and model.model == "gpt-4o-mini"
        assert get_model(model) is model  # a provider object passes through get_model (chat_factory, make_app)
        # no OPENAI_API_KEY for the first entry: missing_api_key is not a failure another model would fix...
        stream = chat(model, "hi", loop=NO_RETRY)
        events = list(stream)
        assert events[-1].type == "RUN_ERROR" and events[-1].code == "missing_api_key"  # type: ignore[attr-defined]
        # ...but the entry was built once and is reused
        entries = model.resolve(None)
        assert model.resolve(None) is entries and entries[1] is not entries[0]
        model.close()
    assert repr(model) == "FallbackModel('openai:gpt-4o-mini', 'openai:gpt-4o-mini')"


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        FallbackModel()
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        FallbackModel("gpt-4o")
    with pytest.raises(TypeError, match="string or a provider"):
        FallbackModel(42)  # type: ignore[arg-type]
    nested = FallbackModel("openai:a", FallbackModel("anthropic:b", "openai:c"))
    assert nested.labels == ("openai:a", "anthropic:b", "openai:c")
    with pytest.raises(ValueError, match="no base_url"):
        get_model(nested, base_url="http://x")


def test_batch_runs_on_a_fallback_model() -> None:
    inputs = [{"id": "1", "prompt": "hi"}, {"id": "2", "prompt": "ho"}]
    with LoopbackServer([unavailable(), unavailable()]) as first, \
            LoopbackServer([Response(text_body("fine")), Response(text_body("fine"))]) as second:
        results = list(batch(inputs, FallbackModel(openai_at(first), openai_at(second, "b")), concurrency=1,
                             loop=NO_RETRY))
    assert sorted(r.id for r in results) == ["1", "2"]
    assert all(r.text == "fine" and r.error is None for r in results), results
