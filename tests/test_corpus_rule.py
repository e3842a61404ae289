"""The rule for tests that need ``../shared``: skip with a message, but fail when ``$CI`` is set.

Each case runs a small pytest in a subprocess with a corpus path that does not exist, once with
``CI=1`` and once without, and reads its outcome: every corpus lookup goes through
:func:`hookstream.testing.conformance.require_corpus` / ``shared_missing``, so a CI run can never pass
by skipping its corpus tests, and a local run says why it skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = textwrap.dedent('''
    from pathlib import Path

    from hookstream.testing.conformance import require_corpus


    def test_needs_the_corpus():
        require_corpus(Path(__file__))


    def test_needs_the_external_corpus():
        require_corpus(Path(__file__), name="provider-streams-external")


    def test_conformance_fixture(hookstream_conformance):
        hookstream_conformance("openai", ["openai-chat"])
''')


def pytest_in(cwd: Path, *args: str, ci: bool, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "HOOKSTREAM_CORPUS", "HOOKSTREAM_CORPUS_EXTERNAL")}
    full.update(env)
    if ci:
        full["CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    (tmp_path / "test_probe.py").write_text(PROBE)
    return tmp_path


WRONG = {"HOOKSTREAM_CORPUS": "/nonexistent/provider-streams",
         "HOOKSTREAM_CORPUS_EXTERNAL": "/nonexistent/provider-streams-external"}


def test_a_wrong_corpus_path_fails_under_ci_with_the_reason(probe: Path) -> None:
    proc = pytest_in(probe, ci=True, **WRONG)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "3 failed" in out, out
    assert "$HOOKSTREAM_CORPUS=/nonexistent/provider-streams is not a directory" in out
    assert "$HOOKSTREAM_CORPUS_EXTERNAL=/nonexistent/provider-streams-external is not a directory" in out
    assert "CI is set" in out


def test_a_wrong_corpus_path_skips_with_the_reason_without_ci(probe: Path) -> None:
    proc = pytest_in(probe, ci=False, **WRONG)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "3 skipped" in out, out
    assert "$HOOKSTREAM_CORPUS=/nonexistent/provider-streams is not a directory" in out
    assert "$HOOKSTREAM_CORPUS_EXTERNAL=/nonexistent/provider-streams-external is not a directory" in out


def test_no_shared_folder_beside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()  # a repository with no ../shared beside it
    (repo / "test_probe.py").write_text(PROBE)
    proc = pytest_in(repo, "test_probe.py::test_needs_the_corpus", ci=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed" in out, out
    assert f"shared corpus not found at {tmp_path / 'shared' / 'provider-streams'}" in out, out
    proc = pytest_in(repo, "test_probe.py::test_needs_the_corpus", ci=False)
    assert proc.returncode == 0 and "1 skipped" in proc.stdout, proc.stdout


def test_plugin_corpus_tests_do_not_skip_silently_under_ci() -> None:
    """The parametrized corpus tests of a plugin keep one "no-corpus" case, so they fail too."""
    pytest.importorskip("hookstream_gemini", reason="the gemini plugin is not installed")
    tests = ROOT / "plugins" / "hookstream-gemini" / "tests" / "test_gemini_corpus.py"
    proc = pytest_in(ROOT, str(tests), "-k", "no-corpus or present", ci=True, **WRONG)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "7 failed" in out, out  # present, and one no-corpus case of whole, crlf, extras, 3 fragmented
    assert "is not a directory" in out
