"""The ``hookstream`` entry point: adds ``hookstream batch``. Importing this module imports neither click
nor rich; the command's module loads when the command line lists or runs commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .cli import command

    cli.add_command(command, "batch")
