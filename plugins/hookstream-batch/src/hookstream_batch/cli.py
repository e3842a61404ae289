"""``hookstream batch INPUT.jsonl --model P:M --output OUT.jsonl``: many chats, resumable, rate limited.

Progress goes to stderr (:mod:`hookstream_batch.progress`). The command line imports this module to list
its commands: the batch itself and rich load when the command runs.
"""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING, Any

import click
from hookstream.errors import BatchInputError
from hookstream.plugin import RunCommand, configured, full_model_name, print_notes, read_inputs, run_settings

from . import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from hookstream import BatchInput, BatchRun
    from hookstream.plugin import CLIRun

__all__ = ["command"]


@click.command("batch", cls=RunCommand)
@click.argument("input_path", metavar="INPUT.jsonl", type=click.Path(exists=True, dir_okay=False))
@click.option("-m", "--model", required=True, help="PROVIDER:MODEL, e.g. openai:gpt-4o-mini.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--output", "output_path", required=True, type=click.Path(dir_okay=False),
              help="JSON Lines results, one per input id; an existing file is resumed (done ids skipped).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Chats running at once (threads).")
@click.option("--rpm", type=click.IntRange(min=1), default=None, help="Most requests per minute (all threads).")
@click.option("--tpm", type=click.IntRange(min=1), default=None, help="Most tokens per minute (all threads).")
@click.option("--fail-fast", is_flag=True, help="Stop at the first chat that ends with an error (exit 1).")
@click.option("--fsync", is_flag=True, help="Flush each output line to disk (survives power loss, slower).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: on a terminal only; plain lines otherwise).")
def command(
    input_path: str,
    model: str,
    base_url: str | None,
    output_path: str,
    concurrency: int,
    rpm: int | None,
    tpm: int | None,
    fail_fast: bool,
    fsync: bool,
    progress: bool | None,
    **run_options: Any,
) -> None:
    """Run one chat per line of INPUT.jsonl ({"id", "prompt"} or {"id", "messages"}) and append
    {"id", "text", "tool_calls", "finish_reason", "usage", "error"} to --output as each finishes.

    Re-running with the same --output skips the ids already written. Exit codes: 0 every input has a
    line (failed chats carry "error"), 1 --fail-fast stopped at an error, 2 usage error, 130 Ctrl-C."""
    try:
        inputs = read_inputs(input_path)
    except BatchInputError as exc:
        raise click.UsageError(f"{input_path}: {exc.message}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read {input_path}: {exc}") from None
    model = full_model_name(model)
    with configured("batch", run_settings(run_options)) as cli_run:
        if cli_run.main is not None:  # a plugin took the command over (hookstream-provider-batch)
            cli_run.main()
            return
        run = _start(cli_run, inputs, model, output_path, base_url=base_url, concurrency=concurrency, rpm=rpm,
                     tpm=tpm, fail_fast=fail_fast, fsync=fsync)
        print_notes(cli_run)
        _drive(run, inputs, output_path, progress)


def _start(cli_run: CLIRun, inputs: list[BatchInput], model: str, output_path: str, **options: Any) -> BatchRun:
    """The batch, with the command's settings and the runner a plugin chose (``None``: threads here)."""
    from hookstream import batch

    try:
        return batch(inputs, model, settings=cli_run.settings, output=output_path, runner=cli_run.runner, **options)
    except BatchInputError as exc:
        raise click.UsageError(f"{output_path}: {exc.message}") from None
    except ConnectionError as exc:  # a runner could not reach its cluster (before OSError: a subclass)
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"cannot open {output_path}: {exc.strerror or exc}") from None
    except (ValueError, LookupError, TypeError, ImportError) as exc:
        raise click.UsageError(str(exc)) from None


def _drive(run: BatchRun, inputs: list[BatchInput], output_path: str, progress: bool | None) -> None:
    """Iterate the batch with progress on stderr; exits 130 on Ctrl-C and 1 when --fail-fast stopped it."""
    pending = sum(1 for i in inputs if i.id not in run.done_ids)
    if len(inputs) > pending:
        click.echo(f"resuming: {len(inputs) - pending} of {len(inputs)} ids already in {output_path}", err=True)
    from .progress import batch_progress

    try:
        with batch_progress(pending, progress) as display, closing(iter(run)) as results:
            for result in results:
                display.tally.add(result)
                display.update()
    except KeyboardInterrupt:
        click.echo("interrupted: finished chats are in the output; run again to do the rest", err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except OSError as exc:  # the output file refused a line (disk full...): the lines before it are whole
        raise click.ClickException(f"writing {output_path} failed: {exc}; run again to resume") from None
    if run.failed:
        click.echo("stopped at the first error (--fail-fast)", err=True)
        raise SystemExit(1)
