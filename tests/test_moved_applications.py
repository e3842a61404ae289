"""Applications that left the core for plugins (issue 39): ``batch --provider-batch``, ``chat --timing``,
``hookstream process``, ``hookstream batch``, ``hookstream tokens`` and the ``replay`` provider. Without
their plugin the flag, the command or the provider names what to install (a usage error, no traceback).
In a subprocess with the plugin blocked (``HOOKSTREAM_BLOCK_PLUGINS``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _blocked(plugin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOKSTREAM_BLOCK_PLUGINS": plugin}
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize(("plugin", "args", "dist"), [
    ("provider-batch", ["batch", "IN", "-m", "test", "--output", "OUT", "--provider-batch"],
     "hookstream-provider-batch"),
    ("timing", ["chat", "hi", "-m", "test", "--no-log", "--timing"], "hookstream-timing"),
    ("process", ["process", "EVENTS"], "hookstream-process"),
    ("batch", ["batch", "IN", "-m", "test", "--output", "OUT"], "hookstream-batch"),
    ("budget", ["tokens", "hello", "-m", "test"], "hookstream-budget"),
])
def test_without_the_plugin_the_cli_names_it(tmp_path: Path, plugin: str, args: list[str], dist: str) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "hi"}\n')
    events = tmp_path / "events.jsonl"
    events.write_text("")
    paths = {"IN": str(inp), "OUT": str(tmp_path / "out.jsonl"), "EVENTS": str(events)}
    proc = _blocked(plugin, *(paths.get(a, a) for a in args))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"needs the {dist} plugin" in proc.stderr, proc.stderr


def test_without_the_replay_plugin_a_replay_run_names_it(tmp_path: Path) -> None:
    # The replay provider left the core: the registry's first-party table names its distribution.
    from hookstream._registry import FIRST_PARTY

    assert FIRST_PARTY["providers"]["replay"] == "hookstream-replay"
    proc = _blocked("replay", "chat", "hi", "-m", f"replay:{tmp_path}", "--no-log")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "no provider named 'replay'" in proc.stderr and "hookstream-replay" in proc.stderr, proc.stderr
