"""Helpers for the tests against a real Arize Phoenix (PyPI ``arize-phoenix``, installed into
``.otel-backend/`` by ``scripts/install-otel-backend``, which ``./dev test`` runs): start it on
127.0.0.1, run ``hookstream demo`` exporting to it, read the spans back through its REST API
(``GET /v1/projects/{project}/spans``). pytest puts this folder on sys.path.

A missing Phoenix skips the test with the reason, and fails it when the environment variable CI is set.
``HOOKSTREAM_PHOENIX`` may name another ``phoenix`` executable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

__all__ = ["DEMO_SPANS", "ROOT", "demo_spans", "get_json", "missing", "phoenix_fixture", "phoenix_server", "wait_for"]

ROOT = Path(__file__).resolve().parents[3]
# The span names of the offline demo's trace (two model calls, two tools).
DEMO_SPANS = ["invoke_agent", "chat gpt-4o-mini", "execute_tool get_weather", "execute_tool convert_currency"]


def missing(why: str) -> NoReturn:
    """Skip with ``why``; fail instead when CI is set (there the backend must be installed)."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def _phoenix() -> Path:
    given = os.environ.get("HOOKSTREAM_PHOENIX")
    path = Path(given) if given else ROOT / ".otel-backend" / "bin" / "phoenix"
    if not path.exists():
        missing(f"Arize Phoenix not installed at {path}: run scripts/install-otel-backend")
    return path


_UVICORN_RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read() or b"null")


def wait_for(check: Callable[[], Any], what: str, proc: subprocess.Popen[bytes] | None = None,
             attempts: int = 600) -> Any:
    """Poll ``check`` every 0.5 s until it returns something true; an ``OSError`` counts as not yet."""
    # Liveness, not speed: Phoenix starts slowly on a loaded 2-core machine (a minute is usual).
    for _ in range(attempts):
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"phoenix exited with {proc.returncode} while waiting for {what}")
        try:
            got = check()
        except OSError:
            got = None
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"gave up waiting for {what}")


@contextmanager
def phoenix_server(workdir: Path) -> Iterator[str]:
    """``phoenix serve`` on loopback ports it chose with its data under ``workdir``; yields its base URL."""
    exe = _phoenix()
    # Port 0 for both: Phoenix binds ports of its own (a port picked here and released could be taken by
    # another process first). Its banner repeats the 0; uvicorn's own line names the HTTP port it got.
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(workdir / "phoenix"), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": "0", "PHOENIX_GRPC_PORT": "0", "PHOENIX_TELEMETRY_ENABLED": "false"}
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    log_path = workdir / "phoenix.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        running = wait_for(lambda: _UVICORN_RUNNING.search(log_path.read_text("utf-8", "replace")),
                           "phoenix to listen", proc)
        url = f"http://127.0.0.1:{running.group(1)}"
        wait_for(lambda: get_json(url + "/v1/projects") is not None, "phoenix to start", proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


_running: list[str] = []  # the URL of the Phoenix this session started, while it runs


@pytest.fixture(scope="session", name="phoenix")
def phoenix_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Phoenix for the session (its start is most of these tests' time): each test sends its trace to
    a project of its own, so they share the server and not the spans they read back.

    Every test module that imports this fixture gets its own copy of it (pytest keys fixtures by the
    module that holds them), so the first copy starts Phoenix and the others reuse it; the modules share
    an xdist group, so they run on one worker."""
    if _running:
        yield _running[0]
        return
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        _running.append(url)
        try:
            yield url
        finally:
            _running.clear()


def demo_spans(phoenix: str, project: str) -> list[dict[str, Any]]:
    """Run ``hookstream demo`` exporting its trace to ``phoenix`` into ``project``; return the five spans
    as Phoenix's REST API answers them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=phoenix,  # the exporter adds /v1/traces
        OTEL_SERVICE_NAME="hookstream-demo",
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",  # Phoenix's project
        OTEL_METRICS_EXPORTER="none",  # Phoenix takes traces only
    )
    out = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0", "--output", "final-json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ERROR" not in out.stderr, out.stderr  # the export succeeded

    def spans() -> list[dict[str, Any]] | None:
        doc = get_json(f"{phoenix}/v1/projects/{project}/spans?limit=100")
        data = doc.get("data") if isinstance(doc, dict) else None
        return data if data and len(data) >= 5 else None

    got: list[dict[str, Any]] = wait_for(spans, "the demo's five spans in phoenix")
    return got
