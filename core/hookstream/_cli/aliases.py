"""``hookstream aliases``: short names for models, usable wherever a ``"PROVIDER:MODEL"`` string is.

``hookstream aliases set fast openai:gpt-4o-mini`` then ``hookstream chat --model fast``; ``aliases list``
(``--json``) shows them, ``aliases remove fast`` forgets one. They live in ``aliases.json`` in the user
directory (``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory); see
:mod:`hookstream._aliases`.
"""

from __future__ import annotations

import json

import click

from .._aliases import aliases_path, load_aliases, remove_alias, set_alias


def _load() -> dict[str, str]:
    try:
        return load_aliases()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("aliases", invoke_without_command=True)
@click.pass_context
def command(ctx: click.Context) -> None:
    """Model aliases: short names for PROVIDER:MODEL strings (hookstream aliases set fast openai:gpt-4o-mini)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object, alias -> model.")
def list_command(as_json: bool = False) -> None:
    """List the aliases."""
    aliases = _load()
    if as_json:
        click.echo(json.dumps(aliases, indent=1))
        return
    if not aliases:
        click.echo(f"no aliases yet ({aliases_path()})")
    width = max((len(a) for a in aliases), default=0)
    for name, model in sorted(aliases.items()):
        click.echo(f"{name:<{width}}  {model}")


@command.command("set")
@click.argument("name")
@click.argument("model")
def set_command(name: str, model: str) -> None:
    """Make NAME mean MODEL (PROVIDER:MODEL)."""
    try:
        set_alias(name, model)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"{name} -> {model}")


@command.command("remove")
@click.argument("name")
def remove_command(name: str) -> None:
    """Forget the alias NAME."""
    _load()
    if not remove_alias(name):
        raise click.ClickException(f"no alias {name!r} (hookstream aliases list shows them)")
    click.echo(f"removed {name}")
