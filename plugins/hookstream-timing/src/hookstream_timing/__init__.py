"""``hookstream chat --timing``: :class:`Timing`, a run observer that sums up a run's timing. It loads on
first use (PEP 562): loading the plugin does not load it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .timing import Timing

__getattr__, __dir__ = lazy_attributes(__name__, {"Timing": "hookstream_timing.timing"})

__all__ = ["Timing"]
