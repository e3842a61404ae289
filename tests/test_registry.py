"""Plugin discovery: entry points, a broken plugin reported and skipped, block and disable variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dist_kit import make_dist, run_cli
from hookstream.errors import UnknownPluginError
from hookstream.plugin import Registry, hookimpl, hookspec


def test_broken_plugin_is_reported_and_does_not_stop_the_cli(tmp_path: Path) -> None:
    broken = make_dist(tmp_path, "brokenplug", "raise RuntimeError('this plugin is broken on purpose')\n")
    good = make_dist(tmp_path, "goodplug", """
        from hookstream import ImmediateStrategy
        from hookstream.plugin import hookimpl

        @hookimpl
        def hookstream_register_chunk_strategies(register):
            register("good-immediate", ImmediateStrategy)
    """)
    proc = run_cli(["plugins"], [broken, good])
    assert proc.returncode == 0, proc.stderr
    assert "FAILED brokenplug: RuntimeError: this plugin is broken on purpose" in proc.stdout
    assert "goodplug  [goodplug 1.2.3]" in proc.stdout
    assert "good-immediate" in proc.stdout
    assert "builtins" in proc.stdout


def test_block_and_disable_variables(tmp_path: Path) -> None:
    good = make_dist(tmp_path, "goodplug2", """
        from hookstream.plugin import hookimpl

        @hookimpl
        def hookstream_register_stop_conditions(register):
            register("never", lambda: (lambda steps: False))
    """)
    assert "goodplug2" in run_cli(["plugins"], [good]).stdout
    assert "goodplug2" not in run_cli(["plugins"], [good], HOOKSTREAM_BLOCK_PLUGINS="x, goodplug2").stdout
    disabled = run_cli(["plugins"], [good], HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD="1").stdout
    assert "goodplug2" not in disabled and "builtins" in disabled


def test_builtins_register_through_the_same_mechanism() -> None:
    reg = Registry()
    assert reg.plugins["builtins"].distribution == "hookstream"
    assert {"thread", "sequential", "bounded"} <= set(reg.names("tool_executors"))
    assert "immediate" in reg.names("chunk_strategies")
    assert "step_count_is" in reg.names("stop_conditions")
    with pytest.raises(UnknownPluginError, match="no provider named 'nope'"):
        reg.provider("nope")


def test_duplicate_name_is_reported_not_overwritten() -> None:
    from hookstream.plugin import hookimpl

    class Dup:
        @staticmethod
        @hookimpl
        def hookstream_register_tool_executors(register):  # type: ignore[no-untyped-def]
            register("thread", object)

    reg = Registry()
    before = reg.get("tool_executors", "thread")
    reg.add_plugin(Dup(), "dup")
    assert reg.get("tool_executors", "thread") is before
    assert any("already registered" in f.error for f in reg.failures)


def test_builtin_stop_condition_names_match_the_stop_module() -> None:
    from hookstream._agentloop.stop import BUILTIN
    from hookstream._builtins import STOP_CONDITIONS

    assert set(STOP_CONDITIONS) == set(BUILTIN)


def test_loading_every_entry_point_imports_no_provider_adapter() -> None:
    # Issue 30: registration names things; a plugin's modules load on first use. A fresh process builds
    # the registry with every installed plugin and must not have imported any adapter, executor or client.
    probe = ("import json, sys, hookstream._registry as r; r.get_registry(); "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('hookstream'))))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOOKSTREAM_BLOCK_PLUGINS", "HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    loaded: list[str] = json.loads(out.stdout)
    # A plugin's package and its entry point (``hookstream_x.plugin``), nothing else of it.
    assert [m for m in loaded if m.startswith("hookstream_") and m.count(".") and not m.endswith(".plugin")] == []
    for core in ("hookstream_server._agui_client", "hookstream_replay.provider", "hookstream._agentloop.executors",
                 "hookstream._agentloop.stop", "hookstream._processing.processor"):
        assert core not in loaded


# -- plugins declare hooks (hookstream_addhooks, as pytest's pytest_addhooks) --------------------------------

DECLARES = """
    from hookstream.plugin import hookimpl, hookspec

    class GreetingSpecs:
        @staticmethod
        @hookspec(firstresult=True)
        def hookstream_greeting(name):
            '''A greeting for ``name``.'''

    @hookimpl
    def hookstream_addhooks(pluginmanager):
        pluginmanager.add_hookspecs(GreetingSpecs)

    @hookimpl
    def hookstream_register_commands(cli):
        import click

        @cli.command("greet")
        @click.argument("name")
        def greet(name):
            from hookstream import get_registry

            click.echo(get_registry().pm.hook.hookstream_greeting(name=name))
"""

IMPLEMENTS = """
    from hookstream.plugin import hookimpl

    @hookimpl
    def hookstream_greeting(name):
        return f"hello, {name}"
"""


@pytest.mark.parametrize("declaring_first", [True, False])
def test_a_plugin_declares_a_hook_another_implements_in_either_order(tmp_path: Path, declaring_first: bool) -> None:
    declares = make_dist(tmp_path, "declaresplug", DECLARES)
    implements = make_dist(tmp_path, "implementsplug", IMPLEMENTS)
    paths = [declares, implements] if declaring_first else [implements, declares]
    listed = run_cli(["plugins", "--json"], paths)
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert not [f for f in doc["failures"] if f["name"] in ("declaresplug", "implementsplug")]
    done = run_cli(["greet", "ada"], paths)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello, ada"


class GreetingSpecs:
    @staticmethod
    @hookspec(firstresult=True)
    def hookstream_greeting(name: str) -> str | None:
        """A greeting for ``name``."""


class Declares:
    @hookimpl
    def hookstream_addhooks(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(GreetingSpecs)


class Implements:
    @hookimpl
    def hookstream_greeting(self, name: str) -> str:
        return f"hello, {name}"


class Misspells:
    @hookimpl
    def hookstream_greating(self, name: str) -> str:
        return "typo"


@pytest.mark.parametrize("declaring_first", [True, False])
def test_unknown_hooks_are_refused_only_once_every_plugin_of_a_batch_loaded(declaring_first: bool) -> None:
    registry = Registry(autoload=False)
    plugins = [(Declares(), "declares"), (Implements(), "implements"), (Misspells(), "misspells")]
    with registry.loading():
        for plugin, name in plugins if declaring_first else plugins[::-1]:
            assert registry.add_plugin(plugin, name) is not None
    assert set(registry.plugins) == {"declares", "implements"}
    [failure] = registry.failures
    assert failure.name == "misspells" and failure.error.startswith("hookstream_greating: no such hook")
    assert registry.pm.hook.hookstream_greeting(name="ada") == "hello, ada"


def test_outside_a_batch_an_unknown_hook_is_refused_at_once() -> None:
    registry = Registry(autoload=False)
    assert registry.add_plugin(Implements(), "implements") is None
    assert registry.failures[0].error.startswith("hookstream_greeting: no such hook")


def test_a_run_plugin_implements_a_hook_a_plugin_declared() -> None:
    registry = Registry(autoload=False)
    assert registry.add_plugin(Declares(), "declares") is not None
    hooks = registry.run_hooks([Implements()])
    assert hooks is not None
    assert hooks.hook.hookstream_greeting(name="ada") == "hello, ada"
