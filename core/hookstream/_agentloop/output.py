"""Output shapes shared by the CLI and the testing kit: the ``final-json`` object of a model call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._events import Cost, Usage
from .._messages import SourcePart, ToolCallPart
from .._stream.accumulate import StepResult

if TYPE_CHECKING:
    from .values import PendingApproval

__all__ = ["cost_json", "final_json", "interrupts_json", "source_json"]


def final_json(
    step: StepResult,
    sources: list[SourcePart] | None = None,
    output: Any = None,
    error: tuple[str, str] | None = None,
    total: Usage | None = None,
    *,
    outcome: str | None = None,
    interrupts: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``{"text", "thinking", "tool_calls": [{"id", "name", "arguments"}], "finish_reason",
    "raw_finish_reason", "usage": {"input_tokens", "output_tokens"}, "cost", "error", "sources",
    "output", "outcome", "interrupts"}`` for one model call.

    ``outcome`` is the run's (``success``, ``error``, ``interrupt``, ``cancelled``: AG-UI's
    ``RUN_FINISHED`` outcome, ``error`` for ``RUN_ERROR``); without one given, ``error`` when the call or
    ``error`` has one, else ``success``. ``interrupts`` are what an interrupted run waits for (see
    :func:`interrupts_json`), ``[]`` otherwise.

    ``arguments`` is the parsed object, or ``None`` when the call was cut off or invalid; ``error`` is
    ``{"code", "message"}`` or ``None`` (the call's own error, else the ``error`` given: the CLI passes
    a run error such as ``output_invalid``); token counts are ``None`` when the provider sent none.
    ``sources`` lists ``{"sourceType", "url", "title", "citedText", "startIndex", "endIndex",
    "documentIndex"}`` (``None`` where not given) for ``sources`` (default: the step's own; the CLI
    passes the whole run's, :attr:`RunResult.sources`), in the order they arrived. ``output`` is the
    run's structured output (a JSON value: ``chat --schema``), ``None`` without one or when it was
    invalid; the key is always there, so readers need no schema to know the shape.
    ``cost`` is ``{"amount", "currency", "source"}`` (:class:`~hookstream.events.Cost`, the amount a JSON
    number) or ``None`` when not known: the step's own, or with ``total`` (the CLI passes the run's
    summed :attr:`RunResult.usage`) the whole run's.
    """
    usage = step.usage
    priced = total if total is not None else usage
    return {
        "text": step.text,
        "thinking": step.reasoning if step.reasoning else None,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls],
        "finish_reason": step.finish_reason,
        "raw_finish_reason": step.raw_finish_reason,
        "usage": {
            "input_tokens": usage.input_tokens if usage else None,
            "output_tokens": usage.output_tokens if usage else None,
        },
        "cost": cost_json(priced.cost if priced is not None else None),
        "error": _error(step.error or error),
        "sources": [source_json(s) for s in (step.sources if sources is None else sources)],
        "output": output,
        "outcome": outcome if outcome is not None else ("error" if step.error or error else "success"),
        "interrupts": list(interrupts),
    }


def interrupts_json(pending_approvals: Iterable[PendingApproval], pending_tool_calls: Iterable[ToolCallPart] = (),
                    ) -> list[dict[str, Any]]:
    """What an interrupted run waits for, as ``final-json`` writes it: ``{"kind": "approval", "id":
    APPROVAL_ID, "tool_call_id", "name", "arguments"}`` per tool call awaiting approval, then
    ``{"kind": "client_tool", "id", "tool_call_id", "name", "arguments"}`` per client tool call
    awaiting its output (``id`` is what ``RunResult.resume`` takes)."""
    out = [{"kind": "approval", "id": p.approval_id, "tool_call_id": p.call.id, "name": p.call.name,
            "arguments": p.call.arguments} for p in pending_approvals]
    out.extend({"kind": "client_tool", "id": c.id, "tool_call_id": c.id, "name": c.name, "arguments": c.arguments}
               for c in pending_tool_calls)
    return out


def cost_json(cost: Cost | None) -> dict[str, Any] | None:
    """A cost as ``final-json`` writes it: ``{"amount": 0.000435, "currency": "USD", "source": ...}``."""
    if cost is None:
        return None
    return {"amount": float(cost.amount), "currency": cost.currency, "source": cost.source}


def _error(error: tuple[str | None, str] | None) -> dict[str, str | None] | None:
    return {"code": error[0], "message": error[1]} if error else None


def source_json(s: SourcePart) -> dict[str, Any]:
    """One source as ``final-json`` writes it (camelCase, as on the ``source`` CUSTOM event, without
    the id and provider metadata)."""
    return {"sourceType": s.source_type, "url": s.url, "title": s.title, "citedText": s.cited_text,
            "startIndex": s.start_index, "endIndex": s.end_index, "documentIndex": s.document_index}
