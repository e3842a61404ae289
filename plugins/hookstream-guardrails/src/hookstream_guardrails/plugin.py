"""The ``hookstream`` entry point: registers the ``guardrails`` run plugin (off until a run asks for it:
``chat(..., plugins=[("guardrails", {"output": [...]})])`` or ``plugins=[Guardrails(...)]``). Importing
it does not import the guardrails themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_run_plugins(register: Callable[[str, Any], None]) -> None:
    # hookstream._hookspecs.RunPluginRegistrar; hookstream.plugin does not export it yet.
    register("guardrails", "hookstream_guardrails.guardrails:Guardrails")
