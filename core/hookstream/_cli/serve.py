"""``hookstream serve``: the AG-UI WSGI application (:func:`hookstream.make_app`) on waitress, or on
gunicorn worker processes with ``--workers N`` (``hookstream._cli.workers``).

``--workers 1`` (the default) stays on waitress: one process, no fork, and it runs on Windows too;
gunicorn is Unix-only. ``--store URL`` keeps threads in a database (:func:`hookstream.open_store`);
with several workers a store is what lets any worker serve any turn, so ``--workers N`` without one
uses ``sqlite:///hookstream-threads.db`` (not with ``--demo``, whose recording repeats its tool call ids
every turn).

waitress is a well-kept, pure-Python, multi-threaded WSGI server; with its default ``send_bytes=1`` each
SSE frame the application yields is written to the socket at once (chunked transfer encoding), so events
reach the client as they are produced. It is an optional dependency: ``pip install 'hookstream[serve]'``.
"""

from __future__ import annotations

from typing import Any

import click

from .._agui_server import make_app
from .._memory import ConversationStore, InMemoryStore
from .._sqlstore import open_store
from .chat import load_tool


def build_app(model: str | None, tool_specs: tuple[str, ...], base_url: str | None, system: str | None,
              max_steps: int, demo: bool, delay: float, store: ConversationStore | None = None) -> Any:
    """The WSGI application ``serve`` runs (also what tests mount). Raises :class:`click.UsageError`."""
    if demo:
        from .._agui_demo import demo_factory

        return make_app(stream_factory=demo_factory(delay=delay), store=store)
    if not model:
        raise click.UsageError("--model PROVIDER:MODEL is required (or --demo for the offline demo)")
    tools = [load_tool(s) for s in tool_specs]
    try:
        return make_app(model, tools=tools, base_url=base_url, system=system, max_steps=max_steps, store=store)
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
@click.option("--threads", type=int, default=8, show_default=True, help="Concurrent runs served (per worker).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (gunicorn, Unix); 1 serves in this process (waitress).")
@click.option("--store", "store_url", default=None,
              help="Keep threads in sqlite:///PATH or postgresql://... (default with --workers N: "
                   "sqlite:///hookstream-threads.db, except with --demo).")
@click.option("--demo", is_flag=True, help="Serve the bundled offline demo (no API key, no network).")
@click.option("--delay", type=float, default=0.03, show_default=True, help="--demo: seconds between SSE events.")
def command(model: str | None, tool_specs: tuple[str, ...], base_url: str | None, system: str | None,
            max_steps: int, host: str, port: int, threads: int, workers: int, store_url: str | None, demo: bool,
            delay: float) -> None:
    """Serve AG-UI runs over HTTP (POST a RunAgentInput) and a chat page at /."""
    if workers > 1 and store_url is None and not demo:
        # The demo is a recording: every question replays the same tool call ids, which a store would
        # take for messages it already holds. Without a store it stays stateless (full-history clients).
        store_url = "sqlite:///hookstream-threads.db"
    store = None
    if store_url is not None:
        try:
            store = open_store(store_url)
        except (ValueError, ImportError, OSError) as exc:
            raise click.UsageError(f"--store: {exc}") from None
        except Exception as exc:  # the database's own error (sqlite3.Error, psycopg.Error)
            raise click.UsageError(f"--store: cannot open the store: {type(exc).__name__}: {exc}") from None
    if workers > 1 and isinstance(store, InMemoryStore):
        raise click.UsageError("--store memory: lives in one process; with --workers use sqlite:/// or postgresql://")
    app = build_app(model, tool_specs, base_url, system, max_steps, demo, delay, store)
    if workers > 1:
        from .workers import run_workers

        run_workers(app, host, port, workers, threads)
        return
    try:
        from waitress.server import create_server
    except ImportError:
        raise click.ClickException("hookstream serve needs waitress: pip install 'hookstream[serve]'") from None
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
