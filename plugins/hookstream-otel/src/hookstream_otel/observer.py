"""The run observer that turns a hookstream run into OpenTelemetry spans and metrics.

It follows the OpenTelemetry GenAI semantic conventions (development status; the attribute names of
semantic-conventions 1.37 and later, ``gen_ai.provider.name``):

* ``invoke_agent``: one span per run (kind INTERNAL: the agent runs in this process), current in the
  run's context for the whole run; ``gen_ai.operation.name=invoke_agent``, ``gen_ai.provider.name``,
  ``gen_ai.request.model``, ``gen_ai.conversation.id`` (the AG-UI thread id), and at the end the summed
  ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons`` and
  ``hookstream.run.outcome``/``hookstream.run.steps``, and the run's summed cost when every step was
  priced: ``hookstream.run.cost.amount`` (double) and ``hookstream.run.cost.currency``.
* ``chat {model}``: one span per model call (kind CLIENT), child of the run span;
  ``gen_ai.request.temperature``/``max_tokens``, ``server.address``/``server.port``, and on
  ``RUN_FINISHED`` ``gen_ai.response.model``/``id`` (when the provider sent them),
  ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``/``output_tokens``, and the call's
  cost when genai-prices prices the model (``hookstream[prices]``): ``hookstream.usage.cost.amount``
  (double), ``hookstream.usage.cost.currency`` (ISO 4217, ``USD``), ``hookstream.usage.cost.source``
  (where the price came from). The GenAI conventions have no cost attribute yet (a proposal,
  ``gen_ai.usage.cost.amount``/``currency``/``source`` on inference spans, is open), so these are
  hookstream's own names, in the proposal's shape; the run span's total has other names so that a
  backend summing ``hookstream.usage.cost.amount`` over spans does not count a run twice. Each retry is a
  span event ``hookstream.retry`` (attempt, delay in seconds, ``error.type``); the first chunk is an
  event ``hookstream.first_chunk``.
* ``execute_tool {name}``: one span per tool call (kind INTERNAL), child of the run span, started and
  made current on the executor thread that runs the tool (so spans the tool makes are its children);
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type=function``.
* Failures: span status ERROR and ``error.type`` (the ``RUN_ERROR`` code; ``tool_error`` for a tool's
  error result).
* Metrics (histograms): ``gen_ai.client.token.usage`` ({token}, ``gen_ai.token.type`` input/output),
  ``gen_ai.client.operation.duration`` (s), ``gen_ai.client.operation.time_to_first_chunk`` (s).

Content: prompts, completions, tool arguments and results are recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true`` (``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages`` as JSON, ``gen_ai.tool.call.arguments``/``result``).
API keys are never read: only the provider's name, model and API root host reach a span.

Thread safety: one observer per run; tool spans are kept per tool call id under a lock, since tools
of a step start and end on several executor threads at once.
"""

from __future__ import annotations

import json
import os
import threading
from contextvars import Token
from typing import Any
from urllib.parse import urlsplit

from hookstream import Observer, ToolResultPart
from hookstream.events import BaseEvent, TextMessageContent, ToolCallArgs, ToolCallStart
from hookstream.plugin import ModelCallInfo, RetryInfo, RunInfo, ToolInfo, tool_output_text
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .content import input_messages, output_messages
from .sdk import configure_from_env

__all__ = ["CAPTURE_ENV", "OtelObserver", "make_observer"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SCOPE = "hookstream_otel"
VERSION = "0.1.0"

# hookstream provider names -> gen_ai.provider.name well-known values.
PROVIDER_NAMES = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}

# Bucket boundaries the semantic conventions give for these histograms.
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
_TTFC_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


def capture_content() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"


def provider_name(name: str) -> str:
    return PROVIDER_NAMES.get(name, name)


class _Instruments:
    """The three histograms of one meter provider."""

    def __init__(self, meter_provider: metrics.MeterProvider | None) -> None:
        meter = metrics.get_meter(SCOPE, VERSION, meter_provider)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS)
        self.first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk", unit="s",
            description="Time from sending the request to the first chunk of the response stream",
            explicit_bucket_boundaries_advisory=_TTFC_BUCKETS)


_global_lock = threading.Lock()
_global_instruments: _Instruments | None = None


def _instruments_for(meter_provider: metrics.MeterProvider | None) -> _Instruments:
    global _global_instruments
    if meter_provider is not None:
        return _Instruments(meter_provider)
    with _global_lock:
        if _global_instruments is None:
            # The global meter provider is a proxy until set: instruments made now follow it later.
            _global_instruments = _Instruments(None)
        return _global_instruments


