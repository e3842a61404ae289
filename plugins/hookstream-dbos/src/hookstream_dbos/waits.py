"""Approvals as durable waits: reading a run's waits and answers from its journal, and deciding which part
(*segment*) of the run a new run of the same id drives.

A durable run that ends with outcome ``interrupt`` (tool calls waiting for approval) keeps its workflow:
the workflow journals step ``wait:N`` (``N`` from 0: what it waits for, until when) and detaches (no
thread waits). The run that answers (``chat(..., resume=...)`` with the same ``Durable`` id) delivers the
answer with ``DBOS.send`` on :data:`TOPIC`, then resumes the workflow, which takes it with ``DBOS.recv`` as
it replays; that run is the next segment of the same workflow: its steps are journaled under the
segment's prefix (``s1:model_call:1``...; the first segment keeps the bare names). DBOS journals the
received answer like a step, so a resumed workflow replays it.

The segments of a run: segment 0 (started by ``chat`` with a prompt, or with a ``resume`` under a new
id), then one per answered wait. Each is named by the answer that started it (:func:`canonical_answer` of
the run's ``resume``, ``None`` for none): a run of the id with the answer of a segment drives (or
replays) that segment, so running the answering ``chat`` again after a crash resumes it; a run with a
new answer answers the wait, when there is one, and is refused otherwise.

Pure functions over journal rows: safe from any thread.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from .errors import AnswerRefused, NotWaitingError

__all__ = ["DEFAULT_WAIT", "TOPIC", "History", "Plan", "canonical_answer", "decide", "is_answer", "message_key",
           "read_history"]

TOPIC = "hookstream.answer"
"""The DBOS message topic of answers."""
DEFAULT_WAIT = 7 * 24 * 3600.0
"""Seconds a run waits for its answer by default (a week); ``Durable(id, wait=...)`` changes it."""


def canonical_answer(resume: Any) -> dict[str, Any] | None:
    """The answer a :class:`~hookstream.Resume` gives, in a form two runs can compare: approval ids
    without their ``approval_`` prefix (both name the same call) to booleans, client tool outputs as JSON
    text. ``None`` when it answers nothing."""
    approvals = getattr(resume, "approvals", None) or {}
    outputs = getattr(resume, "tool_outputs", None) or {}
    if not approvals and not outputs:
        return None
    return {"approvals": {str(k).removeprefix("approval_"): bool(v) for k, v in approvals.items()},
            "tool_outputs": {str(k): json.dumps(v, sort_keys=True, default=repr) for k, v in outputs.items()}}


def message_key(run_id: str, wait: int, answer: dict[str, Any] | None) -> str:
    """The DBOS idempotency key of the answer to wait ``wait`` of ``run_id``: from the answered call ids,
    so however many runs send an answer to those calls, one message is stored."""
    ids = sorted({*(answer or {}).get("approvals", {}), *(answer or {}).get("tool_outputs", {})})
    return f"hookstream:{run_id}:wait:{wait}:{','.join(ids) or 'inline'}"


def is_answer(message: Any, wait: int) -> bool:
    """Whether a received message answers wait ``wait`` (not a stale message)."""
    return isinstance(message, dict) and message.get("kind") == "answer" and message.get("wait") == wait


@attrs.frozen(slots=True)
class Segment:
    answer: dict[str, Any] | None
    prefix: str


@attrs.define(slots=True)
class History:
    """``segments`` in order (each with the answer that started it and its step-name prefix) and
    ``waits`` (the payload of each ``wait:N`` step: ``wait``, ``pending`` call ids, ``deadline`` in epoch
    seconds, ``prefix``, ``summary``)."""

    segments: list[Segment]
    waits: list[dict[str, Any]]

    @property
    def waiting(self) -> bool:
        """The last segment ended waiting and nothing answered it yet."""
        return len(self.waits) == len(self.segments)

    def next_segment(self) -> tuple[int, str]:
        """The wait a new answer answers (the last one) and the step-name prefix of the segment it starts."""
        return len(self.waits) - 1, f"s{len(self.segments)}:"

    def expired(self, now: float) -> bool:
        """Waiting past the deadline (epoch seconds ``now``): the workflow, wherever it is, ends it."""
        return self.waiting and float(self.waits[-1].get("deadline", 0.0)) <= now


def read_history(first_answer: dict[str, Any] | None, steps: Sequence[tuple[str, Any]]) -> History:
    """The segments and waits of a run from its journal rows (``(function_name, output)`` in order)."""
    history = History([Segment(first_answer, "")], [])
    for name, output in steps:
        if name.startswith("wait:") and isinstance(output, dict):
            history.waits.append(output)
        elif name == "DBOS.recv" and history.waiting and is_answer(output, len(history.waits) - 1):
            history.segments.append(Segment(output.get("answers"), str(output.get("prefix", ""))))
    return history


@attrs.frozen(slots=True)
class Plan:
    """What a new run of the id does: ``replay`` (read the journal, add nothing), ``inline`` (replay; a
    first new step answers the wait in place: the run was given its approvals synchronously), ``live``
    (resume the workflow: the last segment is this run's), ``answer`` (deliver a new answer to wait
    ``wait`` and drive the segment it starts). ``prefix``: the segment's step-name prefix."""

    kind: str
    prefix: str
    wait: int = -1


def decide(run_id: str, history: History, answer: dict[str, Any] | None, *, finished: bool,
           expired: bool = False) -> Plan:
    """The :class:`Plan` of a run given ``answer`` (:func:`canonical_answer` of its ``resume``; ``expired``:
    the run's wait ran out, whether or not its workflow has ended it yet). Raises
    :class:`AnswerRefused` for a new answer to a wait already answered (or expired, or a finished run)
    and :class:`NotWaitingError` for an answer to a run that never waited."""
    last = len(history.segments) - 1
    mine = [i for i, s in enumerate(history.segments) if s.answer == answer]
    if mine or answer is None:
        # A run without an answer that matches no segment replays segment 0 (and diverges there if the
        # run was started with an answer: its requests differ).
        k = mine[-1] if mine else 0
        prefix = history.segments[k].prefix
        if finished or k < last or expired:
            return Plan("replay", prefix)
        return Plan("inline", prefix, last) if history.waiting else Plan("live", prefix)
    if finished or expired:
        why = "its wait for an answer expired" if expired else "it has finished"
        raise AnswerRefused(f"durable run {run_id!r} takes no answer: {why}")
    if history.waiting:
        wait, prefix = history.next_segment()
        return Plan("answer", prefix, wait)
    if history.waits:
        raise AnswerRefused(f"durable run {run_id!r}: wait {len(history.waits) - 1} was already answered "
                            "with other answers (a second answer is refused)")
    raise NotWaitingError(f"durable run {run_id!r} is not waiting for an answer")
