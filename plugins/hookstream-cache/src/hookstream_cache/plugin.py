"""The ``hookstream`` entry point: registers the ``cache`` run plugin, the ``--cache`` and
``--cache-path`` options of ``chat``, ``batch`` and ``serve``, and the ``hookstream cache`` commands.

Nothing here implements a run hook, so the cache is off until a run asks for it. Importing this module
imports neither SQLite nor the cache itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import RunPluginRegistrar, hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

RUN_COMMANDS = ("chat", "batch", "serve")
"""The CLI commands that run chats and so take ``--cache``."""


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    register("cache", "hookstream_cache.cache:Cache")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command not in RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--cache"], is_flag=True, default=False,
                     help="Answer model calls from the response cache (hookstream-cache) and store complete "
                          "responses there; see `hookstream cache stats`."),
        click.Option(["--cache-path"], type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="The cache's SQLite file (implies --cache; default: responses.sqlite3 in the user "
                          "cache directory)."),
        *([click.Option(["--cache-shared"], is_flag=True, default=False,
                        help="One cache for every principal (implies --cache); without it each authenticated "
                             "principal is answered from their own entries only.")] if command == "serve" else []),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    path = options.get("cache_path")
    shared = bool(options.get("cache_shared"))
    if not options.get("cache") and path is None and not shared:
        return
    from .cache import Cache

    # On serve, each run's cache is Cache.for_principal(the run's principal), unless --cache-shared.
    cache = Cache(path, per_principal=command == "serve" and not shared)
    run.settings = run.settings.evolve(plugins=(*run.settings.plugins, cache))


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .cli import cache

    cli.add_command(cache)
