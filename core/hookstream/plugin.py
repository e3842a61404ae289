"""The plugin SDK: what a provider, chunk-strategy, tool-executor, stop-condition, observer,
authenticator or run plugin needs beyond the user face.

A provider plugin subclasses :class:`Provider`, builds an :class:`HTTPRequest` from a
:class:`ModelRequest`, and maps the provider's SSE events to AG-UI events with a
:class:`StreamBuilder`; every plugin registers its parts from functions marked :data:`hookimpl`
(hooks and their arguments: the hook reference ``docs/hooks.rst``, generated from the hook specs); a
run plugin's hooks get a :class:`RunContext`, :class:`StepContext`, :class:`ModelCallContext` or
:class:`ToolCallContext`. :class:`ModelCall` runs one model call of a provider as the engine does
(retries, time limits, the provider's error mapping) and :class:`StepAccumulator` folds its events into a
:class:`hookstream.StepResult`, for a plugin's own tests; test helpers are in :mod:`hookstream.testing`.
:func:`user_dir` is where a plugin keeps a user's files (hookstream-mcp's OAuth tokens), :func:`private_dirs`
makes directories 0700 whatever the umask.

What users see is not repeated here: import messages (``Message``, ``TextPart``...), tools, stop
conditions, chunk strategies, ``RunSettings``, ``Observer`` and ``get_registry`` from :mod:`hookstream`,
events from :mod:`hookstream.events`, exceptions from :mod:`hookstream.errors`, ``Principal`` and
``Authenticator`` from :mod:`hookstream.server` (the core's own, loaded without the server plugin). The one
name on both faces is :class:`Provider` (users annotate what :func:`hookstream.get_model` returns; plugin
authors subclass it). For the first-party applications: :func:`approval_id`, :class:`RunCommand` and its
:func:`run_settings`, :func:`configured`, :func:`print_notes`, :func:`full_model_name` (the server);
:func:`count_request`, :func:`local_count`, :func:`prices_available`, :func:`install_command`,
:func:`chat_model` (budget, ``hookstream tokens``);
:func:`estimate_tokens`, :func:`estimate_request_tokens`, :func:`summary_request` (compaction); :func:`read_inputs`,
:func:`run_tool`, :func:`body_session` (provider batch); :func:`load_manifest`,
:func:`bytes_response` (the replay provider).
Nothing else in hookstream is needed or promised to plugins.

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
    RunPluginRegistrar,
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
    from ._agentloop.hooks import ModelCallContext, RunContext, StepContext, ToolCallContext, current_hooks
    from ._agentloop.observe import ModelCallInfo, RetryInfo, RunInfo, ToolInfo, response_ids
    from ._agentloop.tools import run_tool
    from ._agentloop.values import approval_id
    from ._batch import BatchJob, ChatRunner, Runner, open_output
    from ._batch_file import read_inputs
    from ._capabilities import ModelCapabilities
    from ._cli.defaults import chat_model, full_model_name
    from ._cli.runs import RunCommand, configured, print_notes, run_settings
    from ._errors import error_for_status
    from ._estimate import estimate_request_tokens, estimate_tokens
    from ._events import parse_arguments
    from ._install_hint import install_command
    from ._json_data import json_loads
    from ._messages import coerce_messages, detect_media_type, tool_output_text
    from ._prices import priced, prices_available
    from ._processing.processor import resolve_strategy
    from ._processing.strategies import TimedChunkStrategy
    from ._ratelimit import Limiter, Permit
    from ._record import load_manifest
    from ._registry import PluginFailure, PluginInfo, Registry, reset_registry
    from ._secrets import SECRET_HEADERS, Secret
    from ._settings import CLIRun
    from ._stores.history import summary_request
    from ._stream.accumulate import StepAccumulator, merge_metadata
    from ._stream.batch_api import BatchAPI, BatchItem, BatchStatus, send_batch_call
    from ._stream.builder import StreamBuilder, new_id
    from ._stream.call import CallOptions, ModelCall
    from ._stream.count import count_request, local_count
    from ._stream.credentials import RefreshingToken
    from ._stream.framing import NDJSON, SSE, Framing, NDJSONFraming, SSEFraming, media_type
    from ._stream.provider import CallContext, ModelRequest, OutputFormat, Provider, ToolSpec
    from ._stream.tee import body_session, bytes_response
    from ._stream.transport import DEFAULT_MAX_EVENT_BYTES, HTTPRequest, SSEEvent, default_error_reader
    from ._userdir import private_dirs, user_dir

# Every name loads on first use (PEP 562): each plugin's entry point imports this module at start-up for
# ``hookimpl``, and a process that never runs a model (``hookstream --version``, ``hookstream replay``)
# must not pay for the engine, the stream processor or the server to get it. Only the hook markers and
# the registrar types are here at once. Module -> the names it gives.
_SOURCES: dict[str, tuple[str, ...]] = {
    "hookstream._agentloop.hooks": ("ModelCallContext", "RunContext", "StepContext", "ToolCallContext",
                                    "current_hooks"),
    "hookstream._agentloop.observe": ("ModelCallInfo", "RetryInfo", "RunInfo", "ToolInfo", "response_ids"),
    "hookstream._agentloop.tools": ("run_tool",),
    "hookstream._batch_file": ("read_inputs",),
    "hookstream._stream.tee": ("body_session", "bytes_response"),
    "hookstream._record": ("load_manifest",),
    "hookstream._errors": ("error_for_status",),
    "hookstream._estimate": ("estimate_request_tokens", "estimate_tokens"),
    "hookstream._stores.history": ("summary_request",),
    "hookstream._events": ("parse_arguments",),
    "hookstream._install_hint": ("install_command",),
    "hookstream._json_data": ("json_loads",),
    "hookstream._messages": ("coerce_messages", "detect_media_type", "tool_output_text"),
    "hookstream._capabilities": ("ModelCapabilities",),
    "hookstream._prices": ("priced", "prices_available"),
    "hookstream._processing.processor": ("resolve_strategy",),
    "hookstream._processing.strategies": ("TimedChunkStrategy",),
    "hookstream._registry": ("PluginFailure", "PluginInfo", "Registry", "reset_registry"),
    "hookstream._secrets": ("SECRET_HEADERS", "Secret"),
    "hookstream._settings": ("CLIRun",),
    "hookstream._stream.accumulate": ("StepAccumulator", "merge_metadata"),
    "hookstream._stream.builder": ("StreamBuilder", "new_id"),
    "hookstream._stream.call": ("CallOptions", "ModelCall"),
    "hookstream._stream.credentials": ("RefreshingToken",),
    "hookstream._stream.framing": ("NDJSON", "SSE", "Framing", "NDJSONFraming", "SSEFraming", "media_type"),
    "hookstream._stream.batch_api": ("BatchAPI", "BatchItem", "BatchStatus", "send_batch_call"),
    "hookstream._stream.provider": ("CallContext", "ModelRequest", "OutputFormat", "Provider", "ToolSpec"),
    "hookstream._stream.transport": ("DEFAULT_MAX_EVENT_BYTES", "HTTPRequest", "SSEEvent", "default_error_reader"),
    "hookstream._agentloop.executors": (
        "ToolCallRequest", "ToolExecutor", "error_part", "resolve_tool", "run_calls", "run_request", "tool_ref"
    ),
    "hookstream._batch": ("BatchJob", "ChatRunner", "Runner", "open_output"),
    "hookstream._userdir": ("private_dirs", "user_dir"),
    "hookstream._ratelimit": ("Limiter", "Permit"),
    "hookstream._agentloop.values": ("approval_id",),
    "hookstream._cli.defaults": ("chat_model", "full_model_name"),
    "hookstream._cli.runs": ("RunCommand", "configured", "print_notes", "run_settings"),
    "hookstream._stream.count": ("count_request", "local_count"),
}
_LAZY = {name: module for module, names in _SOURCES.items() for name in names}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "NDJSON",
    "SECRET_HEADERS",
    "SSE",
    "AuthenticatorRegistrar",
    "BatchAPI",
    "BatchItem",
    "BatchJob",
    "BatchStatus",
    "CLIRun",
    "CallContext",
    "CallOptions",
    "ChatRunner",
    "ChunkStrategyRegistrar",
    "Framing",
    "HTTPRequest",
    "Limiter",
    "ModelCall",
    "ModelCallContext",
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
    "RunCommand",
    "RunContext",
    "RunInfo",
    "RunPluginRegistrar",
    "Runner",
    "SSEEvent",
    "SSEFraming",
    "Secret",
    "StepAccumulator",
    "StepContext",
    "StopConditionRegistrar",
    "StreamBuilder",
    "TimedChunkStrategy",
    "ToolCallContext",
    "ToolCallRequest",
    "ToolExecutor",
    "ToolExecutorRegistrar",
    "ToolInfo",
    "ToolSpec",
    "approval_id",
    "body_session",
    "bytes_response",
    "chat_model",
    "coerce_messages",
    "configured",
    "count_request",
    "current_hooks",
    "default_error_reader",
    "detect_media_type",
    "error_for_status",
    "error_part",
    "estimate_request_tokens",
    "estimate_tokens",
    "full_model_name",
    "hookimpl",
    "hookspec",
    "install_command",
    "json_loads",
    "lazy_attributes",
    "load_manifest",
    "local_count",
    "media_type",
    "merge_metadata",
    "new_id",
    "open_output",
    "parse_arguments",
    "priced",
    "prices_available",
    "print_notes",
    "private_dirs",
    "read_inputs",
    "reset_registry",
    "resolve_strategy",
    "resolve_tool",
    "response_ids",
    "run_calls",
    "run_request",
    "run_settings",
    "run_tool",
    "send_batch_call",
    "summary_request",
    "tool_output_text",
    "tool_ref",
    "user_dir",
]
