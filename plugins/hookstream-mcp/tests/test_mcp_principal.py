"""``hookstream mcp serve`` gives a tool the principal its authenticator verified (``ctx.principal``), as
``hookstream serve`` does (docs/agui-server.md, "What a tool knows of its caller"): per bearer token over
streamable HTTP, through the agent behind ``ask`` too, never from the call's arguments or ``_meta``, and
``None`` over stdio. The server is a real ``hookstream mcp serve`` process; the client the MCP SDK's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from test_mcp_serve import ENV, http_client_session, http_server

WHOAMI = ["--tool", "served_tools:whoami"]  # added to test_mcp_serve's add, test_error_handling and ask


def _tokens(tmp_path: Path) -> str:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice-key alice\nbob-key bob\n")
    return str(tokens)


async def _whoami(client: Client, arguments: dict[str, Any] | None = None, meta: Any = None) -> Any:
    got = await client.call_tool("whoami", arguments or {}, meta=meta)
    assert not got.is_error, got
    return json.loads(got.content[0].text)  # type: ignore[union-attr]


def test_each_token_is_its_own_principal_for_tools_and_the_agent(tmp_path: Path) -> None:
    with http_server(*WHOAMI, "--auth-tokens", _tokens(tmp_path)) as url:
        async def main() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with http_client_session(url, "alice-key") as alice, http_client_session(url, "bob-key") as bob:
                for name, client in (("alice", alice), ("bob", bob), ("alice again", alice)):
                    who = await _whoami(client)
                    asked = await client.call_tool("ask", {"prompt": "who am I?"})
                    assert not asked.is_error, asked
                    seen[name] = (who, asked.content[0].text)  # type: ignore[union-attr]
            return seen

        seen = anyio.run(main)
    for name, (who, answer) in seen.items():
        expected = name.split()[0]
        assert who == {"id": expected, "claims": {}}
        # The test model quotes the tool's result: the agent's own tool call ran for the same caller.
        assert answer.endswith(f'; whoami returned {json.dumps({"id": expected, "claims": {}})}'), answer


def test_a_principal_in_the_arguments_or_meta_changes_nothing(tmp_path: Path) -> None:
    forged = {"id": "root", "claims": {"roles": ["admin"]}}
    with http_server(*WHOAMI, "--auth-tokens", _tokens(tmp_path)) as url:
        async def main() -> list[Any]:
            async with http_client_session(url, "bob-key") as bob:
                return [
                    await _whoami(bob, {"ctx": forged, "note": "I am root"}),
                    await _whoami(bob, {"ctx": {"principal": forged}}, meta={"principal": forged, "claims": forged}),
                    await _whoami(bob, {"note": "x"}, meta={"hookstream.principal": forged, "user": "root"}),
                ]

        answers = anyio.run(main)
    assert answers == [{"id": "bob", "claims": {}}] * 3


def test_without_authentication_a_tool_sees_no_principal(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, env=ENV, args=["-m", "hookstream", "mcp", "serve", *WHOAMI])

    async def over_stdio() -> Any:
        async with Client(stdio_client(params)) as client:
            return await _whoami(client, {"ctx": {"id": "root"}}, meta={"principal": {"id": "root"}})

    assert anyio.run(over_stdio) is None
    with http_server(*WHOAMI) as url:  # loopback HTTP, no --auth-tokens
        async def over_http() -> Any:
            async with http_client_session(url) as client:
                return await _whoami(client, {"ctx": {"id": "root"}})

        assert anyio.run(over_http) is None


def test_a_jwts_verified_claims_reach_the_tool() -> None:
    from test_server_auth import _Issuer  # the core's loopback OIDC issuer (discovery, JWKS, a minter)

    issuer = _Issuer()
    try:
        with http_server(*WHOAMI, "--jwt-issuer", issuer.url, "--jwt-audience", "hookstream-mcp") as url:
            async def main() -> Any:
                async with http_client_session(url, issuer.token(sub="dave", aud="hookstream-mcp")) as client:
                    return await _whoami(client, {"ctx": {"id": "root", "claims": {"sub": "root"}}})

            who = anyio.run(main)
    finally:
        issuer.close()
    assert who["id"] == "dave"
    assert who["claims"]["sub"] == "dave" and who["claims"]["aud"] == "hookstream-mcp"
    assert who["claims"]["iss"] == issuer.url


def test_an_ask_waiting_for_approval_is_resumed_only_by_its_principal(tmp_path: Path) -> None:
    """On a 2026-07-28 session ``ask`` answers with the approval question and a ``request_state``; bob
    retrying with alice's state and an approval is refused, and alice's own retry still resumes her run."""
    import mcp_types as types

    with http_server("--tool", "served_tools:delete_file", "--auth-tokens", _tokens(tmp_path)) as url:
        async def main() -> tuple[Any, Any]:
            async with http_client_session(url, "alice-key") as alice, http_client_session(url, "bob-key") as bob:
                asked = await alice.session.call_tool("ask", {"prompt": "clean up"}, allow_input_required=True)
                assert isinstance(asked, types.InputRequiredResult), asked
                yes = {ident: types.ElicitResult(action="accept", content={"approve": True})
                       for ident in asked.input_requests or {}}
                stolen = await bob.session.call_tool("ask", {"prompt": "clean up"}, request_state=asked.request_state,
                                                     input_responses=yes, allow_input_required=True)
                own = await alice.session.call_tool("ask", {"prompt": "clean up"}, request_state=asked.request_state,
                                                    input_responses=yes, allow_input_required=True)
                return stolen, own

        stolen, own = anyio.run(main)
    assert isinstance(stolen, types.CallToolResult) and stolen.is_error, stolen
    assert "already answered or has expired" in stolen.content[0].text  # type: ignore[union-attr]
    assert isinstance(own, types.CallToolResult) and not own.is_error, own
    assert "delete_file returned deleted" in own.content[0].text  # type: ignore[union-attr]
