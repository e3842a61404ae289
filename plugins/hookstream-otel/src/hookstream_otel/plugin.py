"""The ``hookstream`` entry point: registers the ``otel`` run observer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import ObserverRegistrar, hookimpl

if TYPE_CHECKING:
    from .observer import OtelObserver


def make_observer() -> OtelObserver | None:
    """:func:`hookstream_otel.make_observer`, imported when the first run asks for an observer: every
    process loads this entry point (``hookstream replay`` too), and the OpenTelemetry API is only needed by
    runs."""
    from .observer import make_observer as make

    return make()


@hookimpl
def hookstream_register_observers(register: ObserverRegistrar) -> None:
    register("otel", make_observer)
