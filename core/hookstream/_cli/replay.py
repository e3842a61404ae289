"""``hookstream replay FILE [--provider NAME]``: one recorded body through a real adapter over loopback."""

from __future__ import annotations

from pathlib import Path

import click

from .._events import RunError
from .._replay_body import body_problem, guess_provider, replay_body, unread_stream_problem
from .render import OUTPUT_CHOICES, print_call


@click.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--provider", "provider_name", default=None,
              help="Provider plugin name, e.g. openai, anthropic; default: the one the body looks like.")
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--fragment", type=int, default=0, help="Split the body into random pieces of up to N bytes.")
@click.option("--seed", type=int, default=0, help="Seed for --fragment.")
def command(file: Path, provider_name: str | None, output: str, fragment: int, seed: int) -> None:
    """Serve FILE (a recorded response body) on a loopback HTTP server and run PROVIDER's adapter on it.

    Exits 1 when the call ended in an error (``RUN_ERROR``), as ``hookstream chat`` does, and for a file
    that is no stream of PROVIDER's (empty, JSON, another provider's events), saying what was expected."""
    body = file.read_bytes()
    if provider_name is None:
        provider_name = guess_provider(body)
        if provider_name is None:
            raise click.UsageError(f"{file}: the body does not say whose stream it is: give --provider NAME")
        click.echo(f"replaying as --provider {provider_name} (what the body looks like)", err=True)
    problem = body_problem(provider_name, body)
    if problem is not None:
        raise click.ClickException(f"{file}: {problem}")
    events, step = replay_body(provider_name, body, fragment=(1, fragment) if fragment > 0 else None, seed=seed)
    problem = unread_stream_problem(provider_name, body, step)
    if problem is not None and output == "text":
        raise click.ClickException(f"{file}: {problem}")
    print_call(events, step, output)
    if problem is not None:
        click.echo(f"{file}: {problem}", err=True)
    if step.error is not None or any(isinstance(ev, RunError) for ev in events):
        raise SystemExit(1)
