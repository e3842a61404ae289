"""Stop conditions: callables ``(steps: list[StepResult]) -> bool`` asked after every step.

Any condition that returns True stops the agent loop after the current step. The built-ins are
registered by name through the plugin hook, so ``stop_when=[("step_count_is", 3)]`` and
``stop_when=[step_count_is(3)]`` mean the same. ``max_steps`` guards every run regardless.

Thread safety: conditions are pure functions of the steps and may be shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from .._stream.accumulate import StepResult

__all__ = ["StopCondition", "cost_exceeds", "finish_reason_is", "has_tool_call", "step_count_is", "total_tokens_exceed"]

StopCondition = Callable[[Sequence[StepResult]], bool]


def step_count_is(n: int) -> StopCondition:
    """Stop once ``n`` steps (model calls) have run."""
    return lambda steps: len(steps) >= n


def has_tool_call(*names: str) -> StopCondition:
    """Stop after a step that called any of the tools ``names``."""
    wanted = set(names)
    return lambda steps: bool(steps) and any(c.name in wanted for c in steps[-1].tool_calls)


def finish_reason_is(*reasons: str) -> StopCondition:
    """Stop after a step whose normalised (or raw) finish reason is one of ``reasons``."""
    wanted = set(reasons)
    return lambda steps: bool(steps) and (
        steps[-1].finish_reason in wanted or steps[-1].raw_finish_reason in wanted
    )


def total_tokens_exceed(n: int) -> StopCondition:
    """Stop once input + output tokens summed over all steps exceed ``n``."""

    def check(steps: Sequence[StepResult]) -> bool:
        total = 0
        for s in steps:
            if s.usage:
                total += (s.usage.input_tokens or 0) + (s.usage.output_tokens or 0)
        return total > n

    return check


def cost_exceeds(amount: float | Decimal | str, currency: str = "USD") -> StopCondition:
    """Stop once the cost summed over all steps passes ``amount`` (in ``currency``, USD by default).

    Each step's cost is ``step.usage.cost`` (priced by genai-prices, ``hookstream[prices]``); steps
    whose cost is not known (no price for the model, the package not installed) count as nothing, so
    the condition never stops a run it cannot price. Like every stop condition it is asked between
    steps: the step that passes the limit has already been paid for."""
    limit = Decimal(repr(amount)) if isinstance(amount, float) else Decimal(amount)

    def check(steps: Sequence[StepResult]) -> bool:
        total = Decimal(0)
        for s in steps:
            cost = s.usage.cost if s.usage is not None else None
            if cost is not None and cost.currency == currency:
                total += cost.amount
        return total > limit

    return check


BUILTIN: dict[str, Callable[..., Any]] = {
    "step_count_is": step_count_is,
    "has_tool_call": has_tool_call,
    "finish_reason_is": finish_reason_is,
    "total_tokens_exceed": total_tokens_exceed,
    "cost_exceeds": cost_exceeds,
}
