"""The loopback HTTP server of the testing kit: :class:`LoopbackServer`, :class:`Response`,
:class:`CapturedRequest` (defined in the shipped ``hookstream._stream.loopback``, which the offline demo uses
too, so no shipped module depends on the testing kit)."""

from __future__ import annotations

from .._stream.loopback import ENDINGS, SPLITS, CapturedRequest, LoopbackServer, Response, _reset, split_body

__all__ = ["ENDINGS", "SPLITS", "CapturedRequest", "LoopbackServer", "Response", "_reset", "split_body"]
