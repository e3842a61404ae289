"""The run hooks that turn a hookstream run into OpenTelemetry spans and metrics.

It follows the OpenTelemetry GenAI semantic conventions (development status; the attribute names of
semantic-conventions 1.37 and later, ``gen_ai.provider.name``):

* ``invoke_agent``: one span per run (kind INTERNAL: the agent runs in this process), current in the
  run's context for the whole run (``hookstream_run_start`` .. ``hookstream_run_end``);
  ``gen_ai.operation.name=invoke_agent``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.conversation.id`` (the AG-UI thread id), and at the end the summed
  ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons`` and
  ``hookstream.run.outcome``/``hookstream.run.steps``, and the run's summed cost when every step was
  priced: ``hookstream.run.cost.amount`` (double) and ``hookstream.run.cost.currency``.
* ``chat {model}``: one span per model call (kind CLIENT), child of the run span, from a
  ``hookstream_model_call`` wrapper; ``gen_ai.request.temperature``/``max_tokens``,
  ``server.address``/``server.port``, and on ``RUN_FINISHED`` ``gen_ai.response.model``/``id`` (when
  the provider sent them), ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``/
  ``output_tokens``, and the call's cost when genai-prices prices the model (``hookstream[prices]``):
  ``hookstream.usage.cost.amount`` (double), ``hookstream.usage.cost.currency`` (ISO 4217, ``USD``),
  ``hookstream.usage.cost.source`` (where the price came from). The GenAI conventions have no cost
  attribute yet (a proposal, ``gen_ai.usage.cost.amount``/``currency``/``source`` on inference spans, is
  open), so these are hookstream's own names, in the proposal's shape; the run span's total has other
  names so that a backend summing ``hookstream.usage.cost.amount`` over spans does not count a run
  twice. Each retry (``hookstream_model_call_retry``) is a span event ``hookstream.retry`` (attempt,
  delay in seconds, ``error.type``); the first chunk is an event ``hookstream.first_chunk``.
* ``execute_tool {name}``: one span per tool call (kind INTERNAL), child of the run span, from a
  ``hookstream_tool_call`` wrapper, made current on the thread that waits for the tool, in the run's
  context (so spans the tool makes are its children); ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.type=function``.
* Failures: span status ERROR and ``error.type`` (the ``RUN_ERROR`` code; ``tool_error`` for a tool's
  error result; ``cancelled`` when the consumer stopped reading a model call).
* Metrics (histograms): ``gen_ai.client.token.usage`` ({token}, ``gen_ai.token.type`` input/output),
  ``gen_ai.client.operation.duration`` (s), ``gen_ai.client.operation.time_to_first_chunk`` (s).

Content: prompts, completions, tool arguments and results are recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true`` (``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages`` as JSON, ``gen_ai.tool.call.arguments``/``result``);
only then does a model call look at each event's content. API keys are never read: only the provider's
name, model and API root host reach a span.

Thread safety: one :class:`OtelPlugin` serves any number of runs at once: what belongs to a run is in
``run.state``, to a model call in ``call.state`` and the wrapper's frame, to a tool call in the frame of
the wrapper running on the thread that waits for that call.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Generator, Iterable, Iterator
from contextvars import Token
from typing import Any
from urllib.parse import urlsplit

from hookstream import ToolResultPart
from hookstream.errors import CancelledError, ProviderError
from hookstream.events import (
    BaseEvent,
    RunError,
    RunFinished,
    RunStarted,
    TextMessageContent,
    ToolCallArgs,
    ToolCallStart,
)
from hookstream.plugin import (
    ModelCallContext,
    RetryInfo,
    RunContext,
    ToolCallContext,
    hookimpl,
    priced,
    response_ids,
    tool_output_text,
)
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .content import input_messages, output_messages

__all__ = ["CAPTURE_ENV", "OtelPlugin", "capture_content"]

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
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``."""
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


