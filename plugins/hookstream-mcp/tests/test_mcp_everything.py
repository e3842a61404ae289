"""MCP tools from the reference ``@modelcontextprotocol/server-everything`` (npm, pinned in tests/mcp),
over stdio and over streamable HTTP, called by a scripted model through the real OpenAI adapter: text
results, an image result (described with its MIME type and size: hookstream tool results carry text),
a JSON-RPC error, and request headers over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hookstream import CancellationToken, chat, get_model
from hookstream.testing import LoopbackServer, Response
from hookstream_mcp import MCPServer, MCPToolError
from mcp_kit import (
    MODEL,
    NEVER,
    children,
    everything_command,
    everything_http,
    text_body,
    tool_body,
    tool_messages,
    tool_names,
)

TINY_PNG_BYTES = 4033  # the size of the MCP logo server-everything's get-tiny-image returns (base64-decoded)


@pytest.fixture(scope="module")
def stdio_server() -> Iterator[MCPServer]:
    with MCPServer.stdio(everything_command("stdio")) as server:
        yield server


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with everything_http() as url:
        yield url


def run(srv: LoopbackServer, tools: list[Any]) -> Any:
    stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "go", tools=tools)
    list(stream)
    return stream.result()


def echo_and_image(server: MCPServer) -> tuple[Any, LoopbackServer]:
    responses = [Response(tool_body(("c1", "echo", {"message": "hello MCP"}), ("c2", "get-tiny-image", {}))),
                 Response(text_body("Echoed, and there is a logo."))]
    with LoopbackServer(responses) as srv:
        result = run(srv, server.tools())
    return result, srv


def check_echo_and_image(result: Any, srv: LoopbackServer) -> None:
    assert result.outcome == "success" and result.text == "Echoed, and there is a logo."
    assert {"echo", "get-sum", "get-tiny-image"} <= set(tool_names(srv.requests[0]))
    echo, image = tool_messages(srv.requests[1])
    assert (echo["tool_call_id"], echo["content"]) == ("c1", "Echo: hello MCP")
    assert image["tool_call_id"] == "c2"
    assert image["content"] == (
        "Here's the image you requested:\n"
        f"[image: image/png, {TINY_PNG_BYTES} bytes, not shown to the model: hookstream tool results carry text only]\n"
        "The image above is the MCP logo.")
    assert not any(part.is_error for part in result.tool_results)


def test_stdio_text_and_image_results_reach_the_model(stdio_server: MCPServer) -> None:
    check_echo_and_image(*echo_and_image(stdio_server))


def test_stdio_schema_is_offered_and_arguments_arrive(stdio_server: MCPServer) -> None:
    responses = [Response(tool_body(("c1", "everything_get-sum", {"a": 40, "b": 2}))), Response(text_body("42"))]
    with LoopbackServer(responses) as srv:
        result = run(srv, stdio_server.tools(prefix="everything_"))
    (spec,) = [t["function"] for t in srv.requests[0].json()["tools"] if t["function"]["name"] == "everything_get-sum"]
    assert spec["parameters"]["required"] == ["a", "b"]
    assert spec["parameters"]["properties"]["a"]["type"] == "number"
    assert tool_messages(srv.requests[1])[0]["content"] == "The sum of 40 and 2 is 42."
    assert result.text == "42"


def test_stdio_invalid_arguments_are_a_json_rpc_error(stdio_server: MCPServer) -> None:
    # Called directly: through the engine, its own JSON Schema check would refuse these arguments first.
    with pytest.raises(MCPToolError, match=r"MCP error -32602: .*expected number"):
        stdio_server.call("get-sum", {"a": "forty", "b": 2})


def test_a_cancelled_call_cancels_the_request_and_the_session_goes_on(stdio_server: MCPServer) -> None:
    token = CancellationToken()
    errors: list[str] = []

    def call() -> None:
        try:
            stdio_server.call("trigger-long-running-operation", {"duration": 600, "steps": 2}, cancellation=token)
        except MCPToolError as exc:
            errors.append(exc.message)

    caller = threading.Thread(target=call)
    caller.start()
    token.cancel()
    caller.join(NEVER)
    assert errors == ["the call to 'trigger-long-running-operation' was cancelled (cancelled)"]
    assert stdio_server.call("echo", {"message": "still here"}) == "Echo: still here"


@pytest.mark.slow
def test_a_tool_over_its_call_timeout_is_an_error_result_and_the_session_goes_on() -> None:
    responses = [Response(tool_body(("c1", "trigger-long-running-operation", {"duration": 600, "steps": 2}))),
                 Response(text_body("It took too long."))]
    with MCPServer.stdio(everything_command("stdio"), call_timeout=0.5) as server, LoopbackServer(responses) as srv:
        result = run(srv, server.tools())
        # Called directly (no engine, no cancellation token), the SDK's read timeout bounds the call.
        with pytest.raises(MCPToolError, match=r"MCP error -32001: .*timed out"):
            server.call("trigger-long-running-operation", {"duration": 600, "steps": 2})
        # The session goes on; this call has no limit, since 0.5 s would also bound a loaded server's echo.
        server.call_timeout = None
        assert server.call("echo", {"message": "next"}) == "Echo: next"
    (part,) = result.tool_results
    assert part.is_error and part.output == "Error: 'trigger-long-running-operation' timed out after 0.5 s"


@pytest.mark.slow
def test_http_text_and_image_results_reach_the_model(http_url: str) -> None:
    before = children()
    with MCPServer.http(http_url) as server:
        assert children() == before  # over HTTP nothing is started here
        check_echo_and_image(*echo_and_image(server))


@pytest.mark.slow
def test_http_with_headers_of_ones_own(http_url: str) -> None:
    with MCPServer.http(http_url, headers={"X-Hookstream-Test": "1"}) as server:
        assert server.call("echo", {"message": "with headers"}) == "Echo: with headers"


@pytest.mark.slow
def test_http_server_gone_is_a_typed_error_at_start() -> None:
    with everything_http() as url:
        pass
    from hookstream_mcp import MCPServerError

    with pytest.raises(MCPServerError, match=r"could not start: ConnectError"):
        MCPServer.http(url, startup_timeout=30).start()
