"""hookstream-otel: OpenTelemetry spans and metrics for hookstream runs (GenAI semantic conventions).

:class:`OtelObserver` is the run observer; the plugin registers :func:`make_observer` under the name
``otel``, so every ``hookstream.chat`` run is traced once the package is installed. With no
OpenTelemetry SDK configured the API's no-op providers make that free of output.

Names load on first use (PEP 562): the entry point (``hookstream_otel.plugin``) imports this package,
and loading it must not import OpenTelemetry into processes that never start a run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .observer import OtelObserver, make_observer
    from .sdk import configure_from_env

__all__ = ["OtelObserver", "configure_from_env", "make_observer"]
__version__ = "0.1.0"

_LAZY = {"OtelObserver": ".observer", "make_observer": ".observer", "configure_from_env": ".sdk"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hookstream_otel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
