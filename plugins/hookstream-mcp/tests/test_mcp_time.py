"""MCP tools from ``mcp-server-time`` (PyPI) over stdio, called by a scripted model through the real
OpenAI adapter and a loopback server: the tool list the model is offered, the result it gets back,
an MCP tool error as an error result, and the server process gone after close, however it closes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response
from hookstream_mcp import MCPServer, MCPServerError, MCPToolError
from mcp_kit import MODEL, NEVER, children, text_body, time_command, tool_body, tool_messages, tool_names


@pytest.fixture(scope="module")
def time_server() -> Iterator[MCPServer]:
    """One server for the tests that do not test its lifetime: each start costs an interpreter."""
    with MCPServer.stdio(time_command()) as server:
        yield server


def run(srv: LoopbackServer, tools: list[Any], prompt: str = "What time is it in UTC?") -> Any:
    stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), prompt, tools=tools)
    list(stream)
    return stream.result()


def test_the_model_calls_an_mcp_tool_and_gets_its_text_result(time_server: MCPServer) -> None:
    responses = [Response(tool_body(("c1", "get_current_time", {"timezone": "UTC"}))),
                 Response(text_body("It is morning in UTC."))]
    server = time_server
    with LoopbackServer(responses) as srv:
        tools = server.tools()
        result = run(srv, tools)
    assert result.outcome == "success" and result.text == "It is morning in UTC."
    # The model was offered the server's tools with their input schemas.
    first = srv.requests[0].json()
    assert tool_names(srv.requests[0]) == ["get_current_time", "convert_time"]
    params = first["tools"][0]["function"]["parameters"]
    assert params["required"] == ["timezone"] and params["properties"]["timezone"]["type"] == "string"
    # The second request carries the server's answer, as the tool message for call c1.
    (msg,) = tool_messages(srv.requests[1])
    assert msg["tool_call_id"] == "c1"
    answer = json.loads(msg["content"])
    assert answer["timezone"] == "UTC" and answer["datetime"].endswith("+00:00")
    assert result.tool_results[0].is_error is False


def test_an_mcp_tool_error_is_an_error_result_the_model_sees(time_server: MCPServer) -> None:
    responses = [Response(tool_body(("c1", "get_current_time", {"timezone": "Mars/Olympus"}))),
                 Response(text_body("That is not a time zone."))]
    server = time_server
    with LoopbackServer(responses) as srv:
        result = run(srv, server.tools())
    assert result.outcome == "success"
    (part,) = result.tool_results
    assert part.is_error
    assert part.output.startswith("Error: MCPToolError: ") and "Mars/Olympus" in part.output
    (msg,) = tool_messages(srv.requests[1])
    assert "Mars/Olympus" in msg["content"] and "MCPToolError" in msg["content"]


def test_a_protocol_error_raises_mcp_tool_error_with_the_json_rpc_code(time_server: MCPServer) -> None:
    with pytest.raises(MCPToolError, match=r"MCP error -32602: Unknown tool: nope"):
        time_server.call("nope", {})


def test_mcp_tools_sit_beside_function_tools(time_server: MCPServer) -> None:
    def shout(text: str) -> str:
        """Upper-case ``text``."""
        return text.upper()

    calls = ("c1", "get_current_time", {"timezone": "Europe/Paris"}), ("c2", "shout", {"text": "hi"})
    responses = [Response(tool_body(*calls)),
                 Response(text_body("done"))]
    server = time_server
    with LoopbackServer(responses) as srv:
        result = run(srv, [*server.tools(), shout])
    assert tool_names(srv.requests[0]) == ["get_current_time", "convert_time", "shout"]
    paris, shouted = result.tool_results
    assert json.loads(paris.output)["timezone"] == "Europe/Paris" and shouted.output == "HI"


def test_concurrent_calls_from_several_threads_share_one_session(time_server: MCPServer) -> None:
    server = time_server
    zones = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/London"] * 3
    outputs: dict[int, Any] = {}
    start = threading.Barrier(len(zones), timeout=NEVER)

    def call(i: int, zone: str) -> None:
        start.wait()
        outputs[i] = json.loads(server.call("get_current_time", {"timezone": zone}))

    threads = [threading.Thread(target=call, args=(i, z)) for i, z in enumerate(zones)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(NEVER)
    assert [outputs[i]["timezone"] for i in range(len(zones))] == zones


def test_close_stops_the_server_process_and_later_calls_give_errors() -> None:
    before = children()
    server = MCPServer.stdio(time_command()).start()
    started = children() - before
    assert started, "the stdio server should run as a child process"
    tool = server.tools()[0]
    server.close()
    server.close()  # idempotent
    assert all(not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
               for pid in started)
    assert children() <= before
    with pytest.raises(MCPToolError, match="closed"):
        assert tool.fn is not None
        tool.fn(timezone="UTC")
    with pytest.raises(MCPServerError, match="closed"):
        server.start()


def test_an_exception_in_the_with_block_still_stops_the_server() -> None:
    before = children()
    started: set[int] = set()
    with pytest.raises(RuntimeError, match="boom"):
        with MCPServer.stdio(time_command()):
            started = children() - before
            raise RuntimeError("boom")
    assert started
    assert children() <= before
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in started)


def test_a_command_that_does_not_exist_is_a_typed_error() -> None:
    before = children()
    with pytest.raises(MCPServerError, match=r"could not start: FileNotFoundError"):
        MCPServer.stdio(["/nonexistent/mcp-server"]).start()
    assert children() <= before


def test_a_server_that_never_answers_is_stopped_after_the_startup_timeout() -> None:
    # `sleep` reads nothing and writes nothing: the handshake never gets an answer.
    before = children()
    with pytest.raises(MCPServerError, match=r"within 0.5 s \(startup_timeout\)"):
        MCPServer.stdio(["sleep", "600"], startup_timeout=0.5).start()
    assert children() <= before


def test_tools_before_start_is_a_typed_error_and_repr_has_no_secrets() -> None:
    server = MCPServer.stdio(time_command(), env={"API_KEY": "sk-secret-value"})
    with pytest.raises(MCPServerError, match="not started"):
        server.tools()
    assert "not started" in repr(server) and "sk-secret" not in repr(server)
    http = MCPServer.http("https://user:pw@example.com/mcp?token=sk-secret", headers={"Authorization": "Bearer sk-x"})
    assert repr(http) == "MCPServer.http('https://example.com/mcp', not started)"


def test_an_http_error_at_start_names_no_credentials() -> None:
    refused = Response(b'{"error": "unauthorized"}', status=401, content_type="application/json")
    with LoopbackServer([refused] * 4) as srv:
        url = srv.url
        server = MCPServer.http(srv.url + "/mcp?token=sk-query-secret", headers={"Authorization": "Bearer sk-header"})
        with pytest.raises(MCPServerError) as caught:
            server.start()
    text = str(caught.value)
    # A 401 is an MCPAuthError (an MCPServerError) naming the status and what to set (issue 32).
    assert text.startswith(f"MCP server {url}/mcp: HTTP 401: the Authorization header was refused")
    assert "sk-query-secret" not in text and "sk-header" not in text
    assert srv.requests and srv.requests[0].headers["Authorization"] == "Bearer sk-header"
