"""Every hookstream exception: one tree under :class:`HookstreamError`, each class with a stable ``code``
(the ``code`` of the AG-UI ``RUN_ERROR`` event the error becomes; :class:`RunFailedError` carries the code
of the event it stands for).

The main branches: :class:`TransportError` (connect, time limits, a dropped or oversized stream),
:class:`ProviderError` and its :class:`HTTPStatusError` family (what the provider answered),
:class:`MalformedChunkError` (a chunk that does not parse), :class:`PluginError`, :class:`ToolError` and the
input errors (:class:`ResumeError`, :class:`AGUIInputError`, :class:`BatchInputError`...). Where Python
code would catch a built-in exception, the class derives from it too (``MissingCredentialsError`` is a
``ValueError``, ``UnknownPluginError`` a ``LookupError``), as in httpx.

Names load on first use (PEP 562). ``hookstream.HookstreamError`` is the same class as here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._batch_file import BatchInputError
    from ._errors import (
        AgentToolError,
        AGUIInputError,
        AlreadyAnsweredError,
        AuthenticationError,
        BadRequestError,
        BudgetExceededError,
        CallbackError,
        CancelledError,
        ConnectError,
        ConnectionClosedError,
        CorruptFrameError,
        HookstreamError,
        HTTPStatusError,
        LineTooLongError,
        MalformedChunkError,
        MalformedCustomEventError,
        MissingAPIKeyError,
        MissingCredentialsError,
        NotEventStreamError,
        NotFoundError,
        OutputValidationError,
        PartialJSONError,
        PluginError,
        ProviderError,
        RateLimitError,
        ResumeError,
        RunFailedError,
        ServerError,
        SteeringLimitError,
        StoreUnavailableError,
        StreamTimeoutError,
        ToolDefinitionError,
        ToolError,
        TransportError,
        UnknownModelError,
        UnknownPluginError,
        UnknownToolCallError,
        UntrustedToolCallError,
    )

__all__ = [
    "AGUIInputError",
    "AgentToolError",
    "AlreadyAnsweredError",
    "AuthenticationError",
    "BadRequestError",
    "BatchInputError",
    "BudgetExceededError",
    "CallbackError",
    "CancelledError",
    "ConnectError",
    "ConnectionClosedError",
    "CorruptFrameError",
    "HTTPStatusError",
    "HookstreamError",
    "LineTooLongError",
    "MalformedChunkError",
    "MalformedCustomEventError",
    "MissingAPIKeyError",
    "MissingCredentialsError",
    "NotEventStreamError",
    "NotFoundError",
    "OutputValidationError",
    "PartialJSONError",
    "PluginError",
    "ProviderError",
    "RateLimitError",
    "ResumeError",
    "RunFailedError",
    "ServerError",
    "SteeringLimitError",
    "StoreUnavailableError",
    "StreamTimeoutError",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "UnknownModelError",
    "UnknownPluginError",
    "UnknownToolCallError",
    "UntrustedToolCallError",
]

__getattr__, __dir__ = lazy_attributes(
    __name__, {name: "hookstream._batch_file" if name == "BatchInputError" else "hookstream._errors"
               for name in __all__}
)
