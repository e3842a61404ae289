"""The ``hookstream`` entry point: registers the ``guardrails`` run plugin (off until a run asks for it:
``chat(..., plugins=[("guardrails", {"output": [...]})])`` or ``plugins=[Guardrails(...)]``). Importing
it does not import the guardrails themselves."""

from __future__ import annotations

from hookstream.plugin import RunPluginRegistrar, hookimpl


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    register("guardrails", "hookstream_guardrails.guardrails:Guardrails")
