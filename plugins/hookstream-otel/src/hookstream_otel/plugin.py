"""The ``hookstream`` entry point (``otel``): every run's spans and metrics, through the run hooks.

The module-level hooks below are on for every run (a plugin's module-level run hooks always are). At
each run start they ask :func:`global_plugin` whether OpenTelemetry is configured in this process; when
it is not, the run keeps nothing and every later hook hands the inner result back untouched (no span,
no OpenTelemetry import, no per-event work). When it is, the run is traced by one
:class:`~hookstream_otel.hooks.OtelPlugin` on the global providers (see that module for the spans).

Importing this module imports neither OpenTelemetry nor :mod:`hookstream_otel.hooks`: every hookstream
process loads the entry point, and only runs need them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    from hookstream import ToolResultPart
    from hookstream.events import BaseEvent
    from hookstream.plugin import ModelCallContext, RetryInfo, RunContext, ToolCallContext

    from .hooks import OtelPlugin

__all__ = ["STATE", "global_plugin"]

STATE = "hookstream_otel.plugin"
"""``run.state`` key: the :class:`~hookstream_otel.hooks.OtelPlugin` tracing the run (absent: not traced)."""

# Variables that configure OpenTelemetry without any code: an exporter for the CLI (hookstream_otel.sdk)
# or the API's own choice of global providers.
_CONFIGURING_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
                    "OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")

_lock = threading.Lock()
_plugin: OtelPlugin | None = None


def global_plugin() -> OtelPlugin | None:
    """The :class:`~hookstream_otel.hooks.OtelPlugin` on the global providers when OpenTelemetry is
    configured in this process, else ``None``: ``OTEL_SDK_DISABLED=true``; or the OpenTelemetry API was
    never imported and no variable configures it (then nobody can have set a provider, and nothing is
    imported here); or, after setting the SDK up from the environment when asked to
    (:func:`~hookstream_otel.configure_from_env`), neither a global tracer provider nor a global meter
    provider is set. Once one is (the API allows it once per process), the answer is kept."""
    if _plugin is not None:
        return _plugin
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if "opentelemetry.trace" not in sys.modules and not any(env.get(k) for k in _CONFIGURING_ENV):
        return None
    return _configured()


def _configured() -> OtelPlugin | None:
    global _plugin
    from opentelemetry import metrics, trace

    from .sdk import configure_from_env

    configure_from_env()
    tracing = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    # The API's default meter provider is a proxy too (a private class: known by its name).
    measuring = type(metrics.get_meter_provider()).__name__ != "_ProxyMeterProvider"
    if not (tracing or measuring):
        return None
    with _lock:
        if _plugin is None:
            from .hooks import OtelPlugin

            _plugin = OtelPlugin()
        return _plugin


@hookimpl
def hookstream_run_start(run: RunContext) -> None:
    plugin = global_plugin()
    if plugin is not None:
        run.state[STATE] = plugin
        plugin.hookstream_run_start(run)


@hookimpl
def hookstream_run_end(run: RunContext, result: Any) -> None:
    plugin: OtelPlugin | None = run.state.get(STATE)
    if plugin is not None:
        plugin.hookstream_run_end(run, result)


@hookimpl(wrapper=True)
def hookstream_model_call(call: ModelCallContext) -> Generator[None, Iterable[BaseEvent] | None,
                                                             Iterable[BaseEvent] | None]:
    plugin: OtelPlugin | None = call.run.state.get(STATE)
    if plugin is None:
        return (yield)
    return (yield from plugin.hookstream_model_call(call))


@hookimpl
def hookstream_model_call_retry(call: ModelCallContext, retry: RetryInfo) -> None:
    plugin: OtelPlugin | None = call.run.state.get(STATE)
    if plugin is not None:
        plugin.hookstream_model_call_retry(call, retry)


@hookimpl(wrapper=True)
def hookstream_tool_call(call: ToolCallContext) -> Generator[None, ToolResultPart | None, ToolResultPart | None]:
    plugin: OtelPlugin | None = call.run.state.get(STATE) if call.run is not None else None
    if plugin is None:
        return (yield)
    return (yield from plugin.hookstream_tool_call(call))
