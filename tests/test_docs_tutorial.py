"""The chunk-strategy tutorial, done as a reader would: its files are written out from the page, the
package is made discoverable through its entry point, and its usage sample and tests run."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from guide_kit import files as guide_files

DOC = Path(__file__).resolve().parent.parent / "docs" / "tutorial-chunk-strategy.md"
PLUGIN = "hookstream-lines"


def build(tmp: Path) -> dict[str, str]:
    """Write the page's files under ``tmp`` (file blocks, ``tests/guide_kit.py``); return them by path."""
    files = guide_files(DOC.read_text("utf-8"))
    for rel, code in files.items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    project = tomllib.loads(files[f"{PLUGIN}/pyproject.toml"])["project"]
    # What installing the folder would leave for importlib.metadata: a dist-info with the entry points.
    # (tests/test_plugin_guides.py installs it for real, in a fresh venv; this is the quick check.)
    info = tmp / PLUGIN / "src" / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    eps = project["entry-points"]["hookstream"]
    (info / "entry_points.txt").write_text("[hookstream]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    return files


def test_tutorial_package_is_found_by_name_and_its_tests_pass(tmp_path: Path) -> None:
    files = build(tmp_path)
    assert {f"{PLUGIN}/src/hookstream_lines/plugin.py", f"{PLUGIN}/tests/test_lines_strategy.py"} <= set(files)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / PLUGIN / "src")}
    usage = (
        "from hookstream import StreamProcessor\n"
        "from hookstream.events import TextMessageContent, TextMessageEnd, TextMessageStart\n"
        "seen = []\n"
        "p = StreamProcessor(strategy='lines', on_text_update=lambda mid, text: seen.append(text))\n"
        "for e in [TextMessageStart('m'), TextMessageContent('m', 'one\\ntw'), TextMessageContent('m', 'o\\n'),"
        " TextMessageEnd('m')]:\n"
        "    p.process_chunk(e)\n"
        "p.finalize()\n"
        "print(seen)\n"
    )
    run = subprocess.run([sys.executable, "-c", usage], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("'one\\ntwo\\n']")
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=tmp_path / PLUGIN, capture_output=True, text=True, env=env, timeout=120)
    assert tests.returncode == 0, tests.stdout[-3000:]
