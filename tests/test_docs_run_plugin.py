"""The run-plugin tutorial (docs/tutorial-run-plugin.md), done as a reader would: its files are written out
from the page, the package is made discoverable through its entry point, and its own tests run against the
demo server in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from guide_kit import files as guide_files

DOC = Path(__file__).resolve().parent.parent / "docs" / "tutorial-run-plugin.md"
PLUGIN = "hookstream-audit"


def test_tutorial_run_plugin_is_found_by_name_and_its_tests_pass(tmp_path: Path) -> None:
    files = guide_files(DOC.read_text("utf-8"))
    assert {f"{PLUGIN}/src/hookstream_audit/plugin.py", f"{PLUGIN}/tests/test_audit.py"} <= set(files)
    for rel, code in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    project = tomllib.loads(files[f"{PLUGIN}/pyproject.toml"])["project"]
    # What installing the folder would leave for importlib.metadata: a dist-info with the entry points.
    info = tmp_path / PLUGIN / "src" / f"hookstream_audit-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    eps = project["entry-points"]["hookstream"]
    (info / "entry_points.txt").write_text("[hookstream]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / PLUGIN / "src")}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=tmp_path / PLUGIN, capture_output=True, text=True, env=env, timeout=180)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "2 passed" in tests.stdout
