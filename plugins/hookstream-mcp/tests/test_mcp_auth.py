"""An MCP server that needs a login: the 401 kept in a typed error that says what to set, from Python and
from ``hookstream chat --mcp``; the login options' reprs and the CLI's credential checks. The OAuth flows
themselves (discovery, registration, loopback redirect, client credentials, token storage) run against
the MCP conformance suite's authorization servers in test_mcp_conformance.py; the loopback redirect's
hold on its port is checked here with real sockets."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest
from hookstream.testing import LoopbackServer, Response, run_cli
from hookstream_mcp import (
    ClientCredentials,
    MCPAuthError,
    MCPServer,
    MCPServerError,
    MCPToolError,
    OAuth,
    token_path,
)
from hookstream_mcp._auth import LoopbackRedirect  # no public face: OAuth reaches it only through a login
from mcp_kit import MODEL, NEVER

CHALLENGE = ('Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/'
             'oauth-protected-resource/mcp", scope="files:read"')


def refusing(status: int = 401) -> LoopbackServer:
    """An endpoint that answers every request with ``status`` and the challenge, as a protected MCP
    server does before a login (MCP spec, "Authorization" > "Authorization Server Discovery")."""
    answer = Response(b'{"error":"invalid_token"}', status=status, headers={"WWW-Authenticate": CHALLENGE},
                      content_type="application/json")
    return LoopbackServer([answer] * 8)


def test_a_401_keeps_the_status_and_challenge_and_names_what_to_set() -> None:
    with refusing() as srv, pytest.raises(MCPAuthError) as caught:
        MCPServer.http(srv.url + "/mcp").start()
    err = caught.value
    assert isinstance(err, MCPServerError) and err.code == "mcp_auth_error"
    assert err.status == 401 and err.www_authenticate == CHALLENGE
    assert "HTTP 401" in err.message and CHALLENGE in err.message
    assert "--mcp-auth oauth" in err.message and "HOOKSTREAM_MCP_CLIENT_ID" in err.message
    assert "auth=OAuth()" in err.message
    assert "-32603" not in err.message


def test_a_refused_authorization_header_says_so_without_showing_it() -> None:
    with refusing(403) as srv, pytest.raises(MCPAuthError) as caught:
        MCPServer.http(srv.url + "/mcp", headers={"Authorization": "Bearer sk-very-secret"}).start()
    assert caught.value.status == 403
    assert "Authorization header was refused" in caught.value.message
    assert "sk-very-secret" not in caught.value.message


def test_the_cli_reports_a_401_in_one_line() -> None:
    with refusing() as srv:
        res = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--mcp", srv.url + "/mcp"],
                      env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 1
    assert "HTTP 401" in res.output and "--mcp-auth oauth" in res.output
    assert "Traceback" not in res.output


def test_client_credentials_from_the_cli_need_both_variables() -> None:
    res = run_cli(["chat", "hi", "--model", MODEL, "--mcp", "http://127.0.0.1:9/mcp", "--mcp-auth",
                   "client-credentials"], env={"OPENAI_API_KEY": "sk-test", "HOOKSTREAM_MCP_CLIENT_ID": "app"})
    assert res.exit_code == 2
    assert "HOOKSTREAM_MCP_CLIENT_ID and HOOKSTREAM_MCP_CLIENT_SECRET" in res.output


def test_secrets_stay_out_of_reprs_and_file_names() -> None:
    oauth = OAuth(client_id="app", client_secret="s3cret-value")
    creds = ClientCredentials("app", "s3cret-value")
    assert "s3cret-value" not in repr(oauth) + repr(creds)
    assert "s3cret" not in str(token_path("https://mcp.example.com/mcp?key=s3cret"))
    with pytest.raises(ValueError, match="either client_secret or private_key"):
        ClientCredentials("app")


def test_without_the_plugin_mcp_auth_says_to_install_it() -> None:
    # A new process: the plugin is blocked (as when not installed) before the registry loads.
    res = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "--model", MODEL, "--mcp-auth", "oauth"],
                         capture_output=True, text=True, timeout=NEVER,
                         env={**os.environ, "OPENAI_API_KEY": "sk-test", "HOOKSTREAM_BLOCK_PLUGINS": "mcp"})
    assert res.returncode == 2
    assert "--mcp-auth needs the hookstream-mcp plugin" in res.stderr


def test_a_token_refused_mid_session_names_the_status() -> None:
    """A server that accepted the session, then answers a tool call with 401 (a revoked token): the call
    fails with the status and challenge, not "MCP error -32603". The server is the MCP SDK's own
    streamable HTTP app, served by uvicorn on a free port, behind a gate that can be closed."""
    uvicorn = pytest.importorskip("uvicorn")
    from mcp.server.mcpserver import MCPServer as SDKServer

    sdk = SDKServer("gated")

    @sdk.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    app = sdk.streamable_http_app()
    closed = threading.Event()

    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and closed.is_set():
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"www-authenticate", CHALLENGE.encode()), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    config = uvicorn.Config(gate, host="127.0.0.1", port=0, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:  # uvicorn sets it once listening; a thread that ended failed to start
            assert thread.is_alive(), "uvicorn did not start"
            thread.join(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        with MCPServer.http(f"http://127.0.0.1:{port}/mcp") as mcp:
            assert mcp.call("ping") == "pong"
            closed.set()
            with pytest.raises(MCPToolError) as caught:
                mcp.call("ping")
    finally:
        server.should_exit = True
        thread.join(NEVER)
    assert f"refused the call to 'ping': HTTP 401 (WWW-Authenticate: {CHALLENGE})" in caught.value.message


def _bind(port: int, reuse: bool) -> None:
    with socket.socket() as other:
        if reuse:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", port))


def _visit(url: str) -> int:
    """GET ``url`` as the browser does at the end of a login; the status of the answer."""
    try:
        with urllib.request.urlopen(url, timeout=NEVER) as page:
            return int(page.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_a_new_login_port_is_held_from_registration_until_closed() -> None:
    """The redirect URI is registered before the login starts: its port, picked when the provider is
    built, stays bound until the session ends, so no other program (many clients starting at once) can
    take it in between and leave the login without a way back. A redirect from another login (wrong
    ``state``) does not end this one."""
    seen: list[int] = []
    loopback = LoopbackRedirect(0, timeout=NEVER)
    loopback.reserve()
    port = urlsplit(loopback.redirect_uri).port
    assert port
    try:
        for reuse in (False, True):
            with pytest.raises(OSError) as taken:
                _bind(port, reuse)
            assert taken.value.errno == errno.EADDRINUSE

        def browser(url: str) -> None:  # the authorization server's redirect, as a browser follows it
            seen.append(_visit(f"{loopback.redirect_uri}?code=old&state=another-login"))
            seen.append(_visit(f"{loopback.redirect_uri}?code=c0de&state=s1"))

        async def login() -> Any:
            loopback.open_url = browser
            await loopback.redirect("http://127.0.0.1:9/authorize?response_type=code&state=s1")
            return await loopback.callback()

        result = asyncio.run(login())
        assert (result.code, result.state) == ("c0de", "s1") and seen == [400, 200]
        with pytest.raises(OSError):  # still held after the login: a scope step-up logs in again on it
            _bind(port, reuse=True)
    finally:
        loopback.close()
    _bind(port, reuse=True)  # given back


def test_a_busy_registered_port_is_named() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        loopback = LoopbackRedirect(port, open_url=lambda url: None, timeout=NEVER)
        assert loopback.reserve() is False
        with pytest.raises(OSError, match=f"redirect port {port} is in use"):
            asyncio.run(loopback.redirect("http://127.0.0.1:9/authorize?state=s"))
