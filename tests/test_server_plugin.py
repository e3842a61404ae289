"""The server is a plugin distribution (issue 39): ``hookstream.server`` finds it through its entry point,
``hookstream serve`` comes from its ``hookstream_register_commands``, and without it the command and the
``agui:`` provider say what to install."""

from __future__ import annotations

import os
import subprocess
import sys

import hookstream.server
from hookstream.server import Principal, make_app


def _blocked(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOKSTREAM_BLOCK_PLUGINS": "server"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_face_gives_the_plugins_names_and_the_cores_own() -> None:
    assert make_app.__module__ == "hookstream_server.agui"
    assert Principal.__module__ == "hookstream._principal"  # the hook specs name it: it stays in the core
    assert set(hookstream.server.__all__) <= set(dir(hookstream.server))


def test_serve_without_the_plugin_names_it() -> None:
    proc = _blocked("-m", "hookstream", "serve", "--demo")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "`hookstream serve` needs the hookstream-server plugin: hookstream install" in proc.stderr
    assert "hookstream-server" in proc.stderr.rsplit("hookstream install", 1)[1]


def test_the_agui_provider_without_the_plugin_names_it() -> None:
    proc = _blocked("-c", "from hookstream import get_model\nget_model('agui:http://127.0.0.1:9/')")
    assert "no provider named 'agui'" in proc.stderr and "hookstream-server" in proc.stderr, proc.stderr
