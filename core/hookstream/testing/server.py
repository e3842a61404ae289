"""The loopback HTTP server of the testing kit: :class:`LoopbackServer`, :class:`Response`,
:class:`CapturedRequest` (defined in the shipped ``hookstream._loopback``, which the offline demo uses
too, so no shipped module depends on the testing kit)."""

from __future__ import annotations

from .._loopback import CapturedRequest, LoopbackServer, Response

__all__ = ["CapturedRequest", "LoopbackServer", "Response"]
