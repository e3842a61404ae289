"""``hookstream cache stats`` and ``hookstream cache clear``: the response cache's SQLite file from the
command line (added by :func:`hookstream_cache.plugin.hookstream_register_commands`)."""

from __future__ import annotations

import json

import click

__all__ = ["cache"]

_PATH = click.option("--path", "path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="The cache file (default: responses.sqlite3 in the user cache directory).")


@click.group()
def cache() -> None:
    """The response cache of `--cache` runs (hookstream-cache)."""


@cache.command()
@_PATH
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def stats(path: str | None, as_json: bool) -> None:
    """How many responses the cache holds, their size, and its hits and misses."""
    from .store import store_for

    figures = store_for(path).stats()
    if as_json:
        click.echo(json.dumps(figures.as_dict()))
        return
    click.echo(f"path     {figures.path}")
    click.echo(f"entries  {figures.entries}")
    click.echo(f"bytes    {figures.bytes} (file: {figures.file_bytes})")
    click.echo(f"hits     {figures.hits}")
    click.echo(f"misses   {figures.misses}")


@cache.command()
@_PATH
def clear(path: str | None) -> None:
    """Delete every stored response and reset the counters."""
    from .store import store_for

    store = store_for(path)
    deleted = store.clear()
    click.echo(f"deleted {deleted} response{'s' if deleted != 1 else ''} from {store.path}")
