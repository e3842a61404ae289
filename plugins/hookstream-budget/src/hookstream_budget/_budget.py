"""The ``budget`` run plugin: limits checked before each model request is sent.

``chat(..., plugins=[("budget", {"max_input_tokens": 50_000, "max_cost_usd": 0.25})])`` (or
``plugins=[Budget(...)]``; ``--plugin budget`` takes no limits). Before each model call of the run it
counts the request about to go (after every ``hookstream_step_start`` plugin changed it: a compacted
history is what is counted) and, when a limit would be passed, ends the step before the request is sent
with :class:`~hookstream.errors.BudgetExceededError` (``RUN_ERROR`` ``budget_exceeded``). The run's
messages are kept whole (``result.messages`` ends with the last tool results), so a run can be resumed
with a larger budget: ``chat(model, result.messages, ...)``.

* ``max_input_tokens``: the input tokens of the next request, counted locally (tiktoken for OpenAI models
  with ``hookstream[tokens]``, else 4 characters a token), or by the provider's count endpoint with
  ``count="provider"`` (one more HTTP call per step).
* ``max_cost_usd``: the run's cost so far (each step's ``usage.cost``) plus the next request's
  estimated cost: its input tokens, and ``max_tokens`` of output when the run sets one, at the
  catalogue's list price (genai-prices, ``hookstream[prices]``). A model without a price counts as
  nothing, as :func:`hookstream.cost_exceeds` does; without genai-prices installed a ``max_cost_usd`` is
  refused when the budget is made (:class:`ImportError` naming the extra; ``chat``, ``batch`` and
  ``serve`` stop at start-up with ``--max-cost-usd``), never a limit that silently stops nothing.

The local count (``hookstream.plugin.estimate_request_tokens``) does not undercount what a client
controls: files count by the providers' documented rules (an image by its pixels, a PDF by its pages,
other files by their bytes) and non-ASCII text a token a character.

A run that does not ask for the plugin does not load this module: it costs nothing.

Thread safety: a :class:`Budget` holds its limits only; per-run values live in ``run.state``.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Literal

from hookstream import StepResult
from hookstream.errors import BudgetExceededError, HookstreamError
from hookstream.events import Usage
from hookstream.plugin import (
    ModelCallContext,
    StepContext,
    count_request,
    hookimpl,
    install_command,
    local_count,
    priced,
    prices_available,
)

__all__ = ["Budget"]

_STATE = "budget"


def _limit(name: str, value: Any, kind: type) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value < 0:
        raise TypeError(f"budget {name} must be a non-negative {kind.__name__}, not {value!r}")
    return value


class Budget:
    """Limits checked before each model request (see the module docs). ``max_input_tokens`` (tokens) and
    ``max_cost_usd`` (US dollars) are ``None`` when not limited; ``count`` is ``"local"`` (the default) or
    ``"provider"`` (the provider's count endpoint where it has one). Raises :class:`TypeError` for a
    negative or non-numeric limit, :class:`ValueError` for another ``count`` and :class:`ImportError` for
    ``max_cost_usd`` without genai-prices installed."""

    def __init__(self, *, max_input_tokens: int | None = None, max_cost_usd: float | None = None,
                 count: Literal["local", "provider"] = "local") -> None:
        if count not in ("local", "provider"):
            raise ValueError(f"budget count must be 'local' or 'provider', not {count!r}")
        self.max_input_tokens: int | None = _limit("max_input_tokens", max_input_tokens, int)
        self.max_cost_usd: float | None = _limit("max_cost_usd", max_cost_usd, float)
        if self.max_cost_usd is not None and not prices_available():
            raise ImportError(f"budget max_cost_usd needs model prices: {install_command('hookstream[prices]')}")
        self.count = count

    def __repr__(self) -> str:
        return f"Budget(max_input_tokens={self.max_input_tokens!r}, max_cost_usd={self.max_cost_usd!r})"

    @hookimpl
    def hookstream_step_start(self, step: StepContext) -> None:
        # The steps so far (with their priced usage) are seen here, not by the model-call hook.
        step.run.state[_STATE] = step.steps

    @hookimpl(tryfirst=True)
    def hookstream_model_call(self, call: ModelCallContext) -> None:
        """Abort the call before it is sent when the next request passes a limit; the built-in call then
        ends the step with the :class:`BudgetExceededError` (nothing goes on the wire)."""
        if self.max_input_tokens is None and self.max_cost_usd is None:
            return
        try:
            tokens = self._input_tokens(call)
        except HookstreamError as exc:  # count="provider" and its endpoint failed: the step ends with that error
            call.abort(exc)
            return
        if self.max_input_tokens is not None and tokens > self.max_input_tokens:
            call.abort(BudgetExceededError("max_input_tokens", self.max_input_tokens, tokens, call.step))
            return
        if self.max_cost_usd is not None:
            steps: Sequence[StepResult] = call.run.state.get(_STATE, ())
            total = _spent(steps) + _next_cost(call, tokens)
            if total > Decimal(repr(self.max_cost_usd)):
                call.abort(BudgetExceededError("max_cost_usd", self.max_cost_usd, float(total), call.step))

    def _input_tokens(self, call: ModelCallContext) -> int:
        request = call.request
        if self.count == "provider":
            return count_request(call.provider, request).input_tokens
        return local_count(request.model, request.messages, request.tools)[0]


def _spent(steps: Sequence[StepResult]) -> Decimal:
    total = Decimal(0)
    for s in steps:
        cost = s.usage.cost if s.usage is not None else None
        if cost is not None and cost.currency == "USD":
            total += cost.amount
    return total


def _next_cost(call: ModelCallContext, tokens: int) -> Decimal:
    request = call.request
    usage = Usage(input_tokens=tokens, output_tokens=request.max_tokens or 0)
    cost = (priced(usage, call.provider.priced_as, request.model) or usage).cost
    return cost.amount if cost is not None and cost.currency == "USD" else Decimal(0)
