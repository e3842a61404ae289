"""The ``hookstream`` entry point: registers the ``otel`` run observer."""

from __future__ import annotations

from hookstream.plugin import ObserverRegistrar, hookimpl

from .observer import make_observer


@hookimpl
def hookstream_register_observers(register: ObserverRegistrar) -> None:
    register("otel", make_observer)
