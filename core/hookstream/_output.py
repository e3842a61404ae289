"""Output shapes shared by the CLI and the testing kit: the ``final-json`` object of a model call."""

from __future__ import annotations

from typing import Any

from ._accumulate import StepResult

__all__ = ["final_json"]


def final_json(step: StepResult) -> dict[str, Any]:
    """``{"text", "thinking", "tool_calls": [{"id", "name", "arguments"}], "finish_reason",
    "raw_finish_reason", "usage": {"input_tokens", "output_tokens"}, "error"}`` for one model call.

    ``arguments`` is the parsed object, or ``None`` when the call was cut off or invalid; ``error`` is
    ``{"code", "message"}`` or ``None``; token counts are ``None`` when the provider sent none.
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
        "error": {"code": step.error[0], "message": step.error[1]} if step.error else None,
    }
