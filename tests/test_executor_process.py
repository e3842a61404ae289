"""The tool-call data contract (ToolCallRequest) and the ``process`` executor: calls run in worker
processes that import the tool by name, results in call order, a closure gets a clear error result, a
time limit or a cancellation kills the worker, a raising tool is an error result; and through the engine
over a real loopback OpenAI server."""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import executor_tools
import pytest
from engine_kit import run, text_body, tool_body
from hookstream import CancellationToken, Message, ProcessExecutor, TextPart, ThreadExecutor, ToolCallPart, tool
from hookstream.plugin import ToolCallRequest, tool_ref
from hookstream.testing import LoopbackServer, Response

# Only keeps a broken test from hanging; never bounds how fast the code is.
NEVER = 30.0


def request(fn: object, call_id: str, args: dict[str, object], timeout: float | None = None) -> ToolCallRequest:
    t = fn if hasattr(fn, "fn") else tool(fn)
    return ToolCallRequest.of(t, ToolCallPart(call_id, t.name, args), [Message("user", [TextPart("hi")])],
                              timeout)


def wait_dead(pid: int) -> bool:
    end = time.monotonic() + NEVER
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A killed child stays a zombie until its parent reaps it; the pool's manager thread does.
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.02)
    return False


def read_pid(path: Path) -> int:
    end = time.monotonic() + NEVER
    while time.monotonic() < end:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError("the tool never started")


def test_a_request_is_data_that_pickles_and_names_an_importable_tool() -> None:
    req = request(executor_tools.where, "c1", {"label": "x"}, timeout=5)
    assert req.ref == "executor_tools:where"
    wire = pickle.loads(pickle.dumps(req.for_wire()))
    assert wire == req and wire.tool is None and wire.call.arguments == {"label": "x"}
    assert wire.remaining(now=wire.started_at + 2) == pytest.approx(3)
    assert wire.remaining(now=wire.started_at + 9) == 0.0
    # A module-level @tool object is found through its function.
    assert tool_ref(executor_tools.decorated) == "executor_tools:decorated"
    assert executor_tools.decorated.resources == {"num_cpus": 1}
    # A closure or a lambda has no importable name.
    assert tool_ref(tool(lambda label: label, name="l")) is None

    def local(label: str) -> str:
        return label

    assert tool_ref(tool(local)) is None


def test_process_executor_runs_each_call_in_another_process_in_call_order(tmp_path: Path) -> None:
    folder = tmp_path / "meet"
    folder.mkdir()
    reqs = [request(executor_tools.meet, f"c{i}", {"label": f"L{i}", "folder": str(folder), "count": 2}, timeout=NEVER)
            for i in range(2)]
    results = ProcessExecutor().run(reqs, CancellationToken())
    assert [r.tool_call_id for r in results] == ["c0", "c1"]
    assert not any(r.is_error for r in results), results
    outputs = [r.output for r in results]
    assert [o["label"] for o in outputs] == ["L0", "L1"]
    pids = {o["pid"] for o in outputs}
    assert len(pids) == 2 and os.getpid() not in pids


def test_decorated_tool_runs_by_reference() -> None:
    t = executor_tools.decorated
    req = ToolCallRequest.of(t, ToolCallPart("c1", t.name, {"label": "d"}))
    [result] = ProcessExecutor(start_method="spawn").run([req], CancellationToken())
    assert not result.is_error and result.output["label"] == "d" and result.output["pid"] != os.getpid()
    assert result.tool_name == "decorated_where"


def test_a_closure_gets_a_clear_error_result_not_a_crash() -> None:
    def nearby(label: str) -> str:
        return label

    [closure, good] = ProcessExecutor().run(
        [request(nearby, "c1", {"label": "x"}), request(executor_tools.where, "c2", {"label": "y"})],
        CancellationToken())
    assert closure.is_error and "cannot run in another process" in closure.output
    assert "define it at module level" in closure.output
    assert not good.is_error and good.output["label"] == "y"


def test_a_raising_tool_is_an_error_result() -> None:
    [result] = ProcessExecutor().run([request(executor_tools.explode, "c1", {"why": "boom"})], CancellationToken())
    assert result.is_error and result.output == "Error: RuntimeError: boom"


def test_timeout_kills_the_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    [result] = ProcessExecutor().run(
        [request(executor_tools.hang, "c1", {"pid_file": str(pid_file)}, timeout=2.0)], CancellationToken())
    assert result.is_error and result.output == "Error: 'hang' timed out after 2 s"
    # The limit counts from when the engine handed the call over, process start included: on a loaded
    # machine the worker may be killed before the tool began. When it began, its process must be gone.
    if pid_file.exists() and pid_file.read_text():
        assert wait_dead(int(pid_file.read_text()))


def test_cancellation_kills_the_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    token = CancellationToken()
    holder: list[object] = []
    th = threading.Thread(target=lambda: holder.extend(ProcessExecutor().run(
        [request(executor_tools.hang, "c1", {"pid_file": str(pid_file)})], token)))
    th.start()
    pid = read_pid(pid_file)
    token.cancel()
    th.join(NEVER)
    [result] = holder
    assert result.is_error and "was cancelled" in result.output  # type: ignore[attr-defined]
    assert wait_dead(pid)


def test_thread_executor_takes_the_same_requests() -> None:
    reqs = [request(executor_tools.where, "c1", {"label": "a"}), request(executor_tools.explode, "c2", {"why": "no"})]
    a, b = ThreadExecutor().run(reqs, CancellationToken())
    assert a.output == {"label": "a", "pid": os.getpid()} and b.is_error


def test_engine_with_executor_process() -> None:
    where = tool(executor_tools.where)
    responses = [Response(tool_body(("c1", "where", {"label": "Paris"}), ("c2", "where", {"label": "Rome"}))),
                 Response(text_body("Done."))]
    with LoopbackServer(responses) as srv:
        _events, stream = run(srv.url, tools=[where], executor="process")
    res = stream.result()
    assert res.outcome == "success" and res.text == "Done."
    assert [r.tool_call_id for r in res.tool_results] == ["c1", "c2"]
    assert [r.output["label"] for r in res.tool_results] == ["Paris", "Rome"]
    assert all(r.output["pid"] != os.getpid() for r in res.tool_results)


class ToolObserver:
    """Records the tool observations and the process they were made in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, int]] = []

    def tool_start(self, info: object) -> None:
        with self.lock:
            self.seen.append(("start", info.call_id, os.getpid()))  # type: ignore[attr-defined]

    def tool_end(self, info: object, result: object) -> None:
        with self.lock:
            self.seen.append(("end", info.call_id, os.getpid()))  # type: ignore[attr-defined]


def test_observers_see_process_calls_in_the_driver() -> None:
    rec = ToolObserver()
    responses = [Response(tool_body(("c1", "where", {"label": "Paris"}), ("c2", "where", {"label": "Rome"}))),
                 Response(text_body("Done."))]
    with LoopbackServer(responses) as srv:
        _events, stream = run(srv.url, tools=[tool(executor_tools.where)], executor="process", observers=[rec])
    assert stream.result().outcome == "success"
    assert sorted(s[:2] for s in rec.seen) == [("end", "c1"), ("end", "c2"), ("start", "c1"), ("start", "c2")]
    assert {s[2] for s in rec.seen} == {os.getpid()}
