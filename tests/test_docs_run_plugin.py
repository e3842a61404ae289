"""The run-plugin tutorial (docs/tutorial-run-plugin.md), done as a reader would: its files are written out
from the page, the package is made discoverable through its entry point, and its own tests run against the
demo server in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from guide_kit import write_plugin

DOC = Path(__file__).resolve().parent.parent / "docs" / "tutorial-run-plugin.md"
PLUGIN = "hookstream-audit"


def test_tutorial_run_plugin_is_found_by_name_and_its_tests_pass(tmp_path: Path) -> None:
    files = write_plugin(DOC, tmp_path, PLUGIN)
    assert {f"{PLUGIN}/src/hookstream_audit/plugin.py", f"{PLUGIN}/tests/test_audit.py"} <= set(files)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / PLUGIN / "src")}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=tmp_path / PLUGIN, capture_output=True, text=True, env=env, timeout=180)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "2 passed" in tests.stdout
