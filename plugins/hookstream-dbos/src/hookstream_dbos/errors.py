"""The errors of durable runs, under :class:`hookstream.errors.HookstreamError` (one root): a run ends with
``RUN_ERROR`` naming the error's ``code``.

Kept apart from :mod:`hookstream_dbos.journal` and :mod:`hookstream_dbos.waits`, which both raise them, so
neither imports the other for its errors. Plain exception classes: safe from any thread.
"""

from __future__ import annotations

from hookstream.errors import HookstreamError

__all__ = ["AnswerRefused", "DurableError", "DurableSettingsError", "DurableStoreError", "NotWaitingError",
           "RerunRefused", "RunBusyError", "RunDivergedError"]


class DurableError(HookstreamError):
    """A durable run cannot go on (its store, its state); ``RUN_ERROR`` ``durable_error``."""

    code = "durable_error"


class DurableSettingsError(DurableError, TypeError, ValueError):
    """A :class:`~hookstream_dbos.Durable` setting of the wrong type or out of range, refused when the plugin
    is built (``Durable(...)``, ``plugins=[("durable", {...})]``), never later from a run's thread. A
    :class:`TypeError` and a :class:`ValueError` too, as the built-in checks it stands for."""

    code = "durable_settings"


class DurableStoreError(DurableError):
    """The DBOS system database cannot be used as asked (another URL is already in use in this process)."""

    code = "durable_store_error"


class RunBusyError(DurableError):
    """The run id is already open in another run of this process."""

    code = "durable_busy"


class RunDivergedError(DurableError):
    """A resumed run asked for something its journal does not hold in that place: the prompt, the tools or
    the model changed since the run was started under this id."""

    code = "durable_diverged"


class RerunRefused(DurableError):
    """Raised by a tool that must not run twice when :func:`hookstream_dbos.attempt` says it was already
    started once (in flight when the process died): the call's result is this error, journaled like any
    result, so the model is told and the tool never runs again under this run id."""

    code = "durable_rerun_refused"


class AnswerRefused(DurableError):
    """An answer to a durable run that takes none any more: its wait was answered already (with other
    answers), its wait expired, or it has finished. A second answer to the same wait is refused so."""

    code = "durable_answer_refused"


class NotWaitingError(DurableError):
    """An answer (``chat(..., resume=...)``) under the id of a durable run that never waited for one."""

    code = "durable_not_waiting"
