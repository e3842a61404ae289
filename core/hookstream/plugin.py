"""The plugin SDK: what a provider, chunk-strategy, tool-executor, stop-condition, observer or
authenticator plugin needs beyond the user face.

A provider plugin subclasses :class:`Provider`, builds an :class:`HTTPRequest` from a
:class:`ModelRequest`, and maps the provider's SSE events to AG-UI events with a
:class:`StreamBuilder`; every plugin registers its parts from functions marked :data:`hookimpl`
(hooks and their arguments: the hook reference ``docs/hooks.rst``, generated from the hook specs).
:class:`ModelCall` runs one model call of a provider as the engine does (retries, time limits, the
provider's error mapping) and :class:`StepAccumulator` folds its events into a :class:`hookstream.StepResult`,
for a plugin's own tests; test helpers are in :mod:`hookstream.testing`.

What users see is not repeated here: import messages (``Message``, ``TextPart``...), tools, stop
conditions, chunk strategies, ``Observer`` and ``get_registry`` from :mod:`hookstream`, events from
:mod:`hookstream.events`, exceptions from :mod:`hookstream.errors`, ``Principal`` from
:mod:`hookstream.server`. The one name on both faces is :class:`Provider` (users annotate what
:func:`hookstream.get_model` returns; plugin authors subclass it). Nothing else in hookstream is needed or
promised to plugins.

Thread safety: each name documents its own; providers are shared between threads, builders are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._agentloop.observe import ModelCallInfo, RetryInfo, RunInfo, ToolInfo
from ._errors import error_for_status
from ._events import parse_arguments
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
from ._json_data import json_loads
from ._lazy import lazy_attributes
from ._messages import coerce_messages, detect_media_type, tool_output_text
from ._prices import ModelCapabilities
from ._processing.processor import resolve_strategy
from ._processing.strategies import TimedChunkStrategy
from ._registry import PluginFailure, PluginInfo, Registry, reset_registry
from ._secrets import SECRET_HEADERS, Secret
from ._stream.accumulate import StepAccumulator, merge_metadata
from ._stream.builder import StreamBuilder, new_id
from ._stream.credentials import RefreshingToken
from ._stream.framing import NDJSON, SSE, Framing, NDJSONFraming, SSEFraming, media_type
from ._stream.provider import CallContext, ModelRequest, OutputFormat, Provider, ToolSpec
from ._stream.transport import DEFAULT_MAX_EVENT_BYTES, HTTPRequest, SSEEvent, default_error_reader

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
    from ._batch import ChatRunner, Runner, chat_options, open_output
    from ._ratelimit import Limiter, Permit
    from ._stream.call import CallOptions, ModelCall

# The batch driver pulls in the whole agent loop, and tool execution, rate limits and model calls are
# for plugins that run tools, batches or their own tests; every plugin imports this module at start-up
# (for ``hookimpl``) and a provider plugin needs none of them, so these names load on first use (PEP 562).
_LAZY = {
    **{name: "hookstream._batch" for name in ("ChatRunner", "Runner", "chat_options", "open_output")},
    **{name: "hookstream._agentloop.executors" for name in ("ToolCallRequest", "ToolExecutor", "error_part",
                                                             "resolve_tool", "run_calls", "run_request",
                                                             "tool_ref")},
    **{name: "hookstream._ratelimit" for name in ("Limiter", "Permit")},
    **{name: "hookstream._stream.call" for name in ("CallOptions", "ModelCall")},
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "NDJSON",
    "SECRET_HEADERS",
    "SSE",
    "AuthenticatorRegistrar",
    "CallContext",
    "CallOptions",
    "ChatRunner",
    "ChunkStrategyRegistrar",
    "Framing",
    "HTTPRequest",
    "Limiter",
    "ModelCall",
    "ModelCallInfo",
    "ModelCapabilities",
    "ModelRegistrar",
    "ModelRequest",
    "NDJSONFraming",
    "ObserverRegistrar",
    "OutputFormat",
    "Permit",
    "PluginFailure",
    "PluginInfo",
    "Provider",
    "ProviderRegistrar",
    "RefreshingToken",
    "Registry",
    "RetryInfo",
    "RunInfo",
    "Runner",
    "SSEEvent",
    "SSEFraming",
    "Secret",
    "StepAccumulator",
    "StopConditionRegistrar",
    "StreamBuilder",
    "TimedChunkStrategy",
    "ToolCallRequest",
    "ToolExecutor",
    "ToolExecutorRegistrar",
    "ToolInfo",
    "ToolSpec",
    "chat_options",
    "coerce_messages",
    "default_error_reader",
    "detect_media_type",
    "error_for_status",
    "error_part",
    "hookimpl",
    "hookspec",
    "json_loads",
    "lazy_attributes",
    "media_type",
    "merge_metadata",
    "new_id",
    "open_output",
    "parse_arguments",
    "reset_registry",
    "resolve_strategy",
    "resolve_tool",
    "run_calls",
    "run_request",
    "tool_output_text",
    "tool_ref",
]
