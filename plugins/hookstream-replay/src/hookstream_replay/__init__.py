"""hookstream-replay: the ``replay`` provider, :class:`ReplayProvider` (``chat("replay:DIR", ...)`` plays a
:class:`hookstream.Recorder` directory back offline), and :func:`first_difference`, where two JSON values
first differ. Names load on first use (PEP 562): every ``hookstream`` process loads the entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .provider import ReplayProvider, first_difference

__getattr__, __dir__ = lazy_attributes(__name__, {name: "hookstream_replay.provider"
                                                  for name in ("ReplayProvider", "first_difference")})

__all__ = ["ReplayProvider", "first_difference"]
__version__ = "0.1.0"
