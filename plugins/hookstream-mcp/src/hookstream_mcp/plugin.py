"""Entry point of the ``hookstream`` group: adds ``--mcp COMMAND|URL`` (repeatable) and ``--mcp-auth`` to
``hookstream chat``, which offer the tools of MCP servers for the run (each server started before the run
and stopped when the command ends, however it ends). A server's questions (MCP elicitation) are asked on
the terminal, or declined with a note on stderr when stdin is not a terminal.

Every hookstream process loads this module, so it imports neither the MCP SDK nor click at the top: they
load in the hook functions, the SDK only when ``--mcp`` is given.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    import click
    from hookstream import Tool
    from hookstream.plugin import CLIRun

MCP_MISSING = "--mcp needs the hookstream-mcp plugin and the MCP SDK"
# Where --mcp-auth reads the OAuth client's credentials (never from the command line, which `ps` shows).
CLIENT_ID_ENV = "HOOKSTREAM_MCP_CLIENT_ID"
CLIENT_SECRET_ENV = "HOOKSTREAM_MCP_CLIENT_SECRET"
SCOPE_ENV = "HOOKSTREAM_MCP_SCOPE"


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    """``--mcp`` and ``--mcp-auth`` for ``hookstream chat``."""
    if command != "chat":
        return None
    import click

    return [
        click.Option(
            ["--mcp", "mcp_specs"], multiple=True, metavar="COMMAND|URL",
            help="Offer an MCP server's tools (repeatable; hookstream-mcp): a command line, started for the run "
                 "and spoken to over stdio ('mcp-server-time'), or a streamable HTTP URL."),
        click.Option(
            ["--mcp-auth", "mcp_auth"], type=click.Choice(["oauth", "client-credentials"]), default=None,
            help="Log in to the --mcp URLs that ask for it: 'oauth' opens the browser once (tokens kept in the "
                 f"user directory), 'client-credentials' uses ${CLIENT_ID_ENV} and ${CLIENT_SECRET_ENV} "
                 f"(also optional with 'oauth', for a pre-registered client; ${SCOPE_ENV}: scopes)."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    """Start the servers ``--mcp`` names on ``run.stack`` and add their tools to ``run.settings``."""
    specs = tuple(options.get("mcp_specs") or ())
    if command == "chat" and specs:
        tools = start_servers(run, specs, options.get("mcp_auth"))
        run.settings = run.settings.evolve(tools=(*run.settings.tools, *tools))


def _auth(kind: str | None) -> Any:
    """The ``auth=`` of the HTTP servers for ``--mcp-auth kind``, credentials from the environment."""
    import click

    from ._auth import ClientCredentials, OAuth

    client_id = os.environ.get(CLIENT_ID_ENV) or None
    secret = os.environ.get(CLIENT_SECRET_ENV) or None
    scope = os.environ.get(SCOPE_ENV) or None
    if kind == "oauth":
        return OAuth(client_id=client_id, client_secret=secret, scope=scope)
    if kind == "client-credentials":
        if not client_id or not secret:
            raise click.UsageError(f"--mcp-auth client-credentials needs {CLIENT_ID_ENV} and {CLIENT_SECRET_ENV} "
                                   "set in the environment")
        return ClientCredentials(client_id, secret, scope=scope)
    return None


def _elicitation() -> Any:
    """The terminal prompt when stdin is a terminal, else a handler that declines and says why."""
    from ._elicit import refuse_elicitation, terminal_elicitation

    try:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return terminal_elicitation() if interactive else refuse_elicitation()


def start_servers(run: CLIRun, specs: tuple[str, ...], auth: str | None = None) -> list[Tool]:
    """The tools of the MCP servers ``specs`` name (a command line for stdio, or an ``http(s)://`` URL for
    streamable HTTP, logged in as ``auth`` says: ``"oauth"``, ``"client-credentials"`` or None), each server
    started now and registered on ``run.stack``, which stops it when it closes. Raises
    :class:`click.UsageError` for a malformed spec, missing credentials or a missing MCP SDK and
    :class:`click.ClickException` (exit code 1) with the server's message for one that does not start
    (for a refused login it names ``--mcp-auth`` and the variables to set)."""
    import click

    try:
        from ._errors import MCPServerError
        from ._server import MCPServer
    except ImportError as exc:
        from hookstream.plugin import install_command

        raise click.UsageError(f"{MCP_MISSING}: {install_command('hookstream-mcp')} ({exc})") from None
    login = _auth(auth)
    elicitation = _elicitation()
    # The SDK logs a failed login with its traceback; the command reports it as one line instead (an
    # application that configures logging still gets the records).
    import logging

    logging.getLogger("mcp").addHandler(logging.NullHandler())
    tools: list[Tool] = []
    for spec in specs:
        http = spec.strip().startswith(("http://", "https://"))
        options: dict[str, Any] = {"elicitation": elicitation}
        if http and login is not None:
            options["auth"] = login
        try:
            server = MCPServer.from_spec(spec, **options)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--mcp") from None
        try:
            run.stack.enter_context(server)
        except MCPServerError as exc:
            raise click.ClickException(exc.message) from None
        tools += server.tools()
    return tools


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    """``hookstream mcp serve``: tools and an agent offered as an MCP server (:mod:`hookstream_mcp._cli`)."""
    from ._cli import mcp_group

    cli.add_command(mcp_group)
