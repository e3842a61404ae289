"""The ``hookstream mcp`` command group: ``hookstream mcp serve`` (docs/mcp.md, "Serving tools over MCP").

``hookstream mcp serve [--tool MODULE:FUNC]... [--mcp COMMAND|URL]... [--agent --model PROVIDER:MODEL
[--system TEXT]] [--http [--host H] [--port P] [--auth-tokens FILE]]`` serves on stdio by default (what
Claude Desktop and IDEs start as a command line), or with ``--http`` as streamable HTTP at
``http://HOST:PORT/mcp``, printing that URL as one line on stdout once it listens. A non-loopback
``--host`` needs ``--auth-tokens`` (or ``$HOOKSTREAM_AUTH_TOKENS``) or ``--jwt-issuer URL
--jwt-audience AUD`` (OIDC bearer JWTs), as ``hookstream serve`` takes them, unless ``--no-auth`` says
otherwise.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any

import click
from hookstream import Tool, tool
from hookstream.errors import HookstreamError

TOKENS_ENV = "HOOKSTREAM_AUTH_TOKENS"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _load_tool(spec: str) -> Tool:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:FUNC, got {spec!r}", param_hint="--tool")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: a module of the current directory
    try:
        obj: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec!r}: {exc}", param_hint="--tool") from None
    if isinstance(obj, Tool):
        return obj
    if not callable(obj):
        raise click.BadParameter(f"{spec!r} is not a function or a tool", param_hint="--tool")
    try:
        made: Tool = tool(obj)
    except (HookstreamError, TypeError, ValueError) as exc:  # a parameter annotation without JSON Schema...
        raise click.BadParameter(str(exc), param_hint="--tool") from None
    return made


def _authenticator(tokens_file: str | None, jwt_issuer: str | None = None, jwt_audience: tuple[str, ...] = (),
                   jwks_url: str | None = None) -> Any:
    """The HTTP server's authenticator, built by ``hookstream serve``'s own function from the same flags
    (bearer tokens from a file or ``$HOOKSTREAM_AUTH_TOKENS``, OIDC JWTs; the first that knows the caller
    wins). ``None`` without any. Raises :class:`click.UsageError` naming the flag; :class:`ImportError`
    without the hookstream-server plugin, whose authenticators these are."""
    from hookstream_server.serve import authenticator

    return authenticator(tokens_file, jwt_issuer, jwt_audience, jwks_url, ())


@click.group("mcp")
def mcp_group() -> None:
    """MCP: serve hookstream tools and agents to MCP clients (hookstream-mcp)."""


@mcp_group.command("serve")
@click.option("--tool", "tool_specs", multiple=True, metavar="MODULE:FUNC", help="A tool to offer (repeatable).")
@click.option("--mcp", "mcp_specs", multiple=True, metavar="COMMAND|URL",
              help="Pass an MCP server's tools through (repeatable): a command line (stdio) or an http(s) URL.")
@click.option("--agent", is_flag=True, help="Also offer the agent (--model, with these tools) as the tool ask(prompt).")
@click.option("-m", "--model", default=None, help="The agent's PROVIDER:MODEL (with --agent).")
@click.option("-s", "--system", default=None, help="The agent's system prompt (with --agent).")
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="--http: the address to listen on.")
@click.option("--port", type=int, default=8765, show_default=True, help="--http: the port (0: a free one).")
@click.option("--auth-tokens", "tokens_file", default=None, metavar="FILE",
              help=f"--http: 'TOKEN PRINCIPAL' lines; requests need Authorization: Bearer TOKEN (or ${TOKENS_ENV}).")
@click.option("--jwt-issuer", default=None, metavar="URL", help="--http: accept bearer JWTs from this OIDC issuer.")
@click.option("--jwt-audience", multiple=True, metavar="AUD", help="--http: the audience the JWTs must name.")
@click.option("--jwks-url", default=None, metavar="URL", help="--http: the issuer's JWKS (default: from discovery).")
@click.option("--no-auth", is_flag=True, help="--http: serve a non-loopback --host without authentication.")
def serve(tool_specs: tuple[str, ...], mcp_specs: tuple[str, ...], agent: bool, model: str | None,
          system: str | None, http: bool, host: str, port: int, tokens_file: str | None, jwt_issuer: str | None,
          jwt_audience: tuple[str, ...], jwks_url: str | None, no_auth: bool) -> None:
    """Serve tools (and with --agent, the agent as ask(prompt)) as an MCP server: stdio, or --http."""
    if agent and not model:
        raise click.UsageError("--agent needs --model PROVIDER:MODEL")
    authenticate = _authenticator(tokens_file, jwt_issuer, jwt_audience, jwks_url) if http else None
    if http and authenticate is None and host not in _LOOPBACK and not no_auth:
        raise click.UsageError(f"refusing to serve on {host} without authentication: give --auth-tokens FILE "
                               "or --jwt-issuer URL --jwt-audience AUD (or --no-auth)")
    from ._errors import MCPServerError
    from ._serve import build_server, serve_http, serve_stdio
    from ._server import MCPServer

    tools = [_load_tool(spec) for spec in tool_specs]
    with contextlib.ExitStack() as stack:
        for spec in mcp_specs:
            try:
                upstream = stack.enter_context(MCPServer.from_spec(spec))
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="--mcp") from None
            except MCPServerError as exc:
                raise click.ClickException(exc.message) from None
            tools += upstream.tools()
        try:
            server = build_server(tools, agent_model=model if agent else None, system=system)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        if not http:
            serve_stdio(server)
            return
        try:
            serve_http(server, host, port, authenticate=authenticate,
                       announce=lambda url: click.echo(f"hookstream mcp serve: listening on {url}"))
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from None
        except KeyboardInterrupt:
            pass
