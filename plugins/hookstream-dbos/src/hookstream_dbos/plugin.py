"""The ``hookstream`` entry point: registers the ``durable`` run plugin, the ``--durable`` and
``--durable-db`` options of ``chat``, and the ``hookstream runs`` commands.

Nothing here implements a run hook, so a run is durable only when it asks. Importing this module imports
neither DBOS nor the plugin itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import RunPluginRegistrar, hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

RUN_COMMANDS = ("chat",)
"""The CLI commands that take ``--durable`` (one run per command: one id)."""


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    register("durable", "hookstream_dbos.durable:Durable")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command == "serve":
        return _serve_options()
    if command not in RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--durable"], "durable", default=None, metavar="ID",
                     help="Run as the durable run ID (hookstream-dbos): after a crash the same command resumes "
                          "it without sending a completed model call or running a completed tool call again; "
                          "a finished ID prints its recorded answer. See `hookstream runs list`."),
        click.Option(["--durable-db"], "durable_db", default=None, metavar="URL",
                     help="The DBOS system database of durable runs (default: $DBOS_SYSTEM_DATABASE_URL, else "
                          "SQLite in $HOOKSTREAM_USER_DIR or the user data directory); postgresql://... serves "
                          "several processes."),
    ]


def _serve_options() -> list[click.Option]:
    import click

    return [
        click.Option(["--durable"], "durable", is_flag=True, default=False,
                     help="Serve durable runs (hookstream-dbos; needs a SQL --store): a run whose worker dies is "
                          "recovered by a live worker and goes on; its client reconnects to the resume route."),
        click.Option(["--durable-db"], "durable_db", default=None, metavar="URL",
                     help="--durable: the DBOS system database (default: $DBOS_SYSTEM_DATABASE_URL, else SQLite in "
                          "$HOOKSTREAM_USER_DIR or the user data directory); postgresql://... for servers on "
                          "several machines."),
        click.Option(["--durable-name"], "durable_name", default=None, metavar="NAME",
                     help="--durable: this server's name in its workers' DBOS executor ids (default: the host "
                          "name); give each server on one machine sharing a --durable-db its own."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    if command == "serve":
        _configure_serve(options, run)
        return
    run_id = options.get("durable")
    if run_id is None:
        if options.get("durable_db") is not None:
            import click

            raise click.UsageError("--durable-db needs --durable ID")
        return
    import click

    from .cli import argv_of
    from .durable import Durable

    # The command line is kept with the run (rebuilt from the parsed options: no secret), so
    # `hookstream runs resume ID` can run it again.
    ctx = click.get_current_context(silent=True)
    meta = {"argv": [command, *argv_of(ctx.command, options)]} if ctx is not None else {}
    plugin = Durable(run_id, options.get("durable_db"), meta)
    run.settings = run.settings.evolve(plugins=(*run.settings.plugins, plugin))


def _configure_serve(options: dict[str, Any], run: CLIRun) -> None:
    if not options.get("durable"):
        if options.get("durable_db") is not None or options.get("durable_name") is not None:
            import click

            raise click.UsageError("--durable-db and --durable-name need --durable")
        return
    from .serve import configure

    configure(options, run)


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .cli import runs

    cli.add_command(runs)
