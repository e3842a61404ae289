"""The ``hookstream`` command line (click). Each command lives in its own module of this package."""

from __future__ import annotations

import logging
import os

import click

from .. import __version__
from .._errors import HookstreamError


class _Group(click.Group):
    """Turns hookstream's typed errors into a one-line message and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except HookstreamError as exc:
            raise click.ClickException(f"{exc.message} [{exc.code}]") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda c, p, v: _print_versions(c, v),
              help="Show the core's and every plugin's version, then exit.")
@click.option("--debug", is_flag=True, help="Log at DEBUG level to stderr (API keys are never logged).")
def main(debug: bool) -> None:
    """Stream LLM chat with tool calls, as AG-UI events."""
    level = logging.DEBUG if debug or os.environ.get("HOOKSTREAM_DEBUG") else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _print_versions(ctx: click.Context, value: bool) -> None:
    # --version reports the core and each plugin distribution (loading the plugins to find them).
    if not value or ctx.resilient_parsing:
        return
    from .._registry import get_registry

    click.echo(f"hookstream {__version__}")
    seen = set()
    for info in sorted(get_registry().plugins.values(), key=lambda i: i.name):
        key = (info.distribution, info.version)
        if info.distribution and info.distribution != "hookstream" and key not in seen:
            seen.add(key)
            click.echo(f"  {info.distribution} {info.version}")
    ctx.exit()


def _add_commands() -> None:
    # Imported here so that `hookstream --help` lists every command from its own module.
    from . import batch, chat, demo, install, plugins, process, replay, serve

    for module in (batch, chat, demo, plugins, process, replay, serve):
        main.add_command(module.command)
    main.add_command(install.install_command)
    main.add_command(install.uninstall_command)


_add_commands()
