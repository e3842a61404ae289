"""The plugin SDK: everything a provider, chunk-strategy, tool-executor, stop-condition or observer
plugin needs, in one import.

A provider plugin subclasses :class:`Provider`, builds an :class:`HTTPRequest` from a
:class:`ModelRequest`, and maps the provider's SSE events to AG-UI events with a
:class:`StreamBuilder`; every plugin registers its parts from functions marked :data:`hookimpl`
(hooks and their arguments: the hook reference ``docs/hooks.rst``, generated from the hook specs). Test your
plugin with :mod:`hookstream.testing`. Nothing else in hookstream is needed or promised to plugins.

Thread safety: each name documents its own; providers are shared between threads, builders are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._hookspecs import (
    AuthenticatorRegistrar,
    ChunkStrategyRegistrar,
    ModelRegistrar,
    ObserverRegistrar,
    ProviderRegistrar,
    StopConditionRegistrar,
    ToolExecutorRegistrar,
    hookimpl,
    hookspec,
)
from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._agentloop.executors import (
        ToolCallRequest,
        ToolExecutor,
        error_part,
        resolve_tool,
        run_calls,
        run_request,
        tool_ref,
    )
    from ._agentloop.hooks import ModelCallContext, RunContext, StepContext, ToolCallContext
    from ._agentloop.observe import ModelCallInfo, Observer, RetryInfo, RunInfo, ToolInfo
    from ._agentloop.stop import StopCondition
    from ._agentloop.tools import CancellationToken, Tool, ToolContext
    from ._batch import BatchResult, BatchRun, ChatRunner, Runner, chat_options, open_output
    from ._batch_file import BatchInput
    from ._errors import (
        AGUIInputError,
        AuthenticationError,
        BadRequestError,
        CallbackError,
        CancelledError,
        ConnectError,
        ConnectionClosedError,
        CorruptFrameError,
        HookstreamError,
        HTTPStatusError,
        LineTooLongError,
        MalformedChunkError,
        MissingAPIKeyError,
        MissingCredentialsError,
        NotEventStreamError,
        NotFoundError,
        PartialJSONError,
        PluginError,
        ProviderError,
        RateLimitError,
        ResumeError,
        RunFailedError,
        ServerError,
        StreamTimeoutError,
        ToolError,
        TransportError,
        UnknownPluginError,
        UnknownToolCallError,
        error_for_status,
    )
    from ._events import (
        PROTOCOL_VERSION,
        BaseEvent,
        Cost,
        Custom,
        Event,
        FinishReason,
        Interrupt,
        Outcome,
        Raw,
        ReasoningEncryptedValue,
        ReasoningEnd,
        ReasoningMessageContent,
        ReasoningMessageEnd,
        ReasoningMessageStart,
        ReasoningStart,
        RunError,
        RunFinished,
        RunStarted,
        StepFinished,
        StepStarted,
        TextMessageContent,
        TextMessageEnd,
        TextMessageStart,
        ToolCallArgs,
        ToolCallEnd,
        ToolCallResult,
        ToolCallStart,
        Usage,
        from_json,
        parse_arguments,
        to_json,
    )
    from ._json_data import json_loads
    from ._messages import (
        FilePart,
        Message,
        Part,
        ReasoningPart,
        Role,
        SourcePart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        coerce_messages,
        detect_media_type,
        tool_output_text,
    )
    from ._prices import ModelCapabilities, priced
    from ._processing.processor import resolve_strategy
    from ._processing.strategies import ChunkStrategy, ImmediateStrategy, TimedChunkStrategy
    from ._ratelimit import Limiter, Permit, RateLimiter
    from ._registry import PluginFailure, PluginInfo, Registry, get_registry, reset_registry
    from ._secrets import SECRET_HEADERS, Secret
    from ._server.auth import Principal
    from ._settings import CLIRun, RunSettings
    from ._stream.accumulate import StepResult, merge_metadata
    from ._stream.builder import StreamBuilder, new_id
    from ._stream.credentials import RefreshingToken
    from ._stream.framing import NDJSON, SSE, Framing, NDJSONFraming, SSEFraming, media_type
    from ._stream.provider import CallContext, ModelRequest, OutputFormat, Provider, ToolSpec
    from ._stream.transport import DEFAULT_MAX_EVENT_BYTES, HTTPRequest, SSEEvent, default_error_reader

# Every name loads on first use (PEP 562): each plugin's entry point imports this module at start-up for
# ``hookimpl``, and a process that never runs a model (``hookstream --version``, ``hookstream replay``)
# must not pay for the engine, the stream processor or the server to get it. Only the hook markers and
# the registrar types are here at once. Module -> the names it gives.
_SOURCES: dict[str, tuple[str, ...]] = {
    "hookstream._agentloop.hooks": ("ModelCallContext", "RunContext", "StepContext", "ToolCallContext"),
    "hookstream._agentloop.observe": ("ModelCallInfo", "Observer", "RetryInfo", "RunInfo", "ToolInfo"),
    "hookstream._agentloop.stop": ("StopCondition",),
    "hookstream._errors": (
        "AGUIInputError", "AuthenticationError", "BadRequestError", "CallbackError", "CancelledError",
        "ConnectError", "ConnectionClosedError", "CorruptFrameError", "HookstreamError", "HTTPStatusError",
        "LineTooLongError", "MalformedChunkError", "MissingAPIKeyError", "MissingCredentialsError",
        "NotEventStreamError", "NotFoundError", "PartialJSONError", "PluginError", "ProviderError", "RateLimitError",
        "ResumeError", "RunFailedError", "ServerError", "StreamTimeoutError", "ToolError", "TransportError",
        "UnknownPluginError", "UnknownToolCallError", "error_for_status",
    ),
    "hookstream._events": (
        "PROTOCOL_VERSION", "BaseEvent", "Cost", "Custom", "Event", "FinishReason", "Interrupt", "Outcome", "Raw",
        "ReasoningEncryptedValue", "ReasoningEnd", "ReasoningMessageContent", "ReasoningMessageEnd",
        "ReasoningMessageStart", "ReasoningStart", "RunError", "RunFinished", "RunStarted", "StepFinished",
        "StepStarted", "TextMessageContent", "TextMessageEnd", "TextMessageStart", "ToolCallArgs", "ToolCallEnd",
        "ToolCallResult", "ToolCallStart", "Usage", "from_json", "parse_arguments", "to_json",
    ),
    "hookstream._json_data": ("json_loads",),
    "hookstream._messages": (
        "FilePart", "Message", "Part", "ReasoningPart", "Role", "SourcePart", "TextPart", "ToolCallPart",
        "ToolResultPart", "coerce_messages", "detect_media_type", "tool_output_text",
    ),
    "hookstream._prices": ("ModelCapabilities", "priced"),
    "hookstream._processing.processor": ("resolve_strategy",),
    "hookstream._processing.strategies": ("ChunkStrategy", "ImmediateStrategy", "TimedChunkStrategy"),
    "hookstream._registry": ("PluginFailure", "PluginInfo", "Registry", "get_registry", "reset_registry"),
    "hookstream._secrets": ("SECRET_HEADERS", "Secret"),
    "hookstream._server.auth": ("Principal",),
    "hookstream._settings": ("CLIRun", "RunSettings"),
    "hookstream._stream.accumulate": ("StepResult", "merge_metadata"),
    "hookstream._stream.builder": ("StreamBuilder", "new_id"),
    "hookstream._stream.credentials": ("RefreshingToken",),
    "hookstream._stream.framing": ("NDJSON", "SSE", "Framing", "NDJSONFraming", "SSEFraming", "media_type"),
    "hookstream._stream.provider": ("CallContext", "ModelRequest", "OutputFormat", "Provider", "ToolSpec"),
    "hookstream._stream.transport": ("DEFAULT_MAX_EVENT_BYTES", "HTTPRequest", "SSEEvent", "default_error_reader"),
    "hookstream._agentloop.executors": (
        "ToolCallRequest", "ToolExecutor", "error_part", "resolve_tool", "run_calls", "run_request", "tool_ref",
    ),
    "hookstream._agentloop.tools": ("CancellationToken", "Tool", "ToolContext"),
    "hookstream._batch": ("BatchResult", "BatchRun", "ChatRunner", "Runner", "chat_options", "open_output"),
    "hookstream._batch_file": ("BatchInput",),
    "hookstream._ratelimit": ("Limiter", "Permit", "RateLimiter"),
}
_LAZY = {name: module for module, names in _SOURCES.items() for name in names}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "NDJSON",
    "PROTOCOL_VERSION",
    "SECRET_HEADERS",
    "SSE",
    "AGUIInputError",
    "AuthenticationError",
    "AuthenticatorRegistrar",
    "BadRequestError",
    "BaseEvent",
    "BatchInput",
    "BatchResult",
    "BatchRun",
    "CLIRun",
    "CallContext",
    "CallbackError",
    "CancellationToken",
    "CancelledError",
    "ChatRunner",
    "ChunkStrategy",
    "ChunkStrategyRegistrar",
    "ConnectError",
    "ConnectionClosedError",
    "CorruptFrameError",
    "Cost",
    "Custom",
    "Event",
    "FilePart",
    "FinishReason",
    "Framing",
    "HTTPRequest",
    "HTTPStatusError",
    "HookstreamError",
    "ImmediateStrategy",
    "Interrupt",
    "Limiter",
    "LineTooLongError",
    "MalformedChunkError",
    "Message",
    "MissingAPIKeyError",
    "MissingCredentialsError",
    "ModelCallContext",
    "ModelCallInfo",
    "ModelCapabilities",
    "ModelRegistrar",
    "ModelRequest",
    "NDJSONFraming",
    "NotEventStreamError",
    "NotFoundError",
    "Observer",
    "ObserverRegistrar",
    "Outcome",
    "OutputFormat",
    "Part",
    "PartialJSONError",
    "Permit",
    "PluginError",
    "PluginFailure",
    "PluginInfo",
    "Principal",
    "Provider",
    "ProviderError",
    "ProviderRegistrar",
    "RateLimitError",
    "RateLimiter",
    "Raw",
    "ReasoningEncryptedValue",
    "ReasoningEnd",
    "ReasoningMessageContent",
    "ReasoningMessageEnd",
    "ReasoningMessageStart",
    "ReasoningPart",
    "ReasoningStart",
    "RefreshingToken",
    "Registry",
    "ResumeError",
    "RetryInfo",
    "Role",
    "RunContext",
    "RunError",
    "RunFailedError",
    "RunFinished",
    "RunInfo",
    "RunSettings",
    "RunStarted",
    "Runner",
    "SSEEvent",
    "SSEFraming",
    "Secret",
    "ServerError",
    "SourcePart",
    "StepContext",
    "StepFinished",
    "StepResult",
    "StepStarted",
    "StopCondition",
    "StopConditionRegistrar",
    "StreamBuilder",
    "StreamTimeoutError",
    "TextMessageContent",
    "TextMessageEnd",
    "TextMessageStart",
    "TextPart",
    "TimedChunkStrategy",
    "Tool",
    "ToolCallArgs",
    "ToolCallContext",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolCallRequest",
    "ToolCallResult",
    "ToolCallStart",
    "ToolContext",
    "ToolError",
    "ToolExecutor",
    "ToolExecutorRegistrar",
    "ToolInfo",
    "ToolResultPart",
    "ToolSpec",
    "TransportError",
    "UnknownPluginError",
    "UnknownToolCallError",
    "Usage",
    "chat_options",
    "coerce_messages",
    "default_error_reader",
    "detect_media_type",
    "error_for_status",
    "error_part",
    "from_json",
    "get_registry",
    "hookimpl",
    "hookspec",
    "json_loads",
    "lazy_attributes",
    "media_type",
    "merge_metadata",
    "new_id",
    "open_output",
    "parse_arguments",
    "priced",
    "reset_registry",
    "resolve_strategy",
    "resolve_tool",
    "run_calls",
    "run_request",
    "to_json",
    "tool_output_text",
    "tool_ref",
]
