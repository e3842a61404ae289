"""The repository's ``--dist loadgroup`` groups (conftest.py ``_GROUPS``) hold under the installed pytest and
pytest-xdist: every test of a group runs on one worker. They failed silently before (pytest 9.2's node ids
drop xdist 3.8's ``@group`` suffix, pytest-dev/pytest-xdist#1386), so each worker started its own Ray cluster
and built every wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("xdist", reason="needs pytest-xdist (requirements/test.txt)")

# Records which worker ran each of its tests.
RECORDER = """
import os
import pytest

@pytest.mark.parametrize("n", range(8))
def test_one(n):
    with open(os.environ["RECORD"], "a") as f:
        f.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    shutil.copyfile(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "tests" / "test_browser_e2e.py").write_text(RECORDER)  # named like the "browser" group
    (tmp_path / "tests" / "test_free.py").write_text(RECORDER)  # in no group
    record = tmp_path / "record.txt"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "tests"],
                          cwd=tmp_path, env={**os.environ, "RECORD": str(record)}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in record.read_text().splitlines()]
    assert len(rows) == 16, rows
    assert len({worker for module, worker in rows if module == "test_browser_e2e"}) == 1, rows
