"""hookstream-otel: OpenTelemetry spans and metrics for hookstream runs (GenAI semantic conventions).

:class:`OtelObserver` is the run observer; the plugin registers :func:`make_observer` under the name
``otel``, so every ``hookstream.chat`` run is traced once the package is installed. With no
OpenTelemetry SDK configured the API's no-op providers make that free of output.
"""

from __future__ import annotations

from .observer import OtelObserver, make_observer
from .sdk import configure_from_env

__all__ = ["OtelObserver", "configure_from_env", "make_observer"]
__version__ = "0.1.0"
