"""waitress for ``hookstream serve`` (``--workers 1``): a deadline on reading each request, and connection
limits that hold under a few hundred idle or trickling sockets (slowloris).

waitress reads requests on one I/O thread (asyncore) and hands a request to a worker thread only once it
is complete, so a slow sender never holds a thread; what it holds is a connection, and waitress stops
accepting at ``connection_limit`` (100 by default). Its ``channel_timeout`` closes a connection only
after that many seconds without a byte, so a byte a second keeps one open for ever: 110 such sockets
starved every good client (issue 31). Here:

* a request must arrive by :func:`hookstream_server.limits.request_read_deadline`: request line and
  headers within ``HEADER_SECONDS`` (3 s) of its first byte (of the connection, for its first request),
  the body at ``MIN_BODY_RATE`` (32 KiB/s) of its ``Content-Length``, the whole within
  ``REQUEST_READ_SECONDS`` (120 s); checked every :data:`CLEANUP_INTERVAL` seconds, a late request's
  connection is closed;
* :data:`CONNECTION_LIMIT` connections (and the process's open-file limit raised to fit them, where the
  hard limit allows), polled with ``poll()`` instead of ``select()`` (whose 1,024 descriptors would be
  passed);
* a kept-alive connection idle for :data:`IDLE_SECONDS` is closed (waitress's ``channel_timeout``).

waitress authenticates nothing itself: the application (which authenticates from the headers) sees a
request once its body is in, read on the I/O thread within the deadline above and at most
``max_body`` bytes (larger is ``413`` from its ``Content-Length``).

Thread safety: channels and their deadlines live on waitress's I/O thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

from .limits import HEADER_SECONDS, request_read_deadline

__all__ = ["CLEANUP_INTERVAL", "CONNECTION_LIMIT", "IDLE_SECONDS", "make_server"]

CONNECTION_LIMIT = 1000
"""Open connections waitress holds at most; past it, new ones wait in the listen backlog."""
IDLE_SECONDS = 30
"""Seconds a connection with no request in progress may stay silent (waitress ``channel_timeout``)."""
CLEANUP_INTERVAL = 1
"""Seconds between two checks of every connection's deadline (waitress ``cleanup_interval``)."""


class _DeadlineChannel(HTTPChannel):  # type: ignore[misc]  # waitress ships no type hints
    """An HTTP connection that remembers when the request it is reading began (``time.time()``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hs_started: float | None = self.creation_time  # the first request is due from the connection

    def received(self, data: bytes) -> bool:
        before = self.request
        got = bool(super().received(data))
        if self.request is None:
            self.hs_started = None  # every request in ``data`` is complete
        elif self.request is not before and (before is not None or self.hs_started is None):
            # A request began in ``data`` after another one or after an idle spell: its own clock. (The
            # connection's first request keeps the connection's: waiting before the first byte does not
            # buy time.)
            self.hs_started = time.time()
        return got

    def late(self, now: float) -> bool:
        """Whether the request being read (if any) is past its deadline at ``now``."""
        started = self.hs_started
        if started is None or self.requests:
            return False  # nothing being read, or a request is being served (reading has paused)
        request = self.request
        if request is None or not request.headers_finished:
            return now > started + HEADER_SECONDS
        length = request.content_length if not request.chunked else 1 << 62
        return now > request_read_deadline(started, length)


class _Server(TcpWSGIServer):  # type: ignore[misc]
    channel_class = _DeadlineChannel

    def maintenance(self, now: float) -> None:
        super().maintenance(now)  # idle connections (channel_timeout)
        for channel in list(self.active_channels.values()):
            if isinstance(channel, _DeadlineChannel) and channel.late(now):
                channel.will_close = True  # closed by the I/O loop on its next pass


def _raise_file_limit(wanted: int) -> int:
    """Raise this process's soft limit of open files to ``wanted`` when its hard limit allows; the
    connections that then fit (a margin is kept for files, the database and the model's connections)."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return wanted if soft == resource.RLIM_INFINITY else max(16, min(wanted, soft - 128))


def make_server(app: Callable[..., Any], host: str, port: int, threads: int, max_body: int) -> Any:
    """A waitress server (not yet running: call ``run()``, then ``close()``) for ``app`` on ``host:port``
    with ``threads`` worker threads and the limits of the module docstring; a body announced larger
    than ``max_body`` bytes is answered ``413`` before it is read."""
    limit = _raise_file_limit(CONNECTION_LIMIT + 128)
    import select

    adj = Adjustments(host=host, port=port, threads=threads, ident="hookstream",
                      max_request_body_size=max_body, connection_limit=limit, channel_timeout=IDLE_SECONDS,
                      cleanup_interval=CLEANUP_INTERVAL, asyncore_use_poll=hasattr(select, "poll"))
    # One listening socket: ``host`` is an address or a name resolving to one (serve prints one URL).
    return _Server(app, map={}, adj=adj, sockinfo=adj.listen[0])
