"""Built-in plugin: registered through the ``hookstream`` entry-point group like any other plugin.

Everything is registered as a ``"module:attribute"`` reference, imported when a run first asks for it
(:meth:`hookstream._registry.Registry.get`): a command that runs no tool and calls no AG-UI server
(``hookstream --version``, ``hookstream replay``) does not pay for the executors or the stop conditions.
"""

from __future__ import annotations

from ._hookspecs import (
    ChunkStrategyRegistrar,
    ProviderRegistrar,
    StopConditionRegistrar,
    ToolExecutorRegistrar,
    hookimpl,
)

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
