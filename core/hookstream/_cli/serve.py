"""``hookstream serve``: the AG-UI WSGI application (:func:`hookstream.make_app`) on waitress.

waitress is a well-kept, pure-Python, multi-threaded WSGI server; with its default ``send_bytes=1`` each
SSE frame the application yields is written to the socket at once (chunked transfer encoding), so events
reach the client as they are produced. It is an optional dependency: ``pip install 'hookstream[serve]'``.
"""

from __future__ import annotations

from typing import Any

import click

from .._agui_server import make_app
from .chat import load_tool


def build_app(model: str | None, tool_specs: tuple[str, ...], base_url: str | None, system: str | None,
              max_steps: int, demo: bool, delay: float) -> Any:
    """The WSGI application ``serve`` runs (also what tests mount). Raises :class:`click.UsageError`."""
    if demo:
        from .._agui_demo import demo_factory

        return make_app(stream_factory=demo_factory(delay=delay))
    if not model:
        raise click.UsageError("--model PROVIDER:MODEL is required (or --demo for the offline demo)")
    tools = [load_tool(s) for s in tool_specs]
    try:
        return make_app(model, tools=tools, base_url=base_url, system=system, max_steps=max_steps)
    except (ValueError, LookupError) as exc:
        raise click.UsageError(str(exc)) from None


@click.command("serve")
@click.option("--model", default=None, help="PROVIDER:MODEL, e.g. openai:gpt-4o-mini.")
@click.option("--tool", "tool_specs", multiple=True, help="A server-side tool as MODULE:FUNC (repeatable).")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--system", default=None, help="System prompt.")
@click.option("--max-steps", type=click.IntRange(min=1), default=10, show_default=True,
              help="Most model calls per run (at least 1).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True, help="0 picks a free port.")
@click.option("--threads", type=int, default=8, show_default=True, help="Concurrent runs served.")
@click.option("--demo", is_flag=True, help="Serve the bundled offline demo (no API key, no network).")
@click.option("--delay", type=float, default=0.03, show_default=True, help="--demo: seconds between SSE events.")
def command(model: str | None, tool_specs: tuple[str, ...], base_url: str | None, system: str | None,
            max_steps: int, host: str, port: int, threads: int, demo: bool, delay: float) -> None:
    """Serve AG-UI runs over HTTP (POST a RunAgentInput) and a chat page at /."""
    try:
        from waitress.server import create_server
    except ImportError:
        raise click.ClickException("hookstream serve needs waitress: pip install 'hookstream[serve]'") from None
    app = build_app(model, tool_specs, base_url, system, max_steps, demo, delay)
    server = create_server(app, host=host, port=port, threads=threads, ident="hookstream",
                           channel_timeout=600)
    bound = server.effective_host, server.effective_port
    # One parseable line on stdout, flushed, so a parent process (tests, scripts) can read the port.
    click.echo(f"hookstream serve: listening on http://{bound[0]}:{bound[1]}/", nl=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
