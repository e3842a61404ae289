"""Connection reuse: sequential ``chat()`` calls and the steps of one agent loop on one model share one
kept-alive TCP connection to the provider (the transport reads the body's end after ``data: [DONE]``);
a user's early stop, a long or late rest after the last event still close it. Real recorded OpenAI
bodies (the shared corpus) over a real loopback HTTP/1.1 server that counts accepted connections.
Every provider's contract suite checks the same with its own recordings (``keep_alive``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response, require_corpus

CORPUS = require_corpus(Path(__file__))
TEXT = (CORPUS / "openai-chat__text.sse").read_bytes()
TOOL_CALL = (CORPUS / "openai-chat__tool-call.sse").read_bytes()


def _model(srv: LoopbackServer) -> Any:
    return get_model("openai:gpt-4o-mini", base_url=srv.url + "/v1", api_key="sk-test")


def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city (the tool the recorded tool call names).

    Args:
        city: the city name
    """
    return {"city": city, "temperature_c": 18}


def test_sequential_chats_on_one_model_use_one_connection() -> None:
    with LoopbackServer([Response(TEXT)]) as srv, _model(srv) as model:
        ends = [list(chat(model, "hi"))[-1].type for _ in range(5)]
        assert ends == ["RUN_FINISHED"] * 5
        assert (len(srv.requests), srv.connections) == (5, 1)


def test_agent_loop_steps_use_one_connection() -> None:
    with LoopbackServer([Response(TOOL_CALL), Response(TEXT)]) as srv, _model(srv) as model:
        stream = chat(model, "Weather in Paris?", tools=[get_weather])
        types = [e.type for e in stream]
        assert types[-1] == "RUN_FINISHED", stream.result().error
        assert "TOOL_CALL_RESULT" in types
        assert (len(srv.requests), srv.connections) == (2, 1)


def test_early_stop_closes_the_connection() -> None:
    # The user stops at the first text: the rest of the body is not read, the connection is closed.
    with LoopbackServer([Response(TEXT, split="events")]) as srv, _model(srv) as model:
        for event in chat(model, "hi"):
            if event.type == "TEXT_MESSAGE_CONTENT":
                break
        assert list(chat(model, "hi"))[-1].type == "RUN_FINISHED"
        assert srv.connections == 2


def test_a_rest_longer_than_the_cap_closes_the_connection() -> None:
    # The recorded body, then 128 KiB of SSE comments after [DONE] (our padding, past the 64 KiB cap).
    padded = TEXT + b": padding\n\n" * (128 * 1024 // 11)
    with LoopbackServer([Response(padded, fragment=(4096, 4096))]) as srv, _model(srv) as model:
        assert [list(chat(model, "hi"))[-1].type for _ in range(2)] == ["RUN_FINISHED"] * 2
        assert srv.connections == 2


def test_a_late_end_of_body_closes_the_connection() -> None:
    # The server holds the chunked body's end back 3 s after [DONE]: the call ends after the drain's
    # 1 s read timeout with its events intact, and the next call opens a new connection.
    with LoopbackServer([Response(TEXT, delay=3.0)]) as srv, _model(srv) as model:
        assert [list(chat(model, "hi"))[-1].type for _ in range(2)] == ["RUN_FINISHED"] * 2
        assert srv.connections == 2
