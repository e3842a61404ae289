"""The ``batch`` command's progress on stderr: a rich progress bar (done/total, chats per second, ETA,
tokens, errors) on a terminal or with ``--progress``, else one plain line every few seconds and a last one
at the end (:func:`batch_progress`).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

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

if TYPE_CHECKING:
    from hookstream import BatchResult

__all__ = ["batch_progress"]

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

    @property
    def rate(self) -> float:
        """Chats done per second since the start."""
        return self.done / max(time.monotonic() - self.start, 1e-9)

    def line(self) -> str:
        rate = self.rate
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
            self._progress.update(self._task, completed=t.done, rate=t.rate, tokens=t.tokens, errors=t.errors)
        elif time.monotonic() - self._last >= _PLAIN_EVERY:
            self._last = time.monotonic()
            print(t.line(), file=self.stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self.update()
            self._progress.stop()
        print(self.tally.line(), file=self.stream, flush=True)


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
