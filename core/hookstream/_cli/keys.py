"""``hookstream keys``: API keys stored in the user directory, as simonw/llm's ``llm keys``.

``hookstream keys set openai`` asks for the key with hidden input on a terminal, or reads it from stdin
when that is a pipe (``pass show openai | hookstream keys set openai``); ``keys list`` prints the provider
names that have one, never a key; ``keys path`` prints where they are kept (``keys.json``, mode 0600);
``keys remove NAME`` forgets one. A provider uses its stored key when it is given no ``api_key`` and
none of its environment variables is set (:mod:`hookstream._keys`). There is no command that prints a
key back.
"""

from __future__ import annotations

import sys

import click

from .._keys import key_names, keys_path, remove_key, set_key


def _names() -> list[str]:
    try:
        return key_names()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("keys", invoke_without_command=True)
@click.pass_context
def command(ctx: click.Context) -> None:
    """Stored API keys (hookstream keys set openai); an environment variable, when set, wins."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@command.command("list")
def list_command() -> None:
    """List the providers that have a stored key (names only, never the keys)."""
    names = _names()
    if not names:
        click.echo(f"no keys stored yet ({keys_path()}); hookstream keys set PROVIDER stores one", err=True)
    for name in names:
        click.echo(name)


@command.command("path")
def path_command() -> None:
    """Print the path of the keys file."""
    click.echo(str(keys_path()))


@command.command("set")
@click.argument("provider")
def set_command(provider: str) -> None:
    """Store the API key of PROVIDER (openai, anthropic, gemini...): typed with hidden input on a terminal,
    else read from stdin."""
    if sys.stdin.isatty():
        value = click.prompt("Enter key", hide_input=True, err=True, default="", show_default=False)
    else:
        value = sys.stdin.read()
    try:
        set_key(provider, value)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"stored the {provider} key in {keys_path()}", err=True)


@command.command("remove")
@click.argument("provider")
def remove_command(provider: str) -> None:
    """Forget the stored key of PROVIDER."""
    _names()
    if not remove_key(provider):
        raise click.ClickException(f"no stored key for {provider!r} (hookstream keys list shows them)")
    click.echo(f"removed the {provider} key", err=True)