class _Captured:
    """Content of one model call's response, gathered only when content capture is on."""

    __slots__ = ("calls", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[str, list[str]] = {}


class OtelObserver(Observer):
    """Spans and metrics of one run (see the module doc).

    ``tracer_provider``/``meter_provider``: the providers to use (default: the global ones, no-op until
    an application or :func:`~hookstream_otel.configure_from_env` sets them). ``capture`` records
    message content (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture: bool | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, VERSION, tracer_provider)
        self.instruments = _instruments_for(meter_provider)
        self.capture = capture_content() if capture is None else capture
        self._run_span: trace.Span | None = None
        self._run_context: otel_context.Context | None = None
        self._run_token: Token[otel_context.Context] | None = None
        self._call_span: trace.Span | None = None
        self._captured: _Captured | None = None
        self._tools: dict[str, tuple[trace.Span, Token[otel_context.Context]]] = {}
        self._lock = threading.Lock()
        if self.capture:
            # Only now does the model call tap its events (hookstream._agentloop.observe: model_call_chunk).
            self.model_call_chunk = self._chunk  # type: ignore[method-assign]  # opt-in tap, set per instance

    # -- run ------------------------------------------------------------------------------------
    def run_start(self, run: RunInfo) -> None:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider_name(run.provider),
            "gen_ai.request.model": run.model,
            "gen_ai.conversation.id": run.thread_id,
            "hookstream.run.id": run.run_id,
        }
        span = self.tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attributes)
        self._run_span = span
        self._run_context = trace.set_span_in_context(span)
        # Called inside the run's own contextvars context: attached for the whole run, never outside it.
        self._run_token = otel_context.attach(self._run_context)

    def run_end(self, run: RunInfo, result: Any) -> None:
        span = self._run_span
        if span is None:
            return
        usage = getattr(result, "usage", None)
        _set_usage(span, usage)
        _set_cost(span, usage, "hookstream.run.cost")
        steps = getattr(result, "steps", []) or []
        span.set_attribute("hookstream.run.steps", len(steps))
        outcome = getattr(result, "outcome", None)
        if outcome:
            span.set_attribute("hookstream.run.outcome", outcome)
        reason = getattr(result, "finish_reason", None)
        if reason:
            span.set_attribute("gen_ai.response.finish_reasons", [reason])
        if outcome == "error":
            error = getattr(result, "error", None)
            code = getattr(error, "code", None) or (type(error).__name__ if error is not None else "error")
            span.set_attribute("error.type", code)
            span.set_status(Status(StatusCode.ERROR, str(getattr(error, "message", "") or code)))
        span.end()
        if self._run_token is not None:
            otel_context.detach(self._run_token)
            self._run_token = None

    # -- model calls ----------------------------------------------------------------------------
    def model_call_start(self, call: ModelCallInfo) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(call.provider),
            "gen_ai.request.model": call.model,
            "gen_ai.conversation.id": call.thread_id,
        }
        if call.temperature is not None:
            attributes["gen_ai.request.temperature"] = call.temperature
        if call.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = call.max_tokens
        attributes.update(_server(call.base_url))
        if self.capture:
            system, messages = input_messages(call.request.messages)
            if system:
                attributes["gen_ai.system_instructions"] = json.dumps(system, ensure_ascii=False)
            attributes["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
            self._captured = _Captured()
        self._call_span = self.tracer.start_span(
            f"chat {call.model}", context=self._run_context, kind=SpanKind.CLIENT, attributes=attributes)

    def model_call_first_chunk(self, call: ModelCallInfo) -> None:
        if self._call_span is not None:
            self._call_span.add_event("hookstream.first_chunk")
        if call.first_chunk_at is not None:
            self.instruments.first_chunk.record(call.first_chunk_at - call.started_at, self._metric_attributes(call))

    def _chunk(self, call: ModelCallInfo, event: BaseEvent) -> None:
        got = self._captured
        if got is None:
            return
        if isinstance(event, TextMessageContent):
            got.text.append(event.delta)
        elif isinstance(event, ToolCallStart):
            got.calls[event.tool_call_id] = [event.tool_call_name]
        elif isinstance(event, ToolCallArgs):
            got.calls.setdefault(event.tool_call_id, [""]).append(event.delta)

    def model_call_retry(self, call: ModelCallInfo, retry: RetryInfo) -> None:
        if self._call_span is not None:
            self._call_span.add_event("hookstream.retry", {
                "hookstream.retry.attempt": retry.attempt,
                "hookstream.retry.delay": retry.delay,
                "error.type": getattr(retry.error, "code", None) or type(retry.error).__name__,
            })

    def model_call_end(self, call: ModelCallInfo) -> None:
        span, self._call_span = self._call_span, None
        if span is None:
            return
        if call.response_model:
            span.set_attribute("gen_ai.response.model", call.response_model)
        if call.response_id:
            span.set_attribute("gen_ai.response.id", call.response_id)
        if call.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [call.finish_reason])
        _set_usage(span, call.usage)
        _set_cost(span, call.usage, "hookstream.usage.cost", source=True)
        if self._captured is not None:
            got, self._captured = self._captured, None
            span.set_attribute("gen_ai.output.messages", json.dumps(
                output_messages("".join(got.text), got.calls, call.finish_reason), ensure_ascii=False))
        span.end()
        attrs = self._metric_attributes(call)
        if call.ended_at is not None:
            self.instruments.duration.record(call.ended_at - call.started_at, attrs)
        usage = call.usage
        if usage is not None:
            for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
                if count is not None:
                    self.instruments.tokens.record(count, {**attrs, "gen_ai.token.type": kind})

    def model_call_error(self, call: ModelCallInfo, error: BaseException) -> None:
        span, self._call_span = self._call_span, None
        self._captured = None
        code = call.error_type or getattr(error, "code", None) or type(error).__name__
        if span is not None:
            span.set_attribute("error.type", code)
            # The message was masked by the model call (no API key in it).
            span.set_status(Status(StatusCode.ERROR, str(getattr(error, "message", None) or error)))
            span.end()
        if call.ended_at is not None:
            self.instruments.duration.record(call.ended_at - call.started_at,
                                             {**self._metric_attributes(call), "error.type": code})

    @staticmethod
    def _metric_attributes(call: ModelCallInfo) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(call.provider),
            "gen_ai.request.model": call.model,
        }
        if call.response_model:
            attrs["gen_ai.response.model"] = call.response_model
        return attrs

    # -- tools (executor threads) ---------------------------------------------------------------
    def tool_start(self, tool: ToolInfo) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": tool.call_id,
            "gen_ai.tool.type": "function",
        }
        if self.capture and tool.arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(tool.arguments, ensure_ascii=False, default=str)
        span = self.tracer.start_span(f"execute_tool {tool.name}", context=self._run_context,
                                      kind=SpanKind.INTERNAL, attributes=attributes)
        # Current on this executor thread: the tool's own thread copies this context.
        token = otel_context.attach(trace.set_span_in_context(span))
        with self._lock:
            self._tools[tool.call_id] = (span, token)

    def tool_end(self, tool: ToolInfo, result: ToolResultPart) -> None:
        with self._lock:
            entry = self._tools.pop(tool.call_id, None)
        if entry is None:
            return
        span, token = entry
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", tool_output_text(result.output))
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, tool_output_text(result.output)[:500]))
        span.end()
        otel_context.detach(token)


def _set_usage(span: trace.Span, usage: Any) -> None:
    if usage is None:
        return
    if usage.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    if usage.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)


def _set_cost(span: trace.Span, usage: Any, prefix: str, source: bool = False) -> None:
    cost = getattr(usage, "cost", None)  # Usage.cost: a hookstream core with prices (hookstream[prices])
    if cost is None:
        return
    span.set_attribute(f"{prefix}.amount", float(cost.amount))
    span.set_attribute(f"{prefix}.currency", cost.currency)
    if source and cost.source:
        span.set_attribute(f"{prefix}.source", cost.source)


def _server(base_url: str | None) -> dict[str, Any]:
    """``server.address``/``server.port`` of the API root: host and port only (a key in the URL never)."""
    if not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    out: dict[str, Any] = {}
    if host:
        out["server.address"] = host
        out["server.port"] = port or (443 if parts.scheme == "https" else 80)
    return out


def make_observer() -> OtelObserver | None:
    """The ``otel`` observer factory: one :class:`OtelObserver` per run on the global providers, after
    setting the SDK up from the environment the first time when asked to (see :mod:`hookstream_otel.sdk`).
    ``None`` when ``OTEL_SDK_DISABLED=true``."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    configure_from_env()
    return OtelObserver()
