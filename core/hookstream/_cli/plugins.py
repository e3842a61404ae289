"""``hookstream plugins``: what is installed, what each plugin registers, and what failed to load."""

from __future__ import annotations

import click

from .._registry import KINDS, get_registry


@click.command("plugins")
def command() -> None:
    """List loaded plugins with their version, hooks and registrations, then any that failed."""
    reg = get_registry()
    for name, info in sorted(reg.plugins.items()):
        dist = f"{info.distribution} {info.version}" if info.distribution else "(not installed)"
        click.echo(f"{name}  [{dist}]")
        click.echo(f"  hooks: {', '.join(info.hooks) or 'none'}")
        for kind in KINDS:
            if kind in info.registered:
                click.echo(f"  {kind.replace('_', ' ')}: {', '.join(info.registered[kind])}")
    for failure in reg.failures:
        click.echo(f"FAILED {failure.name}: {failure.error}")
