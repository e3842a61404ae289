"""Tool search over a real stdio MCP server with 200 generated tools (``many_tools_server.py``), driven by
a scripted model on a real loopback HTTP server through the real OpenAI adapter: the first request
carries ``search_tools`` instead of 200 schemas, the model searches, calls the tool it found, and the run
ends with its answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookstream import Tool, chat, get_model
from hookstream.testing import LoopbackServer, Response, check_events, run_cli
from hookstream_mcp import MCPServer
from hookstream_toolsearch import ToolIndex, ToolSearch, words

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tests"))

from engine_kit import MODEL, body_messages, text_body, tool_body, tool_names  # noqa: E402

SERVER = [sys.executable, str(HERE / "many_tools_server.py")]


@pytest.fixture(scope="module")
def many() -> Iterator[list[Tool]]:
    """The 200 tools of one server process for the whole module (each start costs an interpreter)."""
    with MCPServer.stdio(SERVER) as server:
        tools = server.tools()
        assert len(tools) == 200
        yield tools


def run(srv: LoopbackServer, tools: list[Tool], **fields: Any) -> Any:
    stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "What is the weather in Oslo?",
                  tools=tools, **fields)
    events = list(stream)
    check_events(events, form="run")
    return stream.result()


def tool_results(req: Any) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body_messages(req) if m["role"] == "tool"}


def test_the_model_finds_and_calls_one_of_200_mcp_tools(many: list[Tool]) -> None:
    responses = [Response(tool_body(("c1", "search_tools", {"query": "current weather for a city"}))),
                 Response(tool_body(("c2", "get_weather", {"city": "Oslo"}))),
                 Response(text_body("It is sunny in Oslo."))]
    with LoopbackServer(responses) as srv:
        result = run(srv, many, plugins=["tool-search"])
    assert result.outcome == "success" and result.text == "It is sunny in Oslo."
    first, second, third = srv.requests
    # A handful of schemas, not 200: only the search tool until the model has found something.
    assert tool_names(first) == ["search_tools"]
    found = json.loads(tool_results(second)["c1"])
    assert found["tools"][0]["name"] == "get_weather" and len(found["tools"]) <= 5
    # The next request carries what the search found, with its MCP input schema.
    assert tool_names(second)[0] == "search_tools" and "get_weather" in tool_names(second)
    assert len(tool_names(second)) <= 6
    weather = next(t for t in second.json()["tools"] if t["function"]["name"] == "get_weather")
    assert weather["function"]["parameters"]["required"] == ["city"]
    # The found tool ran on the MCP server and its answer reached the model.
    assert tool_results(third)["c2"] == "Sunny in Oslo"
    assert "get_weather" in tool_names(third)
    assert [p.tool_name for p in result.tool_results] == ["search_tools", "get_weather"]


def test_without_the_plugin_every_schema_is_sent(many: list[Tool]) -> None:
    with LoopbackServer([Response(text_body("hi"))]) as srv:
        run(srv, many)
    assert len(tool_names(srv.requests[0])) == 200


def test_at_or_below_the_threshold_the_step_is_left_alone(many: list[Tool]) -> None:
    with LoopbackServer([Response(text_body("hi"))]) as srv:
        run(srv, many[:20], plugins=["tool-search"])
        run(srv, many[:3], plugins=[ToolSearch(threshold=0, keep=[many[1].name])])
    assert len(tool_names(srv.requests[0])) == 20
    assert tool_names(srv.requests[1]) == ["search_tools", many[1].name]


def test_a_search_with_no_match_says_so_and_loads_nothing(many: list[Tool]) -> None:
    responses = [Response(tool_body(("c1", "search_tools", {"query": "zzz quux"}))), Response(text_body("none"))]
    with LoopbackServer(responses) as srv:
        run(srv, many, plugins=[("tool-search", {"max_results": 3})])
    assert json.loads(tool_results(srv.requests[1])["c1"])["tools"] == []
    assert tool_names(srv.requests[1]) == ["search_tools"]


def test_the_command_line_turns_tool_search_on_for_mcp_tools() -> None:
    responses = [Response(tool_body(("c1", "search_tools", {"query": "create a new refund"}))),
                 Response(text_body("done"))]
    with LoopbackServer(responses) as srv:
        out = run_cli(["chat", "refund it", "--model", MODEL, "--base-url", srv.url + "/v1", "--no-log",
                       "--mcp", " ".join(SERVER), "--tool-search", "--output", "final-json"],
                      env={"OPENAI_API_KEY": "sk-test"})
    assert out.exit_code == 0, out.output
    assert tool_names(srv.requests[0]) == ["search_tools"]
    assert json.loads(tool_results(srv.requests[1])["c1"])["tools"][0]["name"] == "create_refund"


def test_words_split_identifiers_and_the_index_ranks_by_them() -> None:
    assert words("getWeather for HTTPServer_v2 in São-Paulo") == ["get", "weather", "for", "http", "server",
                                                                  "v2", "in", "são", "paulo"]
    tools = {n: Tool(n, d, {"type": "object", "properties": {a: {"type": "string"}}}) for n, d, a in [
        ("send_email", "Send a message to someone.", "recipient"),
        ("read_file", "Read a file from disk.", "path"),
        ("get_weather", "Current conditions.", "city"),
    ]}
    index = ToolIndex(tools)
    assert [t.name for t in index.search("email")] == ["send_email"]           # a word of the name
    assert [t.name for t in index.search("disk contents")] == ["read_file"]    # the description
    assert [t.name for t in index.search("which city")] == ["get_weather"]     # an argument name
    assert [t.name for t in index.search("read_file please", 1)] == ["read_file"]  # the exact name comes first
    assert index.search("the of and") == []                                     # stop words only


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError, match="threshold"):
        ToolSearch(threshold=-1)
    with pytest.raises(ValueError, match="max_results"):
        ToolSearch(max_results=0)
