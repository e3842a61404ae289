"""``hookstream mcp serve`` (issue 42) with the MCP SDK's own client as the oracle, over stdio and streamable
HTTP, against real server processes: tools/list, tools/call, a tool error as ``isError``, the agent as the
tool ``ask`` (the offline ``test`` model) with progress notifications, the bearer token over HTTP; and the MCP
conformance suite's server scenarios that apply to a server offering its own tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import REPO, missing

HERE = Path(__file__).parent
SERVE = [sys.executable, "-m", "hookstream", "mcp", "serve", "--tool", "served_tools:add",
         "--tool", "served_tools:test_error_handling", "--agent", "--model", "test"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)}
MODULES = REPO / "tests/mcp/node_modules"
NODE = MODULES / ".bin/node"
SUITE = MODULES / "@modelcontextprotocol/conformance/dist/index.js"


@contextmanager
def http_server(*extra: str) -> Iterator[str]:
    proc = subprocess.Popen([*SERVE, "--http", "--port", "0", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


@asynccontextmanager
async def stdio_client_session() -> AsyncIterator[Client]:
    params = StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=ENV)
    async with Client(stdio_client(params)) as client:
        yield client


@asynccontextmanager
async def http_client_session(url: str, token: str | None = None) -> AsyncIterator[Client]:
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http, Client(streamable_http_client(url, http_client=http)) as c:
        yield c


async def _exercise(client: Client) -> None:
    listing = await client.list_tools()
    assert {t.name for t in listing.tools} == {"add", "test_error_handling", "ask"}
    add = next(t for t in listing.tools if t.name == "add")
    assert add.input_schema["required"] == ["a", "b"]
    got = await client.call_tool("add", {"a": 2, "b": 3})
    assert not got.is_error and got.content[0].text == "5"  # type: ignore[union-attr]
    failed = await client.call_tool("test_error_handling", {})
    assert failed.is_error and "intentionally" in failed.content[0].text  # type: ignore[union-attr]
    progress: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    answer = await client.call_tool("ask", {"prompt": "add please"}, progress_callback=on_progress)
    assert not answer.is_error, answer
    assert "add returned" in answer.content[0].text  # type: ignore[union-attr]
    assert "calling add" in progress and any(m and m.startswith("step") for m in progress)


def test_stdio_client_lists_and_calls() -> None:
    async def main() -> None:
        async with stdio_client_session() as client:
            await _exercise(client)

    anyio.run(main)


def test_http_client_lists_and_calls_with_the_token(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("mcp-key alice\n")
    with http_server("--auth-tokens", str(tokens)) as url:
        async def main() -> None:
            async with http_client_session(url, "mcp-key") as client:
                await _exercise(client)

        anyio.run(main)
        import requests

        headers = {"Authorization": "Bearer wrong", "Accept": "application/json, text/event-stream"}
        refused = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30, headers=headers)
        assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")


# Server scenarios that apply to a server offering its own tools. The others do not: they call tools
# of the reference server by name (tools-call-simple-text, -image, -audio, -embedded-resource,
# -mixed-content, -with-logging, -with-progress, -sampling, -elicitation, json-schema-2020-12,
# elicitation-*), or test resources, prompts, completion, logging/setLevel and SSE polling, which this
# server does not offer.
SCENARIOS = ["server-initialize", "ping", "tools-list", "tools-call-error", "dns-rebinding-protection"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_server_scenarios(scenario: str, tmp_path: Path) -> None:
    if not SUITE.exists() or not NODE.exists():
        missing("the MCP conformance suite is not installed (scripts/install-mcp-servers)")
    with http_server() as url:
        done = subprocess.run([str(NODE), str(SUITE), "server", "--url", url, "--scenario", scenario, "-o",
                               str(tmp_path)], capture_output=True, text=True, timeout=120)
    checks = [json.loads(p.read_text()) for p in tmp_path.rglob("checks.json")]
    failed = [c for group in checks for c in group if c.get("status") not in ("SUCCESS", "INFO")]
    assert done.returncode == 0 and checks and not failed, done.stdout[-3000:] + done.stderr[-2000:]


def test_an_mcp_servers_tools_pass_through() -> None:
    from mcp_kit import time_command

    upstream = " ".join(time_command())
    params = StdioServerParameters(command=sys.executable, env=ENV,
                                   args=["-m", "hookstream", "mcp", "serve", "--mcp", upstream])

    async def main() -> None:
        async with Client(stdio_client(params)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"get_current_time", "convert_time"} <= names
            got = await client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
            assert not got.is_error and "Europe/Paris" in got.content[0].text  # type: ignore[union-attr]
            bad = await client.call_tool("get_current_time", {"timezone": "Not/AZone"})
            assert bad.is_error

    anyio.run(main)


# "auto" settles on the 2026-07-28 protocol (the question comes back as the call's InputRequiredResult,
# answered in the retry); "legacy" is the initialize handshake of 2025 clients (an elicitation/create
# request on the session's back channel).
@pytest.mark.parametrize(("approve", "mode"), [(True, "auto"), (False, "auto"), (True, "legacy"), (False, "legacy")])
def test_ask_asks_for_approvals_by_elicitation(approve: bool, mode: str) -> None:
    import mcp_types as types

    params = StdioServerParameters(command=sys.executable, env=ENV, args=[
        "-m", "hookstream", "mcp", "serve", "--tool", "served_tools:delete_file", "--agent", "--model", "test"])
    asked: list[str] = []

    async def answer(context: Any, request: Any) -> Any:
        asked.append(request.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    async def main() -> str:
        async with Client(stdio_client(params), elicitation_callback=answer, mode=mode) as client:
            got = await client.call_tool("ask", {"prompt": "clean up"})
            assert not got.is_error, got
            return str(got.content[0].text)  # type: ignore[union-attr]

    text = anyio.run(main)
    assert len(asked) == 1
    # The test model quotes each tool's result: the call ran, or its denial came back.
    assert ("delete_file returned deleted" in text) is approve, text


def test_serving_openly_beyond_loopback_needs_saying_so() -> None:
    done = subprocess.run([*SERVE, "--http", "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True,
                          env={k: v for k, v in ENV.items() if k != "HOOKSTREAM_AUTH_TOKENS"}, timeout=60)
    assert done.returncode == 2 and "without authentication" in done.stderr
    done = subprocess.run([*SERVE[:5], "--agent"], capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == 2 and "--agent needs --model" in done.stderr


def test_http_with_jwts_from_an_oidc_issuer() -> None:
    from test_server_auth import _Issuer  # the core's loopback OIDC issuer (discovery, JWKS, a minter)

    issuer = _Issuer()
    try:
        with http_server("--jwt-issuer", issuer.url, "--jwt-audience", "hookstream-mcp") as url:
            async def main() -> None:
                async with http_client_session(url, issuer.token(aud="hookstream-mcp")) as client:
                    assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"  # type: ignore[union-attr]

            anyio.run(main)
            import requests

            for bad in (issuer.token(aud="another"), issuer.token(key=issuer.other)):
                answer = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30,
                                       headers={"Authorization": f"Bearer {bad}",
                                                "Accept": "application/json, text/event-stream"})
                assert answer.status_code == 401
    finally:
        issuer.close()
