"""pluggy's markers for hookstream (``hookspec``, ``hookimpl``) and the names of the run hooks: the bottom of
the hook layer, so the engine's built-in implementations and the hook specs (:mod:`hookstream._hookspecs`,
which name the engine's types) import them without importing each other.

Thread safety: constants only.
"""

from __future__ import annotations

import pluggy

__all__ = ["RUN_HOOKS", "hookimpl", "hookspec"]

RUN_HOOKS = ("hookstream_run_start", "hookstream_step_start", "hookstream_model_call",
             "hookstream_model_call_retry", "hookstream_tool_call", "hookstream_step_end", "hookstream_run_end")
"""The run hooks, in the order of a run (the other hooks register things or extend the command line)."""

hookspec = pluggy.HookspecMarker("hookstream")
hookimpl = pluggy.HookimplMarker("hookstream")
