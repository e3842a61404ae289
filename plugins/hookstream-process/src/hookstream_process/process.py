"""``hookstream process EVENTS.jsonl [--strategy NAME]``: replay an AG-UI event log through the
StreamProcessor, print the final UI messages as JSON and, on stderr, how often each callback fired.

The tool a frontend author uses to debug a recorded run. Input: one AG-UI event JSON object per line
(blank lines skipped). A line that is not an event stops the replay with exit status 1 and a message
naming the line; the messages built so far are still printed.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click
from hookstream.errors import HookstreamError


@click.command("process")
@click.argument("events_file", metavar="EVENTS.jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--strategy", default="immediate", show_default=True,
              help="Chunk strategy name (see `hookstream plugins`).")
def command(events_file: Path, strategy: str) -> None:
    """Replay EVENTS.jsonl (AG-UI events, one JSON object per line) through the stream processor."""
    # Here, not at the top: the command line imports this module to list its commands.
    from hookstream import StreamProcessor
    from hookstream.events import from_dict

    counts: Counter[str] = Counter()

    errors: list[Any] = []

    def count(name: str) -> Any:
        def callback(*args: Any) -> None:
            counts[name] += 1
            if name == "on_error":
                errors.append(args[0])

        return callback

    names = ("on_messages_change", "on_text_update", "on_tool_call_state_change", "on_stream_end",
             "on_error", "on_tool_call", "on_approval_request", "on_custom_event")
    try:
        processor = StreamProcessor(strategy=strategy, **{n: count(n) for n in names})
    except HookstreamError as exc:
        raise click.ClickException(exc.message) from None
    failure: str | None = None
    with events_file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                event = from_dict(json.loads(line))
            except Exception as exc:  # any unreadable line: report it, keep what was built
                failure = f"{events_file}:{number}: not an AG-UI event: {type(exc).__name__}: {exc}"
                break
            unusable = processor.stats.unusable_events
            processor.process_chunk(event)
            if processor.stats.unusable_events > unusable and failure is None:
                # An event the processor could not apply (a malformed CUSTOM value): it went on, as
                # the processor does; the first such line is named and the exit code says so.
                failure = f"{events_file}:{number}: {errors[-1].message}"
    processor.finalize()
    click.echo(json.dumps([m.to_dict() for m in processor.messages], ensure_ascii=False, indent=2))
    for name in names:
        click.echo(f"{name}: {counts[name]}", err=True)
    s = processor.stats
    click.echo(f"dropped_args: {s.dropped_args}  duplicate_starts: {s.duplicate_starts}  "
               f"argument_parse_errors: {s.argument_parse_errors}  orphan_results: {s.orphan_results}", err=True)
    if failure is not None:
        click.echo(failure, err=True)
        sys.exit(1)
