"""The chunk-strategy tutorial, done as a reader would: its files are written out from the page, the
package is made discoverable through its entry point, and its usage sample and tests run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from guide_kit import write_plugin

DOC = Path(__file__).resolve().parent.parent / "docs" / "tutorial-chunk-strategy.md"
PLUGIN = "hookstream-lines"


def build(tmp: Path) -> dict[str, str]:
    """Write the page's files and the plugin's dist-info under ``tmp``; return the files by path."""
    return write_plugin(DOC, tmp, PLUGIN)


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
