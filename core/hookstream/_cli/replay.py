"""``hookstream replay FILE --provider NAME``: one recorded body through a real adapter over loopback."""

from __future__ import annotations

from pathlib import Path

import click

from .._events import RunError
from .._replay_body import replay_body
from .render import OUTPUT_CHOICES, print_call


@click.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--provider", "provider_name", required=True, help="Provider plugin name, e.g. openai, anthropic.")
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--fragment", type=int, default=0, help="Split the body into random pieces of up to N bytes.")
@click.option("--seed", type=int, default=0, help="Seed for --fragment.")
def command(file: Path, provider_name: str, output: str, fragment: int, seed: int) -> None:
    """Serve FILE (a recorded response body) on a loopback HTTP server and run PROVIDER's adapter on it.

    Exits 1 when the call ended in an error (``RUN_ERROR``), as ``hookstream chat`` does."""
    events, step = replay_body(
        provider_name, file.read_bytes(), fragment=(1, fragment) if fragment > 0 else None, seed=seed
    )
    print_call(events, step, output)
    if step.error is not None or any(isinstance(ev, RunError) for ev in events):
        raise SystemExit(1)
