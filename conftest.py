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
# double its 2 GB), the browser tests one Chromium at a time (two would starve a 2-core machine). A module
# whose module- or session-scoped fixture is expensive is a group too, or each worker would build it.
_GROUPS = (("plugins/hookstream-ray/", "ray"), ("tests/test_browser_e2e.py", "browser"),
           ("tests/test_install_wheels.py", "install-wheels"),  # 24 sdists and wheels, a venv
           ("plugins/hookstream-mcp/tests/test_mcp_conformance.py", "mcp-conformance"),  # the whole suite's run
           ("plugins/hookstream-otel/tests/test_phoenix_", "phoenix"),  # one Phoenix (phoenix_kit)
           ("tests/test_serve_resume_attack.py", "serve-resume-attack"),  # gunicorn and PostgreSQL servers
           ("tests/test_agui_store.py", "agui-store"),  # gunicorn on SQLite and on PostgreSQL
           ("tests/test_server_trust.py", "server-trust"),  # two gunicorn servers
           ("plugins/hookstream-dbos/tests/test_durable_serve_attack.py", "durable-serve-attack"))


def _group(path: str) -> str | None:
    return next((name for prefix, name in _GROUPS if path.startswith(prefix)), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = str(config.rootpath) + os.sep
    for item in items:
        group = _group(str(item.path).removeprefix(root))
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` grouping by the table above, from the node ids the controller has. xdist 3.8
    passes a test's ``xdist_group`` to the controller by appending ``@group`` to its node id, which pytest
    9.2's structured node ids ignore (pytest-dev/pytest-xdist#1386): every group was split across the
    workers, so both started a Ray cluster and built the wheels."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class PathGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = _group(nodeid.split("::", 1)[0])
            return group if group is not None else super()._split_scope(nodeid)

    return PathGroups(config, log)  # type: ignore[arg-type]


@pytest.fixture(autouse=True, scope="session")
def _hookstream_user_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``hookstream chat`` keeps a conversation log in the user data directory: tests (and the CLI
    processes they start, which inherit the environment) keep theirs in a temporary one."""
    os.environ.setdefault("HOOKSTREAM_USER_DIR", str(tmp_path_factory.mktemp("hookstream-user")))
