"""One model call: build the request, stream it, run the adapter, and end in the adapter grammar.

:class:`ModelCall` is the only place that joins transport and adapter. Whatever fails (connect, HTTP
status, dropped connection, malformed chunk, adapter bug) the event stream still ends with exactly one
``RUN_FINISHED`` or ``RUN_ERROR``, after every event that arrived before the failure; the typed
exception is kept on :attr:`ModelCall.exception`.

Thread safety: iterate a ModelCall on one thread; :meth:`ModelCall.abort` may be called from any other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import requests

from .errors import CancelledError, ConnectionClosedError, HookstreamError, MalformedChunkError
from .events import BaseEvent, RunError, RunFinished, RunStarted
from .provider import CallContext, ModelRequest, Provider
from .transport import DEFAULT_MAX_EVENT_BYTES, Stream, open_stream

__all__ = ["CallOptions", "ModelCall"]

log = logging.getLogger("hookstream.call")


class CallOptions:
    """Transport settings for model calls. Times are seconds; sizes are bytes."""

    __slots__ = ("connect_timeout", "max_event_bytes", "read_timeout")

    def __init__(
        self,
        connect_timeout: float | None = 10.0,
        read_timeout: float | None = 300.0,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_event_bytes = max_event_bytes


class ModelCall:
    """Iterate for the call's AG-UI events (adapter grammar)."""

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
        self._stream: Stream | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    def abort(self) -> None:
        """Cancel the call from any thread: the pending read returns at once and the call ends with
        ``RUN_ERROR`` code ``cancelled``."""
        with self._lock:
            self._cancelled.set()
            stream = self._stream
        if stream is not None:
            stream.abort()

    def __iter__(self) -> Iterator[BaseEvent]:
        started = False
        try:
            http_request = self.provider.build_request(self.request)
            log.debug("POST %r", http_request)
            if self._cancelled.is_set():
                raise CancelledError("cancelled before the request was sent")
            stream = open_stream(
                self.session,
                http_request,
                connect_timeout=self.options.connect_timeout,
                read_timeout=self.options.read_timeout,
                error_reader=self.provider.read_error,
                max_event_bytes=self.options.max_event_bytes,
            )
            with self._lock:
                self._stream = stream
                cancelled = self._cancelled.is_set()
            if cancelled:
                stream.abort()
            try:
                for event in self.provider.parse_stream(stream.events(), self.context):
                    if isinstance(event, RunStarted):
                        started = True
                    yield event
                    if isinstance(event, (RunFinished, RunError)):
                        return
            finally:
                stream.close()
            if self._cancelled.is_set():
                raise CancelledError("cancelled")
            raise ConnectionClosedError("stream ended before the provider's final event")
        except GeneratorExit:
            self.abort()
            raise
        except Exception as exc:
            if self._cancelled.is_set() and not isinstance(exc, CancelledError):
                exc = CancelledError("cancelled")
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
