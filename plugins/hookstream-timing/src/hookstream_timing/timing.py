"""``hookstream chat --timing``: a short timing summary of the run on stderr, from a run observer.

After the run::

    timing: 1.62 s in total; first chunk after 210 ms; 41.3 output tokens/s; cost 0.0000876 USD
      step 1  chat gpt-4o-mini  840 ms  first chunk 210 ms  tool_calls  12 in / 30 out tokens  0.0000198 USD
        tool get_weather       201 ms
        tool convert_currency  203 ms  error
      step 2  chat gpt-4o-mini  550 ms  first chunk 90 ms  stop  80 in / 25 out tokens  0.000027 USD

"first chunk" is the time from sending the request to the first event of the response (retries
included); tokens per second are the provider's output tokens over the time the calls streamed after
their first chunk (``unknown`` when the provider reported no usage). Times are ``time.monotonic()``
differences, shown in milliseconds under a second. Costs are each call's ``usage.cost`` (genai-prices,
``hookstream[prices]``) and their sum; ``cost unknown`` when no call could be priced, ``at least`` when
some could not.

Thread safety: tool observations arrive on executor threads; they are appended under a lock.
"""

from __future__ import annotations

import threading
from typing import Any

import click
from hookstream import Observer, ToolResultPart
from hookstream.events import Cost
from hookstream.plugin import ModelCallInfo, RunInfo, ToolInfo

__all__ = ["Timing"]


class Timing(Observer):
    """Collects the run's model calls and tool calls; :meth:`report` prints the summary, which
    ``hookstream chat --timing`` does as each run ends (one instance serves each turn of an interactive
    chat: a run's start forgets the one before)."""

    def __init__(self, report_at_end: bool = False) -> None:
        self.report_at_end = report_at_end
        self.run: RunInfo | None = None
        self.calls: list[ModelCallInfo] = []
        self.tools: list[tuple[int, ToolInfo]] = []  # (number of model calls before it, tool)
        self._lock = threading.Lock()

    def run_start(self, run: RunInfo) -> None:
        with self._lock:
            self.run, self.calls, self.tools = run, [], []

    def run_end(self, run: RunInfo, result: Any) -> None:
        if self.report_at_end:
            self.report()

    def model_call_start(self, call: ModelCallInfo) -> None:
        self.calls.append(call)

    def tool_end(self, tool: ToolInfo, result: ToolResultPart) -> None:
        with self._lock:
            self.tools.append((len(self.calls), tool))

    def summary(self) -> list[str]:
        """The summary's lines (empty before the run started)."""
        run = self.run
        if run is None:
            return []
        end = run.ended_at or max((c.ended_at or c.started_at for c in self.calls), default=run.started_at)
        first = self.calls[0].first_chunk_at if self.calls else None
        head = [f"timing: {_secs(end - run.started_at)} in total"]
        if first is not None:
            head.append(f"first chunk after {_secs(first - self.calls[0].started_at)}")
        head.append(_rate(self.calls))
        head.append(_cost(self.calls))
        lines = ["; ".join(head)]
        for number, call in enumerate(self.calls, 1):
            parts = [f"  step {number}  chat {call.model}  {_span(call.started_at, call.ended_at)}"]
            if call.first_chunk_at is not None:
                parts.append(f"first chunk {_secs(call.first_chunk_at - call.started_at)}")
            if call.attempts > 1:
                parts.append(f"{call.attempts} attempts")
            parts.append(call.finish_reason or (f"error {call.error_type}" if call.error_type else "unfinished"))
            if call.usage is not None and (call.usage.input_tokens is not None or call.usage.output_tokens is not None):
                parts.append(f"{_n(call.usage.input_tokens)} in / {_n(call.usage.output_tokens)} out tokens")
            if call.usage is not None and call.usage.cost is not None:
                parts.append(str(call.usage.cost))
            lines.append("  ".join(parts))
            with self._lock:
                tools = sorted((t for n, t in self.tools if n == number), key=lambda t: t.started_at)
            width = max((len(t.name) for t in tools), default=0)
            for t in tools:
                flag = "  error" if t.is_error else ""
                lines.append(f"    tool {t.name:<{width}}  {_span(t.started_at, t.ended_at)}{flag}")
        return lines

    def report(self) -> None:
        """Print the summary on stderr."""
        for line in self.summary():
            click.echo(line, err=True)


def _span(start: float, end: float | None) -> str:
    return _secs(end - start) if end is not None else "unfinished"


def _secs(seconds: float) -> str:
    """Milliseconds under a second, else seconds with two decimals."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


_FAKE_HOST = "fake-model.invalid"  # the offline test model's (hookstream.testing): nothing is generated


def _rate(calls: list[ModelCallInfo]) -> str:
    if calls and all(_FAKE_HOST in (c.base_url or "") for c in calls):
        # Its words are counted as tokens and answered in-process: a rate would read like a real model's.
        return "no tokens/s (the test model answers in-process)"
    tokens, seconds = 0, 0.0
    for c in calls:
        out: Any = c.usage.output_tokens if c.usage is not None else None
        if out is None or c.first_chunk_at is None or c.ended_at is None:
            continue
        tokens += out
        seconds += c.ended_at - c.first_chunk_at
    if tokens == 0:
        return "output tokens/s unknown (no usage reported)"
    if seconds <= 0:
        return f"{tokens} output tokens"
    return f"{tokens / seconds:.1f} output tokens/s"


def _cost(calls: list[ModelCallInfo]) -> str:
    costs = [c.usage.cost if c.usage is not None else None for c in calls]
    known = [c for c in costs if c is not None]
    if not known:
        return "cost unknown"
    total = known[0]
    for c in known[1:]:
        total = Cost(total.amount + c.amount, total.currency) if c.currency == total.currency else total
    return f"cost {total}" if len(known) == len(costs) else f"cost at least {total} (some calls not priced)"
