"""hookstream-guardrails: input, output and tool guardrails for hookstream runs, each a plain Python
callable (``docs/guardrails.md``).

:class:`Guardrails` is the run plugin (registered as ``guardrails``); a guard trips by returning
``True``, a message or a :class:`Tripwire`; tripped runs end with ``RUN_ERROR`` and the typed errors of
:mod:`hookstream_guardrails.errors` (``input_guardrail_tripped``, ``output_guardrail_tripped``,
``guardrail_failed``); a refused tool call is a :class:`ToolGuardrailTripped` on ``Guardrails.refusals``.

Names load on first use (PEP 562): every ``hookstream`` process loads the entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .errors import (
        GuardrailError,
        GuardrailFailed,
        InputGuardrailTripped,
        OutputGuardrailTripped,
        ToolGuardrailTripped,
    )
    from .guardrails import Guardrails, InputGuard, OutputGuard, ToolGuard, Tripwire

__all__ = ["GuardrailError", "GuardrailFailed", "Guardrails", "InputGuard", "InputGuardrailTripped", "OutputGuard",
           "OutputGuardrailTripped", "ToolGuard", "ToolGuardrailTripped", "Tripwire"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {
    **{name: "hookstream_guardrails.errors" for name in ("GuardrailError", "GuardrailFailed", "InputGuardrailTripped",
                                                         "OutputGuardrailTripped", "ToolGuardrailTripped")},
    **{name: "hookstream_guardrails.guardrails" for name in ("Guardrails", "InputGuard", "OutputGuard", "ToolGuard",
                                                             "Tripwire")},
})
