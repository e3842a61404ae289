"""Typed errors of the compaction plugin, under :class:`hookstream.HookstreamError`."""

from __future__ import annotations

from hookstream import HookstreamError

__all__ = ["CompactionError", "ContextWindowUnknown"]


class CompactionError(HookstreamError):
    """Compaction could not size or shrink a request."""

    code = "compaction_error"


class ContextWindowUnknown(CompactionError):
    """The catalogue (:func:`hookstream.models`) knows no context window for ``model``
    (``"PROVIDER:MODEL"``) and none was given (``Compaction(context_window=...)``, ``--compact-window``).
    Raised from ``hookstream_step_start``, so the run ends before its first request with ``RUN_ERROR``
    ``plugin_error`` naming it."""

    code = "context_window_unknown"

    def __init__(self, model: str) -> None:
        super().__init__(f"no context window is known for {model!r}: give one "
                         f"(Compaction(context_window=TOKENS) or --compact-window TOKENS)")
        self.model = model
