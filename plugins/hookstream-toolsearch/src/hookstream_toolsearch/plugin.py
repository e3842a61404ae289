"""The ``hookstream`` entry point: registers the ``tool-search`` run plugin and the ``--tool-search`` and
``--tool-search-threshold`` options of ``chat``, ``batch`` and ``serve``.

Nothing here implements a run hook, so tool search is off until a run asks for it. Importing this module
imports neither the plugin nor its ranking library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import RunPluginRegistrar, hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

RUN_COMMANDS = ("chat", "batch", "serve")
"""The CLI commands that run chats and so take ``--tool-search``."""


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    register("tool-search", "hookstream_toolsearch.search:ToolSearch")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command not in RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--tool-search"], is_flag=True, default=False,
                     help="Above --tool-search-threshold tools (20), send the model a search_tools tool and the "
                          "tools it found instead of every schema (hookstream-toolsearch)."),
        click.Option(["--tool-search-threshold"], type=click.IntRange(min=0), default=None, metavar="N",
                     help="Search tools when a step has more than N tools (implies --tool-search; 0: always)."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    threshold = options.get("tool_search_threshold")
    if not options.get("tool_search") and threshold is None:
        return
    from .search import DEFAULT_THRESHOLD, ToolSearch

    plugin = ToolSearch(DEFAULT_THRESHOLD if threshold is None else threshold)
    run.settings = run.settings.evolve(plugins=(*run.settings.plugins, plugin))
