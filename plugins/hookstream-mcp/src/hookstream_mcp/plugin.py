"""Entry point of the ``hookstream`` group: adds ``--mcp COMMAND|URL`` (repeatable) to ``hookstream chat``,
which offers the tools of MCP servers for the run (each server started before the run and stopped when
the command ends, however it ends).

Every hookstream process loads this module, so it imports neither the MCP SDK nor click at the top: they
load in the hook functions, the SDK only when ``--mcp`` is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    import click
    from hookstream import Tool
    from hookstream.plugin import CLIRun

MCP_MISSING = "--mcp needs the hookstream-mcp plugin and the MCP SDK"


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    """``--mcp`` for ``hookstream chat``."""
    if command != "chat":
        return None
    import click

    return [click.Option(
        ["--mcp", "mcp_specs"], multiple=True, metavar="COMMAND|URL",
        help="Offer an MCP server's tools (repeatable; hookstream-mcp): a command line, started for the run "
             "and spoken to over stdio ('uvx mcp-server-time'), or a streamable HTTP URL.")]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    """Start the servers ``--mcp`` names on ``run.stack`` and add their tools to ``run.settings``."""
    specs = tuple(options.get("mcp_specs") or ())
    if command == "chat" and specs:
        tools = start_servers(run, specs)
        run.settings = run.settings.evolve(tools=(*run.settings.tools, *tools))


def start_servers(run: CLIRun, specs: tuple[str, ...]) -> list[Tool]:
    """The tools of the MCP servers ``specs`` name (a command line for stdio, or an ``http(s)://`` URL for
    streamable HTTP), each server started now and registered on ``run.stack``, which stops it when it
    closes. Raises :class:`click.UsageError` for a malformed spec or a missing MCP SDK and
    :class:`click.ClickException` (exit code 1) with the server's message for one that does not start."""
    import click

    try:
        from ._errors import MCPServerError
        from ._server import MCPServer
    except ImportError as exc:
        from hookstream.plugin import install_command

        raise click.UsageError(f"{MCP_MISSING}: {install_command('hookstream-mcp')} ({exc})") from None
    tools: list[Tool] = []
    for spec in specs:
        try:
            server = MCPServer.from_spec(spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--mcp") from None
        try:
            run.stack.enter_context(server)
        except MCPServerError as exc:
            raise click.ClickException(exc.message) from None
        tools += server.tools()
    return tools
