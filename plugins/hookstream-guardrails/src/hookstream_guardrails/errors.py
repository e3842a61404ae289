"""Typed errors of tripped guardrails, under :class:`hookstream.HookstreamError`. Each ``code`` is the
``RUN_ERROR`` code a run ends with (a refused tool call does not end the run: the model gets the
refusal as the call's error result)."""

from __future__ import annotations

from typing import Any

from hookstream import HookstreamError

__all__ = ["GuardrailError", "GuardrailFailed", "InputGuardrailTripped", "OutputGuardrailTripped",
           "ToolGuardrailTripped"]


class GuardrailError(HookstreamError):
    """A guardrail stopped something. ``guard`` names the guard (its function's ``__name__``);
    ``info`` is what the guard attached to its :class:`~hookstream_guardrails.Tripwire` (``None`` if nothing)."""

    code = "guardrail_error"

    def __init__(self, message: str, guard: str, info: Any = None) -> None:
        super().__init__(message)
        self.guard = guard
        self.info = info


class InputGuardrailTripped(GuardrailError):
    """An input guard tripped: the run's first model call was stopped (or never sent)."""

    code = "input_guardrail_tripped"


class OutputGuardrailTripped(GuardrailError):
    """An output guard tripped on the streamed text. ``text`` is the text of the model call that had
    been streamed before the trip (kept in the run's messages); with ``on_output="retry"`` and no
    retries left, the last rejected answer (never streamed)."""

    code = "output_guardrail_tripped"

    def __init__(self, message: str, guard: str, info: Any = None, text: str = "") -> None:
        super().__init__(message, guard, info)
        self.text = text


class ToolGuardrailTripped(GuardrailError):
    """A tool guard refused a call: not raised into the run (the call gets an error result and the run
    goes on); kept on :attr:`hookstream_guardrails.Guardrails.refusals` with ``tool`` and ``call_id``."""

    code = "tool_guardrail_tripped"

    def __init__(self, message: str, guard: str, info: Any = None, tool: str = "", call_id: str = "") -> None:
        super().__init__(message, guard, info)
        self.tool = tool
        self.call_id = call_id


class GuardrailFailed(GuardrailError):
    """A guard raised an exception (or returned something that is no verdict): the run ends, as when it
    tripped, since an unchecked input or output must not pass."""

    code = "guardrail_failed"
