"""Plugin discovery: entry points, a broken plugin reported and skipped, block and disable variables."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hookstream.errors import UnknownPluginError
from hookstream.plugin import Registry


def make_dist(tmp: Path, name: str, module_src: str) -> Path:
    """A real installed-looking distribution (dist-info with entry points) on a path of its own."""
    site = tmp / f"site-{name}"
    site.mkdir()
    (site / f"{name}_mod.py").write_text(textwrap.dedent(module_src))
    info = site / f"{name}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[hookstream]\n{name} = {name}_mod\n")
    return site


def run_cli(args: list[str], paths: list[Path], **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), **env}
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True,
                          env=full_env, timeout=60)


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
