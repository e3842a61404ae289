"""One model call: build the request, stream it, run the adapter, and end in the adapter grammar.

:class:`ModelCall` is the only place that joins transport and adapter. Whatever fails (connect, HTTP
status, dropped connection, malformed chunk, adapter bug, a time limit) the event stream still ends
with exactly one ``RUN_FINISHED`` or ``RUN_ERROR``, after every event that arrived before the failure;
the typed exception is kept on :attr:`ModelCall.exception`.

Retries (see ``hookstream._stream.retry``): connect errors and HTTP 408/409/429/5xx before the first byte
of a 2xx response, with exponential backoff and jitter or the server's ``Retry-After``; and an overload
or rate-limit error reported inside the stream (``RUN_ERROR`` from the adapter) while nothing but
``RUN_STARTED`` has reached the caller. Once content has been yielded nothing is retried (the caller
already has output); a retried attempt's ``RUN_STARTED`` is not repeated.

Before any request, :meth:`Provider.check_api_key` rejects a missing key for the provider's own
endpoint (``RUN_ERROR`` code ``missing_api_key``). The provider's API key is masked (``***``) in every
error message, exception, ``RUN_ERROR`` event and log line of the call (:meth:`Provider.redact`).

For the engine's watchdog (``hookstream._agentloop.timeouts``) the call stamps :attr:`sent_at` when it sends
the request and :attr:`last_event_at` (``time.monotonic()``) when an adapter event arrives and again
when the consumer asks for the next one, so time spent by the consumer is not counted as idle.

``on_retry(attempt, delay, error)`` is told before each backoff wait (the run hooks' ``hookstream_model_call_retry``;
everything else a run plugin sees of a call it sees in the events, :mod:`hookstream._agentloop.hooks`).

Thread safety: iterate a ModelCall on one thread; :meth:`ModelCall.abort` may be called from any other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import requests

from .._errors import (
    CancelledError,
    ConnectError,
    ConnectionClosedError,
    HookstreamError,
    MalformedChunkError,
    ProviderError,
    redact_exception,
)
from .._events import BaseEvent, RunError, RunFinished, RunStarted, TextMessageContent
from .provider import CallContext, ModelRequest, Provider
from .retry import retry_delay
from .transport import DEFAULT_MAX_EVENT_BYTES, Stream, open_stream

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
        on_retry: Callable[[int, float, BaseException], None] | None = None,
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
        self._on_retry = on_retry

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

    def _open(self, attempt: int) -> tuple[Stream, int]:
        """The open stream and the attempt number it took (``attempt`` counts earlier retries)."""
        provider = self.provider
        provider.check_api_key()
        http_request = provider.build_request(self.request)
        body = http_request.body()
        log.debug("POST %r", http_request)
        opts = self.options
        redact = provider.redact

        def error_reader(status: int, body: bytes) -> tuple[str, str | None]:
            # Masked here, before the transport logs it or builds the exception from it.
            message, etype = provider.read_error(status, body)
            return redact(message), etype

        while True:
            if self._cancelled.is_set():
                raise CancelledError("cancelled before the request was sent")
            self.attempts = attempt + 1
            provider.sign(http_request, body)
            self.sent_at = time.monotonic()
            try:
                return open_stream(
                    self.session,
                    http_request,
                    connect_timeout=opts.connect_timeout,
                    read_timeout=opts.read_timeout,
                    error_reader=error_reader,
                    max_event_bytes=opts.max_event_bytes,
                    framing=provider.framing,
                    body=body,
                ), attempt
            except HookstreamError as exc:
                if isinstance(exc, ConnectError) and provider.connect_hint:
                    exc = ConnectError(f"{exc.message} ({provider.connect_hint})")
                self._wait_to_retry(exc, attempt, http_request.redacted_url())
                attempt += 1

    def _wait_to_retry(self, exc: HookstreamError, attempt: int, where: str) -> None:
        """Return after the backoff when ``exc`` may be retried; else raise ``exc`` (or CancelledError)."""
        opts = self.options
        delay = retry_delay(exc, attempt, max_wait=opts.max_retry_wait) if attempt < opts.max_retries else None
        if delay is None or self._cancelled.is_set():
            raise exc
        log.info("retrying %s in %.2f s after %s", where, delay, exc.code)
        if self._on_retry is not None:
            try:
                self._on_retry(attempt + 1, delay, exc)
            except Exception:  # an observer of retries must not change whether the call is retried
                log.exception("on_retry failed")
        # The wait is interruptible: abort() sets the event.
        if self._cancelled.wait(delay):
            raise CancelledError("cancelled while waiting to retry") from None

    def __iter__(self) -> Iterator[BaseEvent]:
        started = False
        mono = time.monotonic
        try:
            attempt = 0
            while True:
                stream, attempt = self._open(attempt)
                with self._lock:
                    self._stream = stream
                    cancelled = self._cancelled.is_set()
                if cancelled:
                    stream.abort()
                content = False  # an event other than RUN_STARTED reached the caller: no more retries
                retry: ProviderError | None = None
                ended = False  # the provider's last event came: the rest of the body is read, not cut off
                try:
                    parsed = self.provider.parse_stream(stream.events(), self.context)
                    for event in parsed:
                        t = type(event)
                        if t is TextMessageContent:  # most events: none of the checks below concern them
                            content = True
                            self.last_event_at = mono()
                            yield event
                            self.last_event_at = mono()
                            continue
                        if t is RunStarted:
                            if not started:  # a retried attempt's RUN_STARTED is not repeated
                                started = True
                                yield event
                            continue
                        if isinstance(event, RunError):
                            retry = self._retry_for(event, content, attempt)
                            if retry is not None:
                                break
                        content = True
                        self.last_event_at = mono()
                        if t in _TERMINAL:
                            ended = True
                            yield event
                            return
                        yield event
                        self.last_event_at = mono()
                finally:
                    with self._lock:  # first: abort() from another thread must not reach a pooled connection
                        self._stream = None
                    if ended:
                        stream.finish()
                    else:
                        stream.close()
                    # Drop the response now: a traceback of the error below would keep it alive.
                    del stream
                if retry is None:
                    break
                self._wait_to_retry(retry, attempt, "the in-stream error")
                attempt += 1
            if self._cancelled.is_set():
                raise CancelledError("cancelled")
            raise ConnectionClosedError("stream ended before the provider's final event")
        except GeneratorExit:
            self.abort()
            raise
        except Exception as raised:
            yield from self._failed(raised, started)

    def _retry_for(self, event: RunError, content: bool, attempt: int) -> ProviderError | None:
        """An in-stream error (its message masked here): the error to retry it as, when nothing but
        ``RUN_STARTED`` reached the caller and retries are left, else ``None``."""
        event.message = self.provider.redact(event.message)
        if content or attempt >= self.options.max_retries:
            return None
        retry = ProviderError(event.message, error_type=event.code)
        return retry if retry_delay(retry, attempt, max_wait=self.options.max_retry_wait) is not None else None

    def _failed(self, raised: BaseException, started: bool) -> Iterator[BaseEvent]:
        """The call's end after ``raised``: ``RUN_STARTED`` when none was yielded, then ``RUN_ERROR``."""
        exc: BaseException = raised
        if self._cancelled.is_set():
            exc = self._reason or CancelledError("cancelled")
        redact = self.provider.redact
        # One place masks the API key in whatever the failure carries: provider text echoed in an
        # HTTP error body, the first bytes of a non-stream body, an adapter's exception.
        redact_exception(exc, redact)
        if not isinstance(exc, HookstreamError) and not isinstance(exc, ValueError):
            log.exception("adapter %s failed", self.provider.name, exc_info=exc)
        self.exception = exc
        if not started:
            yield RunStarted(self.context.thread_id, self.context.run_id)
        yield RunError(redact(_message(exc)), code=_code(exc))


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