class _Run:
    """One run's span, its context (the parent of the run's other spans) and the token detaching it."""

    __slots__ = ("context", "span", "token")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.context = trace.set_span_in_context(span)
        # Called inside the run's own contextvars context: attached for the whole run, never outside it.
        self.token: Token[otel_context.Context] | None = otel_context.attach(self.context)


class _Call:
    """One model call's span and what its end needs: start time, metric attributes, captured content."""

    __slots__ = ("calls", "capture", "ended", "metric_attributes", "span", "started_at", "text")

    def __init__(self, span: trace.Span, metric_attributes: dict[str, Any], capture: bool) -> None:
        self.span = span
        self.metric_attributes = metric_attributes
        self.started_at = time.monotonic()
        self.ended = False
        self.capture = capture
        self.text: list[str] = []
        self.calls: dict[str, list[str]] = {}


class OtelPlugin:
    """Spans and metrics of runs (see the module doc), as a run plugin.

    ``tracer_provider``/``meter_provider``: the providers to use (default: the global ones, no-op until
    an application or :func:`~hookstream_otel.configure_from_env` sets them). ``capture`` records
    message content (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, read per call).
    The installed plugin runs one on the global providers once they are set
    (:func:`hookstream_otel.plugin.global_plugin`); give a run your own with
    ``chat(..., plugins=[OtelPlugin(tracer_provider=...)])``.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture: bool | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, VERSION, tracer_provider)
        self.instruments = _instruments_for(meter_provider)
        self.capture = capture
        self._key = f"{SCOPE}#{id(self)}"  # this object's entry in run.state and call.state

    def _capture(self) -> bool:
        return capture_content() if self.capture is None else self.capture

    # -- run ------------------------------------------------------------------------------------
    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider_name(run.provider),
            "gen_ai.request.model": run.model,
            "gen_ai.conversation.id": run.thread_id,
            "hookstream.run.id": run.run_id,
        }
        span = self.tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attributes)
        run.state[self._key] = _Run(span)

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: Any) -> None:
        state = run.state.pop(self._key, None)
        if not isinstance(state, _Run):
            return
        span = state.span
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
        if state.token is not None:
            otel_context.detach(state.token)
            state.token = None

    def _parent(self, run: RunContext | None) -> otel_context.Context | None:
        state = run.state.get(self._key) if run is not None else None
        return state.context if isinstance(state, _Run) else None

    # -- model calls ----------------------------------------------------------------------------
    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent] | None,
                                                                       Iterable[BaseEvent] | None]:
        started = self._start_call(call)
        try:
            events = yield
        except BaseException as exc:
            self._failed(started, exc, getattr(exc, "code", None) or type(exc).__name__)
            raise
        if events is None:
            self._failed(started, CancelledError("no implementation answered the model call"), "cancelled")
            return None
        return self._watch(call, started, events)

    def _start_call(self, call: ModelCallContext) -> _Call:
        request, provider = call.request, call.provider
        base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name(provider.name),
                "gen_ai.request.model": request.model}
        attributes: dict[str, Any] = {**base, "gen_ai.conversation.id": call.context.thread_id}
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        attributes.update(_server(provider.base_url))
        capture = self._capture()
        if capture:
            system, messages = input_messages(request.messages)
            if system:
                attributes["gen_ai.system_instructions"] = json.dumps(system, ensure_ascii=False)
            attributes["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
        span = self.tracer.start_span(f"chat {request.model}", context=self._parent(call.run),
                                      kind=SpanKind.CLIENT, attributes=attributes)
        started = _Call(span, base, capture)
        call.state[self._key] = started
        return started

    def _watch(self, call: ModelCallContext, started: _Call, events: Iterable[BaseEvent]) -> Iterator[BaseEvent]:
        first = True
        capture = started.capture
        try:
            for ev in events:
                t = type(ev)
                if capture:
                    _capture_event(started, ev)
                if t is RunFinished or t is RunError:
                    # Before the yield: the consumer may stop reading at the terminal event.
                    self._ended(call, started, ev)
                elif first and t is not RunStarted:
                    first = False
                    started.span.add_event("hookstream.first_chunk")
                    self.instruments.first_chunk.record(time.monotonic() - started.started_at,
                                                        started.metric_attributes)
                yield ev
        finally:
            if not started.ended:
                self._failed(started, CancelledError("the consumer stopped reading the model call"), "cancelled")

    def _ended(self, call: ModelCallContext, started: _Call, event: BaseEvent) -> None:
        if isinstance(event, RunError):
            model_call = call.model_call
            error = model_call.exception if model_call is not None and model_call.exception is not None else \
                ProviderError(event.message, error_type=event.code)
            self._failed(started, error, event.code)
            return
        if started.ended or not isinstance(event, RunFinished):
            return
        started.ended = True
        span = started.span
        response_id, response_model = response_ids(event.metadata)
        if response_model:
            span.set_attribute("gen_ai.response.model", response_model)
            started.metric_attributes["gen_ai.response.model"] = response_model
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)
        if event.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [event.finish_reason])
        provider = call.provider
        usage = priced(event.usage, provider.priced_as or provider.name, response_model, call.request.model)
        _set_usage(span, usage)
        _set_cost(span, usage, "hookstream.usage.cost", source=True)
        if started.capture:
            span.set_attribute("gen_ai.output.messages", json.dumps(
                output_messages("".join(started.text), started.calls, event.finish_reason), ensure_ascii=False))
        span.end()
        attrs = started.metric_attributes
        self.instruments.duration.record(time.monotonic() - started.started_at, attrs)
        if usage is not None:
            for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
                if count is not None:
                    self.instruments.tokens.record(count, {**attrs, "gen_ai.token.type": kind})

    def _failed(self, started: _Call, error: BaseException, code: str | None) -> None:
        if started.ended:
            return
        started.ended = True
        code = code or getattr(error, "code", None) or type(error).__name__
        span = started.span
        span.set_attribute("error.type", code)
        # The message was masked by the model call (no API key in it).
        span.set_status(Status(StatusCode.ERROR, str(getattr(error, "message", None) or error)))
        span.end()
        self.instruments.duration.record(time.monotonic() - started.started_at,
                                         {**started.metric_attributes, "error.type": code})

    @hookimpl
    def hookstream_model_call_retry(self, call: ModelCallContext, retry: RetryInfo) -> None:
        started = call.state.get(self._key)
        if isinstance(started, _Call):
            started.span.add_event("hookstream.retry", {
                "hookstream.retry.attempt": retry.attempt,
                "hookstream.retry.delay": retry.delay,
                "error.type": getattr(retry.error, "code", None) or type(retry.error).__name__,
            })

    # -- tools (the threads waiting for them) ---------------------------------------------------
    @hookimpl(wrapper=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> Generator[None, ToolResultPart | None,
                                                                     ToolResultPart | None]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        capture = self._capture()
        if capture and call.arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(call.arguments, ensure_ascii=False, default=str)
        span = self.tracer.start_span(f"execute_tool {call.name}", context=self._parent(call.run),
                                      kind=SpanKind.INTERNAL, attributes=attributes)
        # Current on this thread, in the run's context: the tool's own thread copies it.
        token = otel_context.attach(trace.set_span_in_context(span))
        result: ToolResultPart | None = None
        try:
            result = yield
            return result
        finally:
            end = result if result is not None else ToolResultPart(
                call.call_id, call.name, f"Error: {call.name!r} stopped", is_error=True)
            if capture:
                span.set_attribute("gen_ai.tool.call.result", tool_output_text(end.output))
            if end.is_error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, tool_output_text(end.output)[:500]))
            span.end()
            otel_context.detach(token)


def _capture_event(started: _Call, event: BaseEvent) -> None:
    if isinstance(event, TextMessageContent):
        started.text.append(event.delta)
    elif isinstance(event, ToolCallStart):
        started.calls[event.tool_call_id] = [event.tool_call_name]
    elif isinstance(event, ToolCallArgs):
        started.calls.setdefault(event.tool_call_id, [""]).append(event.delta)


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
