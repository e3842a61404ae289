"""A scripted response that holds its stream open until the test lets go, for tests of cancellation and
time limits that must prove the run ended while the server was still sending, without a stopwatch.

:func:`held` gives a :class:`~hookstream.testing.Response` whose writer sends ``pieces``, then SSE
keepalive comments (or ``filler``) every ``keepalive_every`` seconds until :meth:`Hold.release` (or ``NEVER`` seconds,
only so a broken test cannot hang), then ``tail`` and the end of the body. A run that ended with
``hold.body_ended`` still unset ended because of the client (cancel, a time limit), not the server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

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
