"""The ``hookstream`` command line (click). Each command lives in its own module of this package,
imported only when that command runs or a help page lists it (click's lazily loaded subcommands), so
a command does not pay for what another one imports (``replay`` never imports rich or the engine)."""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import os
import sys
from typing import Any

import click

from .. import __version__
from .._errors import HookstreamError

# At exit the interpreter's last garbage collections walk every object still alive (modules, classes,
# the registry): about 30 ms of CPU after `hookstream replay`, to free memory the OS frees anyway.
# gc.freeze() takes them out of the collector's reach first. atexit handlers (log flushing, thread
# joins) run as before and reference counting still frees what it frees; only a reference cycle left
# at exit is no longer finalized, which Python does not promise at exit either (no hookstream object
# has a __del__).
atexit.register(gc.freeze)

# Command name -> (module of this package, attribute holding the click command).
_COMMANDS = {
    "aliases": ("aliases", "command"),
    "chat": ("chat", "command"),
    "demo": ("demo", "command"),
    "install": ("install", "install_command"),
    "keys": ("keys", "command"),
    "logs": ("logs", "command"),
    "models": ("models", "command"),
    "plugins": ("plugins", "command"),
    "replay": ("replay", "command"),
    "uninstall": ("install", "uninstall_command"),
}

PLUGIN_COMMANDS = {"serve": "hookstream-server", "process": "hookstream-process", "cache": "hookstream-cache",
                   "batch": "hookstream-batch", "tokens": "hookstream-budget"}
"""Commands first-party plugins add -> the distribution, for the hint when one is used without it."""


class _Group(click.Group):
    """Loads each command from its module on first use; asks plugins for theirs
    (``hookstream_register_commands(cli)``) only when a name is not built in or the commands are listed,
    so a built-in command pays nothing for them; turns hookstream's typed errors, and any other exception
    a command lets escape, into a one-line message and exit code 1, never a traceback (``hookstream
    --debug`` or ``HOOKSTREAM_DEBUG=1`` re-raises the latter, to see where it came from)."""

    _plugins_asked = False
    _registering = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._plugin_commands()
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in _COMMANDS:
            module, attribute = _COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
            super().add_command(command, cmd_name)
        elif command is None and not self._plugins_asked:
            self._plugin_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name in PLUGIN_COMMANDS and self.get_command(ctx, name) is None:
            from .._install_hint import install_command

            dist = PLUGIN_COMMANDS[name]
            raise click.UsageError(f"`hookstream {name}` needs the {dist} plugin: {install_command(dist)}", ctx)
        return super().resolve_command(ctx, args)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if self._registering and (name in _COMMANDS or name in self.commands):
            # A plugin may add commands, never replace one (a built-in or another plugin's).
            logging.getLogger("hookstream.cli").warning("a plugin's command %r is left out: the name is taken",
                                                        name)
            return
        super().add_command(cmd, name)

    def _plugin_commands(self) -> None:
        if self._plugins_asked:
            return
        self._plugins_asked = True
        from .._registry import get_registry

        self._registering = True
        try:
            get_registry().pm.hook.hookstream_register_commands(cli=self)
        except Exception as exc:  # one plugin's bug must not take the built-in commands with it
            click.echo(f"warning: a plugin's hookstream_register_commands failed: {type(exc).__name__}: {exc}",
                       err=True)
        finally:
            self._registering = False

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # Output that waited in stdout's buffer is written at exit, when a reader such as `head` may have
        # gone: flushed here, so that ends quietly too instead of "Exception ignored ... BrokenPipeError".
        try:
            result = super().main(*args, **kwargs)
        except SystemExit:
            _flush_stdout()
            raise
        _flush_stdout()
        return result

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader of stdout is gone (`hookstream models | head -1`): stop quietly, as Unix tools do.
            _silence_stdout()
            raise click.exceptions.Exit(0) from None
        except HookstreamError as exc:
            raise CodedError(exc.message, exc.code) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            # Anything else a command lets escape (a plugin's bug, an OSError nobody expected) is one line
            # and exit code 1 too; --debug or HOOKSTREAM_DEBUG shows the traceback instead.
            if ctx.params.get("debug") or os.environ.get("HOOKSTREAM_DEBUG"):
                raise
            raise click.ClickException(f"{type(exc).__name__}: {exc} (run with hookstream --debug for the traceback)"
                                       ) from None


class CodedError(click.ClickException):
    """A typed error ending a command: ``Error (CODE): MESSAGE`` on stderr, exit 1, the one form a run's
    ``RUN_ERROR`` is printed in too (:func:`error_line`)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code

    def show(self, file: Any = None) -> None:
        click.echo(error_line(self.code, self.format_message()), file=file or sys.stderr)


def error_line(code: str | None, message: str) -> str:
    """How the CLI prints an error with its code (a ``RUN_ERROR``, a :class:`~hookstream.HookstreamError`)."""
    return f"Error ({code}): {message}" if code else f"Error: {message}"


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so nothing more written to it (the interpreter's flush at exit included)
    meets the closed pipe again (the Python docs' recipe for SIGPIPE)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (click's test runner): nothing is flushed to a pipe at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except (OSError, ValueError):
        pass  # closed or detached by the command: nothing to flush


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

