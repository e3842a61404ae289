"""hookstream's AG-UI output checked by the official ``@ag-ui/client`` in Node.

``HttpAgent`` runs against ``hookstream serve --demo`` (a real subprocess on waitress) and against the
same application served in-process, whose event production times give the latency from an event being
produced to its arrival in the Node client (reported, not asserted: see test_agui_flush.py). Every
event is piped through the client's own ``enforceEvents()`` and ``verifyEvents()``; so is every stream
of the shared provider corpus, replayed through its adapter and converted to AG-UI JSON.

Needs Node and ``tests/e2e/node_modules`` (``scripts/install-browser-deps``); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_kit import messages_after, serve_demo_process

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
SCRIPT = E2E / "agui_check.mjs"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="Node.js not found: install it, then run scripts/install-browser-deps"),
    pytest.mark.skipif(not (E2E / "node_modules" / "@ag-ui" / "client").is_dir(),
                       reason="tests/e2e/node_modules missing: run scripts/install-browser-deps"),
]

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")
pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from hookstream import ToolContext  # noqa: E402
from hookstream.events import BaseEvent, to_dict  # noqa: E402
from hookstream.server import RunInput, RunStream, make_app  # noqa: E402
from hookstream.testing import demo_factory, replay_body  # noqa: E402
from hookstream.testing.conformance import corpus_providers, require_corpus  # noqa: E402

# hookstream fields beyond the AG-UI 1.0 schema (see hookstream.events); enforceEvents() strips them with
# a warning, which is allowed. Any other warning is a failure.
EXTENSION_FIELDS = ("/finishReason", "/rawFinishReason", "/input'", "/result'", "/delta'", "/error'",
                    # a step's response details (issue 12): response id, model version and usage per step
                    "'/responseId' on", "'/model' on STEP_FINISHED", "'/model' on RUN_FINISHED",
                    "'/usage' on STEP_FINISHED",
                    # a usage entry's price (issue 25, hookstream._events: ``cost`` in a ``usage`` entry)
                    "/cost' on")


def node(*args: str, timeout: float = 60) -> dict[str, Any]:
    assert NODE is not None
    proc = subprocess.run([NODE, str(SCRIPT), *args], cwd=E2E, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"node failed ({proc.returncode}): {proc.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(proc.stdout)
    unexpected = [w for w in result.get("warnings", []) if not any(f in w for f in EXTENSION_FIELDS)]
    assert not unexpected, unexpected
    return result


def run_input(messages: list[dict[str, Any]], run_id: str, resume: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    doc: dict[str, Any] = {"threadId": "thread-node", "runId": run_id, "messages": messages, "tools": [],
                           "context": [], "state": {}, "forwardedProps": {}}
    if resume is not None:
        doc["resume"] = resume
    return doc


def run_demo_conversation(url: str, tmp_path: Path) -> list[dict[str, Any]]:
    """Ask the demo question; approve every interrupt (CUSTOM approval-requested + RUN_FINISHED outcome
    interrupt) by resuming; return the Node results of each run."""
    question = "Weather in Paris, and 250 EUR in JPY?"
    messages: list[dict[str, Any]] = [{"id": "user-1", "role": "user", "content": question}]
    resume = None
    runs = []
    for n in range(3):
        path = tmp_path / f"input-{n}.json"
        path.write_text(json.dumps(run_input(messages, f"run-{n}", resume)))
        result = node("run", url, str(path))
        assert result["ok"], result.get("error")
        runs.append(result)
        last = result["events"][-1]
        assert last["type"] == "RUN_FINISHED", last
        outcome = last.get("outcome") or {"type": "success"}
        if outcome["type"] != "interrupt":
            return runs
        messages = messages_after(messages, result["events"])
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
                  for i in outcome["interrupts"]]
    raise AssertionError("the demo kept interrupting")


@pytest.fixture(scope="module")
def serve_demo() -> Iterator[str]:
    with serve_demo_process("--delay", "0.002") as url:
        yield url


def test_http_agent_runs_the_demo_through_enforce_and_verify(serve_demo: str, tmp_path: Path) -> None:
    runs = run_demo_conversation(serve_demo, tmp_path)
    events = [e for r in runs for e in r["events"]]
    types = [e["type"] for e in events]
    assert types[0] == "RUN_STARTED" and events[0]["protocolVersion"] == "1.0"
    assert types.count("TOOL_CALL_RESULT") == 2
    final = runs[-1]["events"][-1]
    assert final["type"] == "RUN_FINISHED" and final["outcome"]["type"] == "success"
    assert final["usage"][0]["inputTokens"] > 0
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "Paris" in text and "40,575" in text


def test_bad_run_input_gets_400(serve_demo: str) -> None:
    import requests

    resp = requests.post(serve_demo, data=b'{"threadId": "t"}', timeout=60)
    assert resp.status_code == 400 and "runId" in resp.json()["error"]["message"]


class _Timed:
    """Records when each event leaves the engine (before SSE framing), in epoch milliseconds."""

    def __init__(self, inner: RunStream, produced: list[float]) -> None:
        self.inner, self.produced = inner, produced

    def __iter__(self) -> Iterator[BaseEvent]:
        for ev in self.inner:
            self.produced.append(time.time() * 1000)
            yield ev

    def cancel(self) -> None:
        self.inner.cancel()


def test_latency_from_event_produced_to_node_arrival(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from waitress.server import create_server

    produced: list[float] = []
    demo = demo_factory(delay=0.005, approval=False)

    def timed(run: RunInput) -> RunStream:
        return _Timed(demo(run), produced)

    server = create_server(make_app(stream_factory=timed), host="127.0.0.1", port=0, threads=4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.effective_port}/"  # type: ignore[union-attr]
        path = tmp_path / "input.json"
        path.write_text(json.dumps(run_input([{"id": "u", "role": "user", "content": "hi"}], "run-latency")))
        result = node("run", url, str(path))
    finally:
        server.close()
    assert result["ok"], result.get("error")
    arrivals = result["arrivals"]
    assert len(arrivals) == len(produced) == len(result["events"])
    latencies = sorted(a - p for a, p in zip(arrivals, produced, strict=True))
    summary = {
        "events": len(latencies),
        "median_ms": round(statistics.median(latencies), 3),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        "max_ms": round(latencies[-1], 3),
    }
    artifacts = ROOT / "artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "agui-latency.json").write_text(json.dumps(summary, indent=2))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    line = (f"AG-UI latency, event produced -> arrival in @ag-ui/client (Node), {summary['events']} events: "
            f"median {summary['median_ms']} ms, p95 {summary['p95_ms']} ms, max {summary['max_ms']} ms")
    if reporter is not None:
        reporter.write_line("\n" + line)
    print(line)
    # A report, not a pass mark: a speed limit would fail on a loaded machine. That each event is sent
    # as it is produced is proved by order in test_agui_flush.py; numbers to track go in benchmarks/.


def test_every_corpus_stream_passes_enforce_and_verify(tmp_path: Path) -> None:
    corpus = require_corpus(ROOT)
    providers = corpus_providers(corpus)
    from hookstream import get_registry

    installed = set(get_registry().names("providers"))
    streams, missing = [], []
    for path in sorted(corpus.glob("*.sse")):
        provider = providers.get(path.name.split("__", 1)[0])
        if provider not in installed:
            missing.append(path.name)
            continue
        events, _ = replay_body(provider, path.read_bytes())
        streams.append({"name": path.stem, "events": [to_dict(e) for e in events]})
    if not streams:
        pytest.skip(f"no provider plugin installed for the corpus (missing: {missing[:3]}...)")
    path = tmp_path / "streams.json"
    path.write_text(json.dumps(streams))
    result = node("verify", str(path), timeout=120)
    bad = [r for r in result["results"] if not r["ok"]]
    assert not bad, bad
    assert len(result["results"]) == len(streams)
    if os.environ.get("CI") and missing:
        pytest.fail(f"corpus streams without an installed provider: {missing}")


def _agent_tool_runs() -> list[dict[str, Any]]:
    """Runs whose agent tools stream nested runs: a success (the sub-agent calls a tool of its own), a
    sub-agent that fails, a parent cancelled while the sub-agent's tool waits, and an agent tool inside an
    agent tool; each as AG-UI JSON events."""
    from engine_kit import text_body, tool_body
    from hookstream import Agent, chat, get_model
    from hookstream.testing import LoopbackServer, Response

    def at(server: LoopbackServer) -> Any:
        return get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-test")

    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key}=42"

    streams: list[dict[str, Any]] = []
    call = tool_body(("call_p1", "research", {"prompt": "find x"}))
    with LoopbackServer([Response(call), Response(text_body("x is 42."))]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "lookup", {"key": "x"}))),
                            Response(text_body("Found x=42."))]) as sub:
        tool = Agent(at(sub), tools=[lookup]).as_tool("research", "Research.")
        streams.append({"name": "agent-tool", "events": [to_dict(e) for e in chat(at(parent), "x?", tools=[tool])]})

    bad = Response(b'{"error": {"message": "nope", "type": "invalid_request_error"}}', status=400,
                   content_type="application/json")
    with LoopbackServer([Response(call), Response(text_body("failed."))]) as parent, LoopbackServer([bad]) as sub:
        tool = Agent(at(sub)).as_tool("research", "Research.")
        streams.append({"name": "agent-tool-fails",
                        "events": [to_dict(e) for e in chat(at(parent), "x?", tools=[tool])]})

    started = threading.Event()

    def wait(ctx: ToolContext[Any]) -> str:
        """Wait until cancelled."""
        started.set()
        ctx.cancellation.wait(30)
        return "stopped"

    with LoopbackServer([Response(call)]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "wait", {})))]) as sub:
        tool = Agent(at(sub), tools=[wait]).as_tool("research", "Research.")
        stream = chat(at(parent), "x?", tools=[tool])
        events = []
        for ev in stream:
            events.append(to_dict(ev))
            if ev.type == "TOOL_CALL_END" and getattr(ev, "subagent_run_id", None):
                assert started.wait(30)
                stream.cancel()
        streams.append({"name": "agent-tool-cancelled", "events": events})

    with LoopbackServer([Response(call), Response(text_body("deep."))]) as parent, \
            LoopbackServer([Response(tool_body(("call_s1", "deeper", {"prompt": "go on"}))),
                            Response(text_body("mid."))]) as mid, \
            LoopbackServer([Response(text_body("bottom."))]) as bottom:
        deeper = Agent(at(bottom)).as_tool("deeper", "Go deeper.")
        tool = Agent(at(mid), tools=[deeper]).as_tool("research", "Research.")
        streams.append({"name": "agent-tool-nested-twice",
                        "events": [to_dict(e) for e in chat(at(parent), "x?", tools=[tool])]})
    return streams


def test_agent_tool_runs_pass_enforce_and_verify(tmp_path: Path) -> None:
    streams = _agent_tool_runs()
    kinds = {s["name"]: [e["type"] for e in s["events"]] for s in streams}
    assert kinds["agent-tool"].count("SUBAGENT_STARTED") == 1 and "SUBAGENT_FINISHED" in kinds["agent-tool"]
    assert "SUBAGENT_ERROR" in kinds["agent-tool-fails"] and "SUBAGENT_ERROR" in kinds["agent-tool-cancelled"]
    assert kinds["agent-tool-nested-twice"].count("SUBAGENT_STARTED") == 2
    path = tmp_path / "streams.json"
    path.write_text(json.dumps(streams))
    result = node("verify", str(path), timeout=120)
    bad = [r for r in result["results"] if not r["ok"]]
    assert not bad, bad
