"""A scripted response that holds its stream open until the test lets go, for tests of cancellation and
time limits that must prove the run ended while the server was still sending, without a stopwatch.

:func:`held` gives a :class:`~hookstream.testing.Response` whose writer sends ``pieces``, then SSE
keepalive comments (or ``filler``) every ``keepalive_every`` seconds until :meth:`Hold.release` (or ``NEVER`` seconds,
only so a broken test cannot hang), then ``tail`` and the end of the body. A run that ended with
``hold.body_ended`` still unset ended because of the client (cancel, a time limit), not the server.

For the batch tests (threads and Ray): :func:`hold_after` answers a fixed number of requests and holds the
rest, :func:`kill_after_lines` SIGKILLs a batch once its output has some lines, and :class:`PauseWatch`
holds the requests after a 429 until the batch's limiter counted its pause.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hookstream import BatchRun
from hookstream.testing import Response

# A limit that only keeps a broken test from hanging; it bounds nothing about speed.
NEVER = 30.0
KEEPALIVE = b": keepalive\n\n"


class Hold:
    """The test's side of a held stream."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.body_ended = threading.Event()
        self.client_gone = threading.Event()

    def release(self) -> None:
        self.released.set()


def _chunk(wfile: Any, data: bytes) -> None:
    wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
    wfile.flush()


@contextmanager
def held(pieces: Sequence[bytes], tail: Sequence[bytes] = (), keepalive_every: float | None = 0.05,
         filler: bytes = KEEPALIVE, **response: Any) -> Iterator[tuple[Response, Hold]]:
    """(the response, its hold); the hold is released when the block exits so no server thread lingers."""
    hold = Hold()

    def write(wfile: Any, _sock: Any) -> None:
        try:
            for piece in pieces:
                _chunk(wfile, piece)
            waited = 0.0
            step = keepalive_every or NEVER
            while waited < NEVER and not hold.released.wait(step):
                waited += step
                if keepalive_every:
                    _chunk(wfile, filler)
            for piece in tail:
                _chunk(wfile, piece)
            wfile.write(b"0\r\n\r\n")
            wfile.flush()
            hold.body_ended.set()
        except OSError:
            hold.client_gone.set()
            raise

    try:
        yield Response(writer=write, **response), hold
    finally:
        hold.release()


def hold_after(answered: int, release: threading.Event, limit: float = NEVER) -> Callable[[int, Any], None]:
    """A ``LoopbackServer`` check that lets the first ``answered`` requests through and holds each later
    one until ``release`` is set (``limit`` seconds at most): a batch killed meanwhile has finished at
    most ``answered`` chats, however loaded the machine."""

    def check(index: int, req: Any) -> None:
        if index >= answered:
            release.wait(limit)

    return check


def kill_after_lines(command: list[str], env: dict[str, str], out: Path, lines: int, release: threading.Event,
                     limit: float = NEVER) -> None:
    """Run ``command``, SIGKILL it once ``out`` holds ``lines`` lines (``limit`` seconds at most, a hang
    guard), wait for it, then set ``release`` (the requests :func:`hold_after` holds)."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + limit
        while (not out.exists() or out.read_bytes().count(b"\n") < lines) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        release.set()
        if proc.stderr:
            proc.stderr.close()


class PauseWatch:
    """A 429 test's causal bound, without a stopwatch. :meth:`check` (a ``LoopbackServer`` check) stamps
    each request's arrival in :attr:`stamps` (``(index, time.monotonic())``) and holds every one after the
    first (the 429) until :meth:`watching` saw the batch's ``limiter.pauses`` reach 1, at :attr:`t_ack`:
    no worker runs ahead meanwhile, so a request that arrives after ``t_ack`` and before Retry-After ends
    had passed its limiter check before the pause (at most one per worker thread but the 429's)."""

    def __init__(self, limit: float = NEVER) -> None:
        self.limit = limit  # a hang guard only
        self.stamps: list[tuple[int, float]] = []
        self.acked = threading.Event()
        self.t_ack: float | None = None

    def check(self, index: int, req: Any) -> None:
        self.stamps.append((index, time.monotonic()))
        if index > 0:
            self.acked.wait(self.limit)

    @contextmanager
    def watching(self, run: BatchRun, poll: float) -> Iterator[None]:
        """While the block iterates ``run``, a thread polls ``run.limiter.pauses`` every ``poll`` seconds."""

        def watch() -> None:
            deadline = time.monotonic() + self.limit
            while run.limiter.pauses < 1 and time.monotonic() < deadline:
                time.sleep(poll)
            self.t_ack = time.monotonic()
            self.acked.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield
        finally:
            self.acked.set()
            watcher.join(self.limit)
