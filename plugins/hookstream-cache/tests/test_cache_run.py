"""The response cache in runs: a hit replays the stored body through the adapter (same events and
result as the live run, no request), only complete responses are stored, the key follows the request
(model, prompt, tools) and never holds the API key. Real loopback HTTP serving recorded OpenAI bodies."""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hookstream import RunResult, chat, get_model
from hookstream.events import BaseEvent, TextMessageContent
from hookstream.plugin import ModelCallContext, hookimpl
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.conformance import require_corpus
from hookstream_cache import Cache, ResponseStore, default_path

KEY = "sk-test-SECRET-0123456789"  # one of the keys the repository's secrets scan looks for
MODEL = "gpt-4o-mini"


def body(name: str) -> bytes:
    return (require_corpus() / f"{name}.sse").read_bytes()


def run(srv: LoopbackServer, cache: Cache, prompt: str = "Weather in San Francisco?", model: str = MODEL,
        **fields: Any) -> tuple[list[BaseEvent], RunResult]:
    provider = get_model(f"openai:{model}", base_url=srv.url + "/v1", api_key=KEY)
    stream = chat(provider, prompt, plugins=[cache], **fields)
    events = list(stream)
    check_events(events, form="run")
    return events, stream.result()


def summary(result: RunResult) -> dict[str, Any]:
    step = result.steps[-1]
    return {"text": result.text, "usage": (result.usage.input_tokens, result.usage.output_tokens),
            "finish": (step.finish_reason, step.raw_finish_reason),
            "tool_calls": [(c.id, c.name, c.arguments) for c in step.tool_calls], "outcome": result.outcome}


def get_weather(city: str, state: str) -> str:
    """Current weather.

    Args:
        city: City name.
        state: State code.
    """
    return f"Sunny in {city}, {state}"


