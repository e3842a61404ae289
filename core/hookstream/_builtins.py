"""Built-in plugin: registered through the ``hookstream`` entry-point group like any other plugin.

Everything is registered as a ``"module:attribute"`` reference, imported when a run first asks for it
(:meth:`hookstream._registry.Registry.get`): a command that runs no tool and calls no AG-UI server
(``hookstream --version``, ``hookstream replay``) does not pay for the executors, the stop conditions or
the AG-UI client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._hookspecs import (
    ChunkStrategyRegistrar,
    ProviderRegistrar,
    RunPluginRegistrar,
    StopConditionRegistrar,
    ToolExecutorRegistrar,
    hookimpl,
)

if TYPE_CHECKING:
    import click

    from ._settings import CLIRun

# Executor name -> its class in ._agentloop.executors.
_EXECUTORS = {"thread": "ThreadExecutor", "sequential": "SequentialExecutor", "bounded": "BoundedExecutor",
              "process": "ProcessExecutor"}
# The names of ._agentloop.stop.BUILTIN (a test checks the two agree).
STOP_CONDITIONS = ("step_count_is", "has_tool_call", "finish_reason_is", "total_tokens_exceed", "cost_exceeds")


@hookimpl
def hookstream_register_chunk_strategies(register: ChunkStrategyRegistrar) -> None:
    register("immediate", "hookstream._processing.strategies:ImmediateStrategy")


@hookimpl
def hookstream_register_tool_executors(register: ToolExecutorRegistrar) -> None:
    for name, cls in _EXECUTORS.items():
        register(name, f"hookstream._agentloop.executors:{cls}")


@hookimpl
def hookstream_register_stop_conditions(register: StopConditionRegistrar) -> None:
    for name in STOP_CONDITIONS:
        register(name, f"hookstream._agentloop.stop:{name}")


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    # The offline ``test`` model (``--model test``, ``get_model("test")``): the testing kit's TestModel,
    # shipped in the core so a new user can try every command without a key or a network.
    register("test", "hookstream._fake_models:TestProvider")


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    # Off until a run asks for it (plugins=["budget"] or ("budget", {limits})): other runs never load it.
    register("budget", "hookstream._budget:Budget")


# The CLI commands that run chats, and so take the budget's limits.
_RUN_COMMANDS = ("chat", "batch", "serve")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command not in _RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--max-input-tokens"], type=click.IntRange(min=0), default=None, metavar="N",
                     help="End a run before a model request of more than N input tokens (budget plugin, "
                          "docs/tokens.md)."),
        click.Option(["--max-cost-usd"], type=click.FloatRange(min=0), default=None, metavar="USD",
                     help="End a run before a model request that would take its cost past USD (budget "
                          "plugin; prices from hookstream[prices])."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    limits = {k: options[k] for k in ("max_input_tokens", "max_cost_usd") if options.get(k) is not None}
    if limits:
        run.settings = run.settings.evolve(plugins=(*run.settings.plugins, ("budget", limits)))
