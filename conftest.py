"""Repository-wide test hooks: the secrets scan over every test of the core and the plugins."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# -- secrets scan -------------------------------------------------------------------------------------
# Every key the tests hand to providers (several are echoed back by the test servers, as real
# compatible servers and proxies do). None may reach a test's captured stdout, stderr or log records,
# nor any file the tests leave under the temporary directory (recordings included).
SECRET_KEYS = (
    "sk-test-SECRET-0123456789",
    "sk-ant-test-SECRET-0123456789",
    "sk-SECRET-hookstream-0123456789abcdef",
    "sk-ECHOED-hookstream-0123456789abcdef",
    "AIza-secret-key-for-tests",
    "sk-test-DO-NOT-LEAK-1234567890",
)


_SOURCE_SUFFIXES = frozenset({".py", ".pyc", ".whl", ".gz", ".toml", ".md", ".cfg", ".txt", ".ini"})
_SKIP_DIRS = frozenset({"venv", ".venv", "site-packages", "node_modules", "__pycache__"})


def _leaked(text: str) -> str | None:
    return next((k for k in SECRET_KEYS if k in text), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    for name, content in report.sections:
        key = _leaked(content)
        if key is not None and report.passed and report.when == "call":
            report.outcome = "failed"
            report.longrepr = f"secrets scan: API key {key[:6]}... appeared in {name}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        # Under pytest-xdist the controller scans once: its base temporary directory holds every worker's.
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    try:
        base = factory.getbasetemp()
    except (OSError, ValueError):
        return
    leaks = []
    for path in base.rglob("*"):
        # Outputs only: copies of the sources (which spell the test keys out) and virtualenvs are not.
        if path.suffix in _SOURCE_SUFFIXES or not _SKIP_DIRS.isdisjoint(path.parts):
            continue
        try:
            if path.is_file() and path.stat().st_size < 64 * 1024 * 1024:
                data = path.read_bytes()
                leaks += [f"{path}: {k[:6]}..." for k in SECRET_KEYS if k.encode() in data]
        except OSError:
            continue
    if leaks:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nsecrets scan: API keys found in files the tests wrote:\n  " + "\n  ".join(leaks[:20]))


# -- pytest-xdist groups ------------------------------------------------------------------------------
# tox runs the suite on every core (-n auto --dist loadgroup). Tests that share something heavier than a
# port run on one worker: the Ray tests share one two-node cluster per session (a cluster per worker would
# double its 2 GB), the browser tests one Chromium at a time (two would starve a 2-core machine).
_GROUPS = (("plugins/hookstream-ray/", "ray"), ("tests/test_browser_e2e.py", "browser"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = str(config.rootpath) + os.sep
    for item in items:
        path = str(item.path).removeprefix(root)
        group = next((name for prefix, name in _GROUPS if path.startswith(prefix)), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True, scope="session")
def _hookstream_user_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``hookstream chat`` keeps a conversation log in the user data directory: tests (and the CLI
    processes they start, which inherit the environment) keep theirs in a temporary one."""
    os.environ.setdefault("HOOKSTREAM_USER_DIR", str(tmp_path_factory.mktemp("hookstream-user")))
