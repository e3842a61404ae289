"""End to end against a real OpenTelemetry backend: Arize Phoenix (PyPI ``arize-phoenix``, installed into
``.otel-backend/`` by ``scripts/install-otel-backend``, which ``./dev test`` runs) is started on
127.0.0.1, ``hookstream demo`` runs in a subprocess with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at it
(the plugin sets the SDK up from the environment and flushes at exit), and the spans are read back
through Phoenix's own REST API (``GET /v1/projects/{project}/spans``).

Skips with a message when Phoenix is not installed; fails instead when the environment variable CI is
set. ``HOOKSTREAM_PHOENIX`` may name another ``phoenix`` executable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
PROJECT = "hookstream-e2e"


def _phoenix() -> Path:
    given = os.environ.get("HOOKSTREAM_PHOENIX")
    path = Path(given) if given else ROOT / ".otel-backend" / "bin" / "phoenix"
    if not path.exists():
        why = f"Arize Phoenix not installed at {path}: run scripts/install-otel-backend"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read() or b"null")


def _wait(check: Any, what: str, proc: subprocess.Popen[bytes] | None = None, attempts: int = 600) -> Any:
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


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    exe = _phoenix()
    port, grpc = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    log = (tmp_path / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _get(url + "/v1/projects") is not None, "phoenix to start", proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_the_demo_trace_reaches_phoenix(phoenix: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=phoenix,  # the exporter adds /v1/traces
        OTEL_SERVICE_NAME="hookstream-demo",
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={PROJECT}",  # Phoenix's project
        OTEL_METRICS_EXPORTER="none",  # Phoenix takes traces only
    )
    out = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0", "--output", "final-json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ERROR" not in out.stderr, out.stderr  # the export succeeded

    def spans() -> list[dict[str, Any]] | None:
        doc = _get(f"{phoenix}/v1/projects/{PROJECT}/spans?limit=100")
        data = doc.get("data") if isinstance(doc, dict) else None
        return data if data and len(data) >= 5 else None

    got = _wait(spans, "the demo's five spans in phoenix")
    assert len(got) == 5
    by_id = {s["context"]["span_id"]: s for s in got}
    (agent,) = [s for s in got if s["name"] == "invoke_agent"]
    assert agent.get("parent_id") is None
    children = sorted(s["name"] for s in got if s.get("parent_id") == agent["context"]["span_id"])
    assert children == ["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool convert_currency",
                        "execute_tool get_weather"]
    assert len({s["context"]["trace_id"] for s in by_id.values()}) == 1
    chats = [s for s in got if s["name"].startswith("chat ")]
    assert sorted(s["attributes"]["gen_ai.response.finish_reasons"][0] for s in chats) == ["stop", "tool_calls"]
    assert all(s["attributes"]["gen_ai.provider.name"] == "openai" for s in chats)
    assert all(isinstance(s["attributes"]["gen_ai.usage.output_tokens"], int) for s in chats)
    tools = {s["attributes"]["gen_ai.tool.name"]: s["attributes"]["gen_ai.tool.call.id"]
             for s in got if s["name"].startswith("execute_tool ")}
    assert tools == {"get_weather": "call_hsdemo_weather01", "convert_currency": "call_hsdemo_currency02"}
    assert "demo-key" not in json.dumps(got)
