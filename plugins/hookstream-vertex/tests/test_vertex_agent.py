"""The agent loop on each provider against a scripted loopback server: the model asks for two tool
calls, both run, their results go back in the provider's form on the second request, and the second
step answers. Responses are split at random byte boundaries."""

from __future__ import annotations

from typing import Any

import google.oauth2.credentials
import pytest
from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response
from vertex_helpers import anthropic_calls, anthropic_text, gemini_calls, gemini_text

CALLED: list[str] = []


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: City name.
    """
    CALLED.append(city)
    return {"city": city, "temp_c": {"Paris": 21, "Rome": 25}[city]}


def _creds() -> google.oauth2.credentials.Credentials:
    return google.oauth2.credentials.Credentials(token="agent-token")


@pytest.mark.parametrize("seed", [1, 2])
def test_gemini_two_tool_calls_then_an_answer(seed: int, hookstream_check_events: Any) -> None:
    CALLED.clear()
    first = gemini_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}))
    with LoopbackServer([Response(first, fragment=(1, 7)), Response(gemini_text("Paris 21, Rome 25."),
                                                                     fragment=(1, 7))], seed=seed) as srv:
        model = get_model("vertex:gemini-2.5-flash", base_url=srv.url, project="proj-a", location="us-central1",
                          credentials=_creds())
        stream = chat(model, "Weather in Paris and Rome?", tools=[get_weather])
        hookstream_check_events(list(stream), form="run")
        result = stream.result()
        requests = list(srv.requests)
    assert result.text == "Paris 21, Rome 25."
    assert sorted(CALLED) == ["Paris", "Rome"]
    assert len(requests) == 2
    for req in requests:
        assert req.path == ("/v1/projects/proj-a/locations/us-central1/publishers/google/models/gemini-2.5-flash"
                            ":streamGenerateContent?alt=sse")
        assert req.headers.get("Authorization") == "Bearer agent-token"
    contents = requests[1].json()["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert [p["functionCall"] for p in contents[1]["parts"]] == [
        {"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_weather", "args": {"city": "Rome"}}]
    assert [p["functionResponse"] for p in contents[2]["parts"]] == [
        {"name": "get_weather", "response": {"city": "Paris", "temp_c": 21}},
        {"name": "get_weather", "response": {"city": "Rome", "temp_c": 25}},
    ]
    assert requests[1].json()["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


@pytest.mark.parametrize("seed", [1, 2])
def test_claude_two_tool_calls_then_an_answer(seed: int, hookstream_check_events: Any) -> None:
    CALLED.clear()
    first = anthropic_calls(("toolu_01", "get_weather", {"city": "Paris"}),
                            ("toolu_02", "get_weather", {"city": "Rome"}))
    with LoopbackServer([Response(first, fragment=(1, 7)), Response(anthropic_text("Paris 21, Rome 25."),
                                                                     fragment=(1, 7))], seed=seed) as srv:
        model = get_model("vertex-anthropic:claude-sonnet-4-5@20250929", base_url=srv.url, project="proj-a",
                          location="us-east5", credentials=_creds())
        stream = chat(model, "Weather in Paris and Rome?", tools=[get_weather], max_tokens=512)
        hookstream_check_events(list(stream), form="run")
        result = stream.result()
        requests = list(srv.requests)
    assert result.text == "Paris 21, Rome 25."
    assert sorted(CALLED) == ["Paris", "Rome"]
    assert len(requests) == 2
    for req in requests:
        assert req.path == ("/v1/projects/proj-a/locations/us-east5/publishers/anthropic/models/"
                            "claude-sonnet-4-5@20250929:streamRawPredict")
        assert req.headers.get("Authorization") == "Bearer agent-token"
        body = req.json()
        assert body["anthropic_version"] == "vertex-2023-10-16" and body["stream"] is True
        assert "model" not in body and body["max_tokens"] == 512
    messages = requests[1].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [(b["id"], b["input"]) for b in messages[1]["content"] if b["type"] == "tool_use"] == [
        ("toolu_01", {"city": "Paris"}), ("toolu_02", {"city": "Rome"})]
    results = [b for b in messages[2]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_01", "toolu_02"]
    assert '"temp_c": 21' in results[0]["content"] and '"temp_c": 25' in results[1]["content"]
