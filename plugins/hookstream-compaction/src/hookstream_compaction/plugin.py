"""The ``hookstream`` entry point: registers the ``compaction`` run plugin and the ``--compact`` options of
``chat``, ``batch`` and ``serve``.

Nothing here implements a run hook, so compaction is off until a run asks for it
(``chat(..., plugins=["compaction"])``, ``plugins=[Compaction(...)]``, ``--compact``). Importing this module
does not import the plugin itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import RunPluginRegistrar, hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

RUN_COMMANDS = ("chat", "batch", "serve")
"""The CLI commands that run chats and so take ``--compact``."""


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    register("compaction", "hookstream_compaction.compaction:Compaction")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command not in RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--compact"], is_flag=True, default=False,
                     help="Compact what each step sends when it would pass a share of the model's context window: "
                          "old tool results, then a summary (--compact-summary-model), then a sliding window "
                          "(hookstream-compaction)."),
        click.Option(["--compact-window"], type=click.IntRange(min=1), default=None, metavar="TOKENS",
                     help="The model's context window in tokens (implies --compact; default: the catalogue's)."),
        click.Option(["--compact-fraction"], type=click.FloatRange(0, 1, min_open=True), default=None,
                     metavar="F", help="The share of the window a request may fill (implies --compact; default 0.8)."),
        click.Option(["--compact-summary-model"], default=None, metavar="MODEL",
                     help="Summarise older turns with this model before sliding the window (implies --compact)."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    window = options.get("compact_window")
    fraction = options.get("compact_fraction")
    summary_model = options.get("compact_summary_model")
    if not options.get("compact") and window is None and fraction is None and summary_model is None:
        return
    from .compaction import Compaction

    settings: dict[str, Any] = {"context_window": window, "summary_model": summary_model}
    if fraction is not None:
        settings["max_fraction"] = fraction
    run.settings = run.settings.evolve(plugins=(*run.settings.plugins, Compaction(**settings)))
