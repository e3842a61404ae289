"""hookstream-otel: OpenTelemetry spans and metrics for hookstream runs (GenAI semantic conventions).

The plugin implements the run hooks (:mod:`hookstream_otel.plugin`): once OpenTelemetry is configured
in the process (an application set a global tracer or meter provider, or the ``OTEL_*`` variables ask
the CLI to export), every ``hookstream.chat`` run is traced on the global providers. Without that, the
hooks hand every result back untouched. :class:`OtelPlugin` is the run plugin itself: pass one with
your own providers to a run with ``chat(..., plugins=[OtelPlugin(tracer_provider=...)])``.

Names load on first use (PEP 562): the entry point imports this package, and loading it must not
import OpenTelemetry into processes that never start a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .hooks import OtelPlugin
    from .plugin import global_plugin
    from .sdk import configure_from_env

__all__ = ["OtelPlugin", "configure_from_env", "global_plugin"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {"OtelPlugin": "hookstream_otel.hooks",
                                                  "global_plugin": "hookstream_otel.plugin",
                                                  "configure_from_env": "hookstream_otel.sdk"})
