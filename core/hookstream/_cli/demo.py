"""``hookstream demo``: the main job, offline, on the bundled multi-step conversation."""

from __future__ import annotations

import sys

import click

from .._demo import PROMPT, demo_stream
from .live import LiveRenderer
from .render import OUTPUT_CHOICES, print_run


@click.command("demo")
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--delay", type=float, default=0.03, show_default=True, help="Seconds between streamed SSE events.")
def command(output: str, delay: float) -> None:
    """Play a two-step tool-calling chat through the real adapter, engine and processor, offline."""
    server, stream = demo_stream(delay=delay)
    try:
        if output == "text":
            click.echo(f"> {PROMPT}\n")
        if output == "text" and sys.stdout.isatty():
            code = LiveRenderer().render(stream)  # Markdown as it streams, spinners while tools run
        else:
            code = print_run(stream, output)
    finally:
        server.stop()
    raise SystemExit(code)
