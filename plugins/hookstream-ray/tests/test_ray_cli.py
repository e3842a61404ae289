"""``--ray`` and ``--workers`` of ``hookstream batch`` come from this plugin (its CLI hooks), not the core:
listed in ``batch --help``, ``--workers`` without ``--ray`` a usage error, the flags without the plugin
loaded a usage error saying what to install, and loading the plugin imports neither Ray nor the batch
runner. (The flags at work on a Ray cluster: ``test_ray_batch.py``.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hookstream.testing import run_cli as invoke_cli

MODEL = "openai:gpt-4o-mini"


def batch_args(tmp_path: Path, *extra: str) -> list[str]:
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "a", "prompt": "hi"}) + "\n")
    return ["batch", str(tmp_path / "in.jsonl"), "--model", MODEL, "--output", str(tmp_path / "out.jsonl"), *extra]


def run_cli(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_the_flags_are_in_batch_help() -> None:
    res = invoke_cli(["batch", "--help"])
    assert res.exit_code == 0
    assert "--ray [ADDRESS]" in res.output and "--workers" in res.output


def test_workers_without_ray_is_a_usage_error(tmp_path: Path) -> None:
    res = invoke_cli(batch_args(tmp_path, "--workers", "2"))
    assert res.exit_code == 2 and "--workers is for --ray" in res.output
    assert not (tmp_path / "out.jsonl").exists()


def test_without_the_plugin_the_flags_say_what_to_install(tmp_path: Path) -> None:
    for flag in (["--ray"], ["--workers", "2"]):
        done = run_cli(batch_args(tmp_path, *flag), HOOKSTREAM_BLOCK_PLUGINS="ray")
        assert done.returncode == 2
        # Run from a checkout, the hint names the plugin's folder (nothing is on the package index; issue 32).
        assert re.search(rf"{flag[0]} needs the hookstream-ray plugin: hookstream install "
                         r"'\S*plugins/hookstream-ray\[ray\]'", done.stderr), done.stderr


def test_loading_the_plugin_imports_neither_ray_nor_the_batch_runner() -> None:
    code = ("import sys, hookstream; reg = hookstream.get_registry(); "
            "print('ray' in reg.plugins, 'ray' in sys.modules, 'hookstream_ray.batch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr
