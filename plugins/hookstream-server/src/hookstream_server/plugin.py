"""The ``hookstream`` entry point: registers the ``agui`` provider (hookstream as an AG-UI client) and adds
``hookstream serve`` to the command line. Importing this module
imports neither the WSGI app nor waitress: the command's module loads when the command list is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import ProviderRegistrar, hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .serve import command

    cli.add_command(command, "serve")


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    register("agui", "hookstream_server._agui_client:AGUIProvider")
