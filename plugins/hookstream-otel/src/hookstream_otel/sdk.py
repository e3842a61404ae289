"""Setting up the OpenTelemetry SDK from the standard environment variables, for the ``hookstream`` CLI.

A library never configures the SDK: the application does, and this plugin only uses the global
providers. The CLI has no application around it, and the core must not import this plugin, so the
plugin does it itself, lazily: at the first run of the process (from the plugin's
``hookstream_run_start``, :func:`hookstream_otel.plugin.global_plugin`), :func:`configure_from_env` sets
up a tracer provider and a meter provider when all hold:

* an exporter is asked for: ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
  or ``OTEL_TRACES_EXPORTER`` is set (``otlp``, ``console`` or ``none``);
* nobody set a global tracer provider before (an application that did keeps its own);
* the SDK is installed (``pip install "hookstream-otel[cli]"``);
* ``OTEL_SDK_DISABLED`` is not ``true`` and ``HOOKSTREAM_OTEL_CONFIGURE`` is not ``0``.

Everything else comes from the SDK's own variables: ``OTEL_SERVICE_NAME`` (default here:
``hookstream``), ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS``, timeouts... The OTLP
exporter is OTLP/HTTP (protobuf). Metrics go the same way (``OTEL_METRICS_EXPORTER``: ``otlp``
default, ``console``, ``none``). The providers flush and shut down at interpreter exit (``atexit``),
so a CLI run exports its spans before the process ends.

Thread safety: :func:`configure_from_env` runs once per process under a lock.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from opentelemetry import metrics, trace

__all__ = ["configure_from_env", "wants_export"]

log = logging.getLogger("hookstream_otel")

_lock = threading.Lock()
_done = False


def wants_export() -> bool:
    """Whether the environment asks for an exporter (see the module doc)."""
    env = os.environ
    return any(env.get(k) for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                    "OTEL_TRACES_EXPORTER"))


def _global_provider_set() -> bool:
    # The API's default is a proxy until someone calls set_tracer_provider.
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def configure_from_env() -> bool:
    """Set up the SDK's global tracer and meter providers from the environment, once per process.

    Returns True when this call (or an earlier one) configured them, False when it was not asked for,
    another provider was already set, or the SDK is missing (logged at warning level once)."""
    global _done
    with _lock:
        if _done:
            return True
        env = os.environ
        if (env.get("OTEL_SDK_DISABLED", "").lower() == "true" or env.get("HOOKSTREAM_OTEL_CONFIGURE") == "0"
                or not wants_export() or _global_provider_set()):
            return False
        try:
            from opentelemetry.sdk.resources import SERVICE_NAME, Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
        except ImportError:
            from hookstream.plugin import install_command

            log.warning("OpenTelemetry export was asked for (OTEL_* variables) but opentelemetry-sdk is not "
                        "installed: %s", install_command("hookstream-otel[cli]"))
            _done = True  # say it once
            return False
        resource = Resource.create({} if env.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: "hookstream"})
        provider = TracerProvider(resource=resource)
        span_exporter: SpanExporter | None = _span_exporter(env.get("OTEL_TRACES_EXPORTER", "otlp"))
        if span_exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(span_exporter))
        trace.set_tracer_provider(provider)
        _configure_metrics(resource, env.get("OTEL_METRICS_EXPORTER", "otlp"))
        _done = True
        return True


def _span_exporter(kind: str) -> Any:
    kind = kind.strip().lower()
    if kind in ("", "otlp"):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning("opentelemetry-exporter-otlp-proto-http is not installed: no spans are exported")
            return None
        return OTLPSpanExporter()
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if kind != "none":
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none): no spans exported", kind)
    return None


def _configure_metrics(resource: object, kind: str) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter, PeriodicExportingMetricReader

    kind = kind.strip().lower()
    exporter: MetricExporter | None = None
    if kind in ("", "otlp"):
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        except ImportError:
            return
        exporter = OTLPMetricExporter()
    elif kind == "console":
        exporter = ConsoleMetricExporter()
    if exporter is None:
        return
    metrics.set_meter_provider(
        MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(exporter)])  # type: ignore[arg-type]  # SDK stubs: exporter union
    )
