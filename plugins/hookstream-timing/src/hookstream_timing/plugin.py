"""The ``hookstream`` entry point: adds ``--timing`` to ``hookstream chat``, which puts a
:class:`~hookstream_timing.Timing` observer into the run settings; it prints its summary on stderr as each
run ends. Importing this module imports neither click nor the observer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command != "chat":
        return None
    import click

    return [click.Option(["--timing", "show_timing"], is_flag=True,
                         help="After the run, print time to first chunk, tokens per second and per-step and "
                              "per-tool durations on stderr.")]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    if command == "chat" and options.get("show_timing"):
        from .timing import Timing

        run.settings = run.settings.evolve(observers=(*run.settings.observers, Timing(report_at_end=True)))
