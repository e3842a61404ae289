"""hookstream-otel: OpenTelemetry spans and metrics for hookstream runs (GenAI semantic conventions).

:class:`OtelObserver` is the run observer; the plugin registers :func:`make_observer` under the name
``otel``, so every ``hookstream.chat`` run is traced once the package is installed. With no
OpenTelemetry SDK configured the API's no-op providers make that free of output.

Names load on first use (PEP 562): the entry point (``hookstream_otel.plugin``) imports this package,
and loading it must not import OpenTelemetry into processes that never start a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .observer import OtelObserver, make_observer
    from .sdk import configure_from_env

__all__ = ["OtelObserver", "configure_from_env", "make_observer"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {"OtelObserver": "hookstream_otel.observer",
                                                  "make_observer": "hookstream_otel.observer",
                                                  "configure_from_env": "hookstream_otel.sdk"})
