"""When a failed model request may be sent again, and how long to wait first.

Retried, and only before the first byte of a 2xx response: connect errors (including a connect
timeout) and HTTP 408, 409, 429 and 5xx (the set the OpenAI and Anthropic SDKs retry). Also retried:
an overload or rate-limit error the provider reports *inside* a 2xx stream (Anthropic's
``overloaded_error`` event, an OpenAI-compatible ``{"error": {"type": "rate_limit_exceeded"}}`` chunk)
before any content reached the caller; :class:`hookstream.call.ModelCall` enforces that. The wait is
exponential backoff with jitter unless the server sent ``Retry-After`` (RFC 9110 section 10.2.3),
which is honoured as given, up to ``max_wait``.

urllib3's ``Retry.get_backoff_time`` is not used: it returns 0 for the first retry and reads its
attempt count from a response history we do not have, so the small function below does the
computation instead (documented formula, same "full jitter" idea as urllib3's ``backoff_jitter``).

Thread safety: pure functions; ``random`` is only read.
"""

from __future__ import annotations

import random

from .._errors import ConnectError, HTTPStatusError, ProviderError, StreamTimeoutError

__all__ = ["RETRY_ERROR_TYPES", "RETRY_STATUSES", "backoff_delay", "retry_delay", "retryable"]

RETRY_STATUSES = frozenset({408, 409, 429})
"""Client statuses worth a retry; every 5xx is retried too."""

RETRY_ERROR_TYPES = frozenset({
    "overloaded_error",  # Anthropic "error" event (API reference, "Errors": HTTP 529 equivalent)
    "rate_limit_error",  # Anthropic
    "rate_limit_exceeded", "rate_limit", "too_many_requests", "server_overloaded",  # OpenAI-compatible
    "resource_exhausted", "unavailable",  # Gemini google.rpc status names
    "429", "503", "529",  # routers that put the HTTP status in ``error.code`` (OpenRouter)
    # Amazon Bedrock ConverseStream exception frames (API reference, "ConverseStream", Errors)
    "throttlingexception", "serviceunavailableexception", "internalserverexception",
})
"""In-stream provider error types (compared lower-cased) retried like HTTP 429/503/529."""


def backoff_delay(attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0 for the first retry).

    ``min(cap, base * 2**attempt)`` scaled by a random factor in ``[0.5, 1.0)`` ("equal jitter"), so
    clients that failed together do not retry together: 0.25-0.5 s, 0.5-1 s, 1-2 s...
    """
    ceiling = min(cap, base * (2.0**attempt))  # float base: int ** int is typed Any (negative powers)
    return ceiling * (0.5 + random.random() / 2)


def retry_delay(exc: BaseException, attempt: int, *, max_wait: float = 60.0) -> float | None:
    """Seconds to wait before retrying after ``exc``, or ``None`` when it must not be retried.

    ``Retry-After`` wins over the backoff; one longer than ``max_wait`` seconds is not retried (the
    caller gets the typed error and its ``retry_after`` to decide).
    """
    if not retryable(exc):
        return None
    if isinstance(exc, HTTPStatusError) and exc.retry_after is not None:
        return exc.retry_after if exc.retry_after <= max_wait else None
    return backoff_delay(attempt)


def retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure worth sending the request again (to the same model after a wait,
    or to the next model of a :class:`~hookstream.FallbackModel`): a connect error or connect timeout,
    HTTP 408/409/429/5xx (whatever ``Retry-After`` says), or an in-stream provider error whose type
    is in :data:`RETRY_ERROR_TYPES`. Whether content had already reached the caller is the caller's
    business (then nothing is retried)."""
    if isinstance(exc, HTTPStatusError):
        status = exc.status or 0
        return status in RETRY_STATUSES or status >= 500
    if isinstance(exc, ProviderError):
        return (exc.error_type or "").lower() in RETRY_ERROR_TYPES
    if isinstance(exc, StreamTimeoutError):
        return exc.limit == "connect"
    return isinstance(exc, ConnectError)
