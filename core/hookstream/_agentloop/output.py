"""Output shapes shared by the CLI and the testing kit: the ``final-json`` object of a model call."""

from __future__ import annotations

from typing import Any

from .._events import Cost, Usage
from .._messages import SourcePart
from .._stream.accumulate import StepResult

__all__ = ["cost_json", "final_json", "source_json"]


def final_json(
    step: StepResult,
    sources: list[SourcePart] | None = None,
    output: Any = None,
    error: tuple[str, str] | None = None,
    total: Usage | None = None,
) -> dict[str, Any]:
    """``{"text", "thinking", "tool_calls": [{"id", "name", "arguments"}], "finish_reason",
    "raw_finish_reason", "usage": {"input_tokens", "output_tokens"}, "cost", "error", "sources",
    "output"}`` for one model call.

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
    }


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
