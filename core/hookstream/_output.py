"""Output shapes shared by the CLI and the testing kit: the ``final-json`` object of a model call."""

from __future__ import annotations

from typing import Any

from ._accumulate import StepResult

__all__ = ["final_json"]


def final_json(step: StepResult, output: Any = None, error: tuple[str, str] | None = None) -> dict[str, Any]:
    """``{"text", "thinking", "tool_calls": [{"id", "name", "arguments"}], "finish_reason",
    "raw_finish_reason", "usage": {"input_tokens", "output_tokens"}, "error", "output"}`` for one model call.

    ``arguments`` is the parsed object, or ``None`` when the call was cut off or invalid; ``error`` is
    ``{"code", "message"}`` or ``None`` (the call's own error, else the ``error`` given: the CLI passes
    a run error such as ``output_invalid``); token counts are ``None`` when the provider sent none.
    ``output`` is the run's structured output (a JSON value: ``chat --schema``), ``None`` without one or
    when it was invalid; the key is always there, so readers need no schema to know the shape.
    """
    usage = step.usage
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
        "error": _error(step.error or error),
        "output": output,
    }


def _error(error: tuple[str | None, str] | None) -> dict[str, str | None] | None:
    return {"code": error[0], "message": error[1]} if error else None
