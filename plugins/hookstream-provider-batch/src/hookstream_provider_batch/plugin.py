"""The ``hookstream`` entry point: adds ``--provider-batch``, ``--poll-interval`` and ``--dry-run`` to
``hookstream batch`` and, with ``--provider-batch``, takes the command over (``CLIRun.main``) to send the
batch through the provider's batch API. Importing this module imports neither click nor the driver.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl
from hookstream_batch import EXIT_INTERRUPTED

if TYPE_CHECKING:
    import click
    from hookstream import BatchInput
    from hookstream.plugin import CLIRun


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command != "batch":
        return None
    import click

    return [
        click.Option(["--provider-batch"], is_flag=True,
                     help="Send the inputs through the provider's batch API (half price, answered within 24 h)."),
        click.Option(["--poll-interval"], type=click.FloatRange(min=0), default=30.0, show_default=True,
                     help="Seconds between polls of a --provider-batch batch."),
        click.Option(["--dry-run"], is_flag=True,
                     help="With --provider-batch: print the provider requests and the estimated cost, send nothing."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    if command != "batch" or not (options.get("provider_batch") or options.get("dry_run")):
        return
    import click

    if not options.get("provider_batch"):
        raise click.UsageError("--dry-run goes with --provider-batch")
    if run.main is not None:
        raise click.UsageError("--provider-batch: another plugin runs this batch already")
    run.main = lambda: _main(run, options)


def _main(run: CLIRun, options: dict[str, Any]) -> None:
    """``--provider-batch``: the batch through the provider's batch API (see ``docs/batch.md``)."""
    import click
    from hookstream.plugin import read_inputs

    if run.runner is not None:  # read here: every plugin's configure has run
        raise click.UsageError("--provider-batch sends the batch to the provider: --ray/--workers do not apply")
    inputs = read_inputs(options["input_path"])  # the command has read it once: its errors are said there
    from hookstream.errors import BatchInputError, HookstreamError

    from ._provider_batch import NoBatchAPIError

    output_path = options["output_path"]
    try:
        _drive(run, inputs, options)
    except KeyboardInterrupt:
        click.echo("interrupted: the batch stays submitted; run again to poll it and write its results", err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except NoBatchAPIError as exc:
        raise click.UsageError(str(exc)) from None
    except BatchInputError as exc:
        raise click.UsageError(f"{output_path}: {exc.message}") from None
    except HookstreamError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{output_path}: {exc}") from None
    except (ValueError, LookupError, TypeError, ImportError) as exc:
        raise click.UsageError(str(exc)) from None


def _drive(run: CLIRun, inputs: list[BatchInput], options: dict[str, Any]) -> None:
    import click
    from hookstream import BatchResult
    from hookstream.plugin import BatchStatus
    from hookstream_batch import batch_progress

    from ._provider_batch import dry_run, pending_count, run_provider_batch

    model, output_path, base_url = options["model"], options["output_path"], options["base_url"]
    if options["dry_run"]:
        cost = dry_run(inputs, model, run.settings, sys.stdout, base_url=base_url)
        sys.stdout.flush()
        est = f"{cost['amount']:.6f} {cost['currency']}" if cost is not None else "unknown (no price for this model)"
        click.echo(f"{len(inputs)} requests; estimated cost at the batch price: {est}", err=True)
        return
    pending = pending_count(inputs, output_path)
    if len(inputs) > pending:
        click.echo(f"resuming: {len(inputs) - pending} of {len(inputs)} ids already in {output_path}", err=True)
    with batch_progress(pending, options["progress"]) as display:
        tally = display.tally

        def on_status(status: BatchStatus) -> None:
            tally.done = min(status.done, tally.total)
            display.update()

        def on_result(line: dict[str, Any]) -> None:
            tally.errors += line["error"] is not None
            tally.tokens += BatchResult(line["id"], usage=line["usage"]).total_tokens

        run_provider_batch(inputs, model, run.settings, output_path, base_url=base_url,
                           poll_interval=options["poll_interval"], on_status=on_status, on_result=on_result)
        tally.done = tally.total
