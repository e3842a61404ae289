"""One model call: build the request, stream it, run the adapter, and end in the adapter grammar.

:class:`ModelCall` is the only place that joins transport and adapter. Whatever fails (connect, HTTP
status, dropped connection, malformed chunk, adapter bug, a time limit) the event stream still ends
with exactly one ``RUN_FINISHED`` or ``RUN_ERROR``, after every event that arrived before the failure;
the typed exception is kept on :attr:`ModelCall.exception`.

Retries (see ``hookstream._retry``) happen only before the first byte of a 2xx response: connect
errors and HTTP 408/409/429/5xx, with exponential backoff and jitter or the server's ``Retry-After``.
Once the stream is open nothing is retried (the model may already have produced output).

For the engine's watchdog (``hookstream._timeouts``) the call stamps :attr:`sent_at` when it sends
the request and :attr:`last_event_at` (``time.monotonic()``) when an adapter event arrives and again
when the consumer asks for the next one, so time spent by the consumer is not counted as idle.

Thread safety: iterate a ModelCall on one thread; :meth:`ModelCall.abort` may be called from any other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import requests

from ._errors import CancelledError, ConnectionClosedError, HookstreamError, MalformedChunkError
from ._events import BaseEvent, RunError, RunFinished, RunStarted
from ._provider import CallContext, ModelRequest, Provider
from ._retry import retry_delay
from ._transport import DEFAULT_MAX_EVENT_BYTES, Stream, open_stream

__all__ = ["CallOptions", "ModelCall"]

log = logging.getLogger("hookstream.call")

_TERMINAL = frozenset({RunFinished, RunError})


class CallOptions:
    """Transport settings for model calls. Times are seconds; sizes are bytes.

    ``max_retries`` is how many times a retryable failure before the first byte is retried: 0 by
    default (one attempt, as replays and adapter tests want); ``chat()`` and the engine use 2.
    ``max_retry_wait`` is the longest ``Retry-After`` honoured (a longer one is not retried).
    """

    __slots__ = ("connect_timeout", "max_event_bytes", "max_retries", "max_retry_wait", "read_timeout")

    def __init__(
        self,
        connect_timeout: float | None = 10.0,
        read_timeout: float | None = 300.0,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_retries: int = 0,
        max_retry_wait: float = 60.0,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_event_bytes = max_event_bytes
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait


class ModelCall:
    """Iterate for the call's AG-UI events (adapter grammar).

    ``options=None`` means :class:`CallOptions` defaults: a single attempt, default timeouts.
    """

    def __init__(
        self,
        provider: Provider,
        request: ModelRequest,
        context: CallContext,
        session: requests.Session,
        options: CallOptions | None = None,
    ) -> None:
        self.provider = provider
        self.request = request
        self.context = context
        self.session = session
        self.options = options or CallOptions()
        self.exception: BaseException | None = None
        self.attempts = 0
        self.sent_at: float | None = None
        self.last_event_at: float | None = None
        self._stream: Stream | None = None
        self._cancelled = threading.Event()
        self._reason: BaseException | None = None
        self._lock = threading.Lock()

    def abort(self, reason: BaseException | None = None) -> None:
        """Stop the call from any thread: the pending read (or retry wait) returns at once and the call
        ends with ``RUN_ERROR``: ``reason``'s code (e.g. a :class:`StreamTimeoutError`), by default
        ``cancelled``. The first reason given wins."""
        with self._lock:
            if self._reason is None:
                self._reason = reason if reason is not None else CancelledError("cancelled")
            self._cancelled.set()
            stream = self._stream
        if stream is not None:
            stream.abort()

    def _open(self) -> Stream:
        http_request = self.provider.build_request(self.request)
        log.debug("POST %r", http_request)
        opts = self.options
        attempt = 0
        while True:
            if self._cancelled.is_set():
                raise CancelledError("cancelled before the request was sent")
            self.attempts = attempt + 1
            self.sent_at = time.monotonic()
            try:
                return open_stream(
                    self.session,
                    http_request,
                    connect_timeout=opts.connect_timeout,
                    read_timeout=opts.read_timeout,
                    error_reader=self.provider.read_error,
                    max_event_bytes=opts.max_event_bytes,
                )
            except HookstreamError as exc:
                delay = retry_delay(exc, attempt, max_wait=opts.max_retry_wait) if attempt < opts.max_retries else None
                if delay is None or self._cancelled.is_set():
                    raise
                log.info("retrying %s in %.2f s after %s", http_request.redacted_url(), delay, exc.code)
                # The wait is interruptible: abort() sets the event.
                if self._cancelled.wait(delay):
                    raise CancelledError("cancelled while waiting to retry") from None
                attempt += 1

    def __iter__(self) -> Iterator[BaseEvent]:
        started = False
        mono = time.monotonic
        try:
            stream = self._open()
            with self._lock:
                self._stream = stream
                cancelled = self._cancelled.is_set()
            if cancelled:
                stream.abort()
            try:
                for event in self.provider.parse_stream(stream.events(), self.context):
                    t = type(event)
                    if t is RunStarted:
                        started = True
                        yield event
                        continue
                    self.last_event_at = mono()
                    yield event
                    if t in _TERMINAL:
                        return
                    self.last_event_at = mono()
            finally:
                stream.close()
            if self._cancelled.is_set():
                raise CancelledError("cancelled")
            raise ConnectionClosedError("stream ended before the provider's final event")
        except GeneratorExit:
            self.abort()
            raise
        except Exception as raised:
            exc: BaseException = raised
            if self._cancelled.is_set():
                exc = self._reason or CancelledError("cancelled")
            if not isinstance(exc, HookstreamError) and not isinstance(exc, ValueError):
                log.exception("adapter %s failed", self.provider.name)
            self.exception = exc
            if not started:
                yield RunStarted(self.context.thread_id, self.context.run_id)
            yield RunError(_message(exc), code=_code(exc))


def _code(exc: BaseException) -> str:
    if isinstance(exc, HookstreamError):
        return exc.code
    if isinstance(exc, ValueError):
        return "invalid_request"
    return "adapter_error"


def _message(exc: BaseException) -> str:
    if isinstance(exc, MalformedChunkError):
        return exc.message
    if isinstance(exc, HookstreamError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"