def test_a_hit_gives_the_live_runs_events_and_result_without_a_request(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        live_events, live = run(srv, cache)
        hit_events, hit = run(srv, cache)
    assert len(srv.requests) == 1
    assert live.error is None and summary(hit) == summary(live)
    assert live.text.startswith("I'm unable to provide real-time weather updates")
    assert [type(e).__name__ for e in hit_events] == [type(e).__name__ for e in live_events]
    deltas = [getattr(e, "delta", None) for e in live_events]
    assert [getattr(e, "delta", None) for e in hit_events] == deltas
    stats = cache.store.stats()
    assert (stats.entries, stats.hits, stats.misses) == (1, 1, 1)


def test_a_hit_replays_tool_calls_and_the_tool_runs_again(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    responses = [Response(body("openai-chat__tool-call")), Response(body("openai-chat__text"))]
    with LoopbackServer(responses) as srv:
        _, live = run(srv, cache, tools=[get_weather])
        _, hit = run(srv, cache, tools=[get_weather])
    assert len(srv.requests) == 2  # both steps of the first run; none for the second
    assert live.error is None and summary(hit) == summary(live)
    first = [(c.id, c.name, c.arguments) for c in hit.steps[0].tool_calls]
    assert first == [("call_CTf1nWJLqSeRgDqaCG27xZ74", "get_weather", {"city": "San Francisco", "state": "CA"})]
    assert [p.output for m in hit.messages if m.role == "tool" for p in m.parts] == ["Sunny in San Francisco, CA"]


@pytest.mark.parametrize("change", ["model", "prompt", "tools"])
def test_a_different_request_misses(tmp_path: Path, change: str) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    other: dict[str, Any] = {"model": {"model": "gpt-4o"}, "prompt": {"prompt": "Weather in Paris?"},
                             "tools": {"tools": [get_weather]}}[change]
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        run(srv, cache)
        _, result = run(srv, cache, **other)
    assert result.error is None
    assert len(srv.requests) == 2
    assert cache.store.stats().entries == 2


def test_a_response_cut_off_mid_stream_is_not_stored(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    whole = body("openai-chat__text")
    cut = whole[: len(whole) // 2]
    with LoopbackServer([Response(cut, ending="fin"), Response(whole)]) as srv:
        _, first = run(srv, cache)
        _, second = run(srv, cache)
    assert first.error is not None and first.outcome == "error"
    assert first.steps[-1].error is not None and first.steps[-1].error[0] == "connection_closed"
    assert second.error is None  # the cut-off body was not replayed: the second run asked the server
    assert len(srv.requests) == 2
    assert cache.store.stats().entries == 1


def error_response(status: int) -> Response:
    error = json.dumps({"error": {"message": "try again later", "type": "server_error"}}).encode()
    return Response(error, status=status, content_type="application/json", headers={"Retry-After": "0"})


@pytest.mark.parametrize("status", [429, 500])
def test_an_http_error_is_not_stored(tmp_path: Path, status: int) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    with LoopbackServer([error_response(status), error_response(status), Response(body("openai-chat__text"))]) as srv:
        _, first = run(srv, cache, loop={"max_retries": 0})
        assert first.error is not None and cache.store.stats().entries == 0
        _, second = run(srv, cache, loop={"max_retries": 0})
        assert second.error is not None and cache.store.stats().entries == 0
        _, third = run(srv, cache, loop={"max_retries": 0})
    assert third.error is None and len(srv.requests) == 3
    assert _only_body(cache.store) == body("openai-chat__text")


@pytest.mark.parametrize("status", [429, 500])
def test_a_retried_call_stores_the_good_attempts_body_only(tmp_path: Path, status: int) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    with LoopbackServer([error_response(status), Response(body("openai-chat__text"))]) as srv:
        _, first = run(srv, cache)  # the call itself retries 429 and 5xx, here at once (Retry-After: 0)
        _, second = run(srv, cache)
    assert first.error is None and second.error is None
    assert len(srv.requests) == 2
    assert _only_body(cache.store) == body("openai-chat__text")


def test_an_error_that_ends_the_run_stores_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    error = json.dumps({"error": {"message": "bad request", "type": "invalid_request_error"}}).encode()
    with LoopbackServer([Response(error, status=400, content_type="application/json")]) as srv:
        _, first = run(srv, cache)
        _, second = run(srv, cache)
    assert first.error is not None and second.error is not None
    assert len(srv.requests) == 2
    assert cache.store.stats().entries == 0


def test_the_api_key_never_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = Cache(path)
    with LoopbackServer([Response(body("openai-chat__tool-call")), Response(body("openai-chat__text"))]) as srv:
        run(srv, cache, tools=[get_weather])
        run(srv, cache, tools=[get_weather])
    assert srv.requests[0].headers["Authorization"] == f"Bearer {KEY}"  # the key was sent, to the server
    cache.store.close()
    files = [p for p in tmp_path.iterdir() if p.name.startswith("cache.sqlite3")]
    assert files
    for p in files:
        assert KEY.encode() not in p.read_bytes()
        assert b"Bearer" not in p.read_bytes()


def test_runs_on_threads_share_one_file(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    results: list[RunResult] = []
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        run(srv, cache)

        def one() -> None:
            results.append(run(srv, cache)[1])

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(srv.requests) == 1
    assert [r.error for r in results] == [None] * 4
    assert cache.store.stats().hits == 4


def test_chosen_by_name_with_a_path(tmp_path: Path) -> None:
    path = tmp_path / "named.sqlite3"
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        provider = get_model(f"openai:{MODEL}", base_url=srv.url + "/v1", api_key=KEY)
        for _ in range(2):
            stream = chat(provider, "hi", plugins=[("cache", {"path": path})])
            list(stream)
            assert stream.result().error is None
    assert len(srv.requests) == 1
    assert ResponseStore(path).stats().entries == 1


def test_the_default_file_is_in_the_user_cache_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "hookstream" / "responses.sqlite3"


def _only_body(store: ResponseStore) -> bytes:
    import sqlite3

    with sqlite3.connect(store.path) as conn:
        (row,) = conn.execute("SELECT body FROM responses").fetchall()
    return bytes(row[0])


def test_a_run_the_consumer_stops_early_stores_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite3")
    slow = Response(body("openai-chat__text"), split="events", delay=0.02)
    with LoopbackServer([slow]) as srv:
        provider = get_model(f"openai:{MODEL}", base_url=srv.url + "/v1", api_key=KEY)
        stream = chat(provider, "hi", plugins=[cache])
        for ev in stream:
            if ev.type == "TEXT_MESSAGE_CONTENT":
                break  # stop reading: the run is aborted
        assert stream.result().outcome == "cancelled"
    assert cache.store.stats().entries == 0


def test_an_entry_that_no_longer_replays_is_asked_again_and_replaced(tmp_path: Path) -> None:
    import sqlite3

    cache = Cache(tmp_path / "cache.sqlite3")
    whole = body("openai-chat__text")
    with LoopbackServer([Response(whole)]) as srv:
        run(srv, cache)
        with sqlite3.connect(cache.store.path) as conn:  # the stored body damaged behind the cache's back
            conn.execute("UPDATE responses SET body = ?", (whole[:200],))
        _, again = run(srv, cache)
        _, hit = run(srv, cache)
    assert again.error is None and hit.error is None
    assert len(srv.requests) == 2
    assert _only_body(cache.store) == whole


class SeenTexts:
    """Another run plugin's wrapper: what it sees of each model call (live or from the cache)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent],
                                                                         Iterable[BaseEvent]]:
        events = yield
        return self._watch(events)

    def _watch(self, events: Iterable[BaseEvent]) -> Iterator[BaseEvent]:
        text = ""
        for ev in events:
            if isinstance(ev, TextMessageContent):
                text += ev.delta
            elif ev.type in ("RUN_FINISHED", "RUN_ERROR"):
                self.texts.append(text)  # the engine stops reading at the call's terminal event
            yield ev


def test_other_plugins_wrappers_see_a_hit_as_they_see_the_live_call(tmp_path: Path) -> None:
    cache, seen = Cache(tmp_path / "cache.sqlite3"), SeenTexts()
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        for plugins in ([seen, cache], [cache, seen]):  # outside the cache's wrapper, then inside it
            provider = get_model(f"openai:{MODEL}", base_url=srv.url + "/v1", api_key=KEY)
            stream = chat(provider, "hi", plugins=plugins)
            list(stream)
            assert stream.result().error is None
    assert len(srv.requests) == 1
    assert len(seen.texts) == 2 and seen.texts[0] == seen.texts[1]
    assert seen.texts[0].startswith("I'm unable to provide real-time weather updates")
