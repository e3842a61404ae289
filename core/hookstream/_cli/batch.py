"""``hookstream batch INPUT.jsonl --model P:M --output OUT.jsonl``: many chats, resumable, rate limited.

Progress goes to stderr: a rich progress bar (done/total, chats per second, ETA, tokens, errors) on
a terminal or with ``--progress``, else one plain line every few seconds and a last one at the end.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .._batch import BatchResult, BatchRun, batch
from .._batch_file import BatchInput, BatchInputError, read_inputs
from .._settings import CLIRun
from .defaults import full_model_name
from .runs import EXIT_INTERRUPTED, RunCommand, configured, print_notes, run_settings

_PLAIN_EVERY = 5.0  # seconds between plain progress lines


class _Tally:
    """What the progress display shows: done, errors, tokens, rate and ETA."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.errors, self.tokens = total, 0, 0, 0
        self.start = time.monotonic()

    def add(self, r: BatchResult) -> None:
        self.done += 1
        self.errors += r.error is not None
        self.tokens += r.total_tokens

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        eta = f"{(self.total - self.done) / rate:.0f} s" if rate > 0 else "?"
        return (f"batch: {self.done}/{self.total} done, {self.errors} errors, {rate:.1f} chats/s, "
                f"{self.tokens} tokens, ETA {eta}")


class _Display:
    """A rich progress bar on a terminal, else plain lines on ``stream``."""

    def __init__(self, tally: _Tally, rich_bar: bool, stream: IO[str]) -> None:
        self.tally, self.stream = tally, stream
        self._last = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if rich_bar:
            self._progress = Progress(
                TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:.1f} chats/s"), TimeElapsedColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), TextColumn("{task.fields[tokens]} tokens"),
                TextColumn("[red]{task.fields[errors]} errors"),
                console=Console(file=stream), transient=False,
            )

    def __enter__(self) -> _Display:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task("batch", total=self.tally.total, rate=0.0, tokens=0, errors=0)
        return self

    def update(self) -> None:
        t = self.tally
        if self._progress is not None and self._task is not None:
            rate = t.done / max(time.monotonic() - t.start, 1e-9)
            self._progress.update(self._task, completed=t.done, rate=rate, tokens=t.tokens, errors=t.errors)
        elif time.monotonic() - self._last >= _PLAIN_EVERY:
            self._last = time.monotonic()
            print(t.line(), file=self.stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self.update()
            self._progress.stop()
        print(self.tally.line(), file=self.stream, flush=True)


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


@contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises :class:`KeyboardInterrupt` while the batch runs, even when this process was started
    with SIGINT ignored (a background job of a shell script, a CI runner): Python keeps an inherited
    ``SIG_IGN`` and would then run the whole batch to its end, where exit code 130 is documented."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def batch_progress(total: int, progress: bool | None) -> Iterator[_Display]:
    """The ``batch`` command's progress on stderr for ``total`` chats (``progress``: the ``--progress``
    flag; ``None``: a bar on a terminal, plain lines otherwise), with Ctrl-C raising
    :class:`KeyboardInterrupt` however the process was started. The display's ``tally`` has ``done``,
    ``errors`` and ``tokens`` to set; ``update()`` shows them. One thread uses it."""
    show_bar = progress if progress is not None else sys.stderr.isatty()
    with _ctrl_c_raises(), _Display(_Tally(total), show_bar, sys.stderr) as display:
        yield display


def _drive(run: BatchRun, inputs: list[BatchInput], output_path: str, progress: bool | None) -> None:
    """Iterate the batch with progress on stderr; exits 130 on Ctrl-C and 1 when --fail-fast stopped it."""
    pending = sum(1 for i in inputs if i.id not in run.done_ids)
    if len(inputs) > pending:
        click.echo(f"resuming: {len(inputs) - pending} of {len(inputs)} ids already in {output_path}", err=True)
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
