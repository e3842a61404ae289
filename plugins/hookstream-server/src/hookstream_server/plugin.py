"""The ``hookstream`` entry point: registers the ``agui`` provider (hookstream as an AG-UI client) and adds
``hookstream serve`` to the command line. Importing this module
imports neither the WSGI app nor waitress: the command's module loads when the command list is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import ProviderRegistrar, hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def hookstream_addhooks(pluginmanager: Any) -> None:
    # ``hookstream serve``'s hooks (hookstream_server.hookspecs), for plugins such as hookstream-dbos.
    from .hookspecs import ServeHookSpecs

    pluginmanager.add_hookspecs(ServeHookSpecs)


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .serve import command

    cli.add_command(command, "serve")


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    register("agui", "hookstream_server._agui_client:AGUIProvider")
