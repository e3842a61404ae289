"""The ``ray`` executor on a local two-node Ray cluster (loopback, one CPU per node): calls run as Ray
tasks in other processes and on both nodes, results in call order, a time limit or a cancellation
cancels the task (its worker process dies), a raising tool and a closure are error results, and a
tool's resources are respected (more CPUs than any node has: an error result at once)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import ray_tools
from cluster_kit import ray_cluster_fixture  # noqa: F401  (the session fixture `ray_cluster`)
from hookstream import CancellationToken, ToolCallPart, ToolResultPart, tool
from hookstream.plugin import ToolCallRequest
from hookstream_ray import RayExecutor
from hookstream_ray.executor import task_options

pytestmark = pytest.mark.slow

# Only keeps a broken test from hanging; never bounds how fast the code is.
NEVER = 120.0
INIT = {"_node_ip_address": "127.0.0.1"}


@pytest.fixture(scope="module")
def executor(ray_cluster: str) -> RayExecutor:
    return RayExecutor(init_options=INIT)


def request(fn: Any, call_id: str, args: dict[str, Any], timeout: float | None = None,
            resources: dict[str, float] | None = None) -> ToolCallRequest:
    t = tool(fn, resources=resources)
    return ToolCallRequest.of(t, ToolCallPart(call_id, t.name, args), timeout=timeout)


def in_thread(executor: RayExecutor, reqs: list[ToolCallRequest], token: CancellationToken,
              ) -> tuple[threading.Thread, list[ToolResultPart]]:
    out: list[ToolResultPart] = []
    th = threading.Thread(target=lambda: out.extend(executor.run(reqs, token)))
    th.start()
    return th, out


def read_pid(path: Path) -> int:
    end = time.monotonic() + NEVER
    while time.monotonic() < end:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError("the tool never started")


def wait_dead(pid: int) -> bool:
    end = time.monotonic() + NEVER
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_task_options_from_tool_resources() -> None:
    assert task_options({}) == {"max_retries": 0}
    assert task_options({"num_cpus": 2, "num_gpus": 0.5, "memory": 1e9, "accelerator_x": 1}) == {
        "max_retries": 0, "num_cpus": 2, "num_gpus": 0.5, "memory": 1_000_000_000,
        "resources": {"accelerator_x": 1.0}}


def test_calls_run_on_the_cluster_on_both_nodes_in_call_order(executor: RayExecutor, tmp_path: Path) -> None:
    # Each node has one CPU: two calls that must run at once (they wait for each other) run on two nodes.
    folder = tmp_path / "meet"
    folder.mkdir()
    reqs = [request(ray_tools.meet, f"c{i}", {"label": f"L{i}", "folder": str(folder), "count": 2}, timeout=NEVER)
            for i in range(2)]
    th, results = in_thread(executor, reqs, CancellationToken())
    th.join(NEVER)
    assert [r.tool_call_id for r in results] == ["c0", "c1"]
    assert not any(r.is_error for r in results), results
    outputs = [r.output for r in results]
    assert [o["label"] for o in outputs] == ["L0", "L1"]
    assert os.getpid() not in {o["pid"] for o in outputs}
    assert len({o["node"] for o in outputs}) == 2 and None not in {o["node"] for o in outputs}


def test_results_in_call_order_for_many_calls(executor: RayExecutor) -> None:
    reqs = [request(ray_tools.where, f"c{i}", {"label": str(i)}) for i in range(5)]
    results = executor.run(reqs, CancellationToken())
    assert [r.tool_call_id for r in results] == [f"c{i}" for i in range(5)]
    assert [r.output["label"] for r in results] == [str(i) for i in range(5)]


def test_the_principal_reaches_the_task(executor: RayExecutor) -> None:
    from hookstream.server import Principal

    alice = Principal("alice", {"roles": ["refunds"], "tenant": "acme"})
    t = tool(ray_tools.whoami)
    (result,) = executor.run([ToolCallRequest.of(t, ToolCallPart("c1", t.name, {}), principal=alice)],
                             CancellationToken())
    assert not result.is_error, result.output
    assert result.output["id"] == "alice" and result.output["claims"] == {"roles": ["refunds"], "tenant": "acme"}
    assert result.output["pid"] != os.getpid()


def test_timeout_is_an_error_result_and_cancels_the_task(executor: RayExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    [result] = executor.run([request(ray_tools.hang, "c1", {"pid_file": str(pid_file)}, timeout=3)],
                            CancellationToken())
    assert result.is_error and result.output == "Error: 'hang' timed out after 3 s"
    # Queueing and worker start count against the limit: on a loaded machine the task may be cancelled
    # before the tool began. When it began, ray.cancel must have stopped its worker.
    if pid_file.exists() and pid_file.read_text():
        assert wait_dead(int(pid_file.read_text())), "ray.cancel did not stop the task's worker"


def test_cancellation_reaches_the_task(executor: RayExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    token = CancellationToken()
    th, results = in_thread(executor, [request(ray_tools.hang, "c1", {"pid_file": str(pid_file)})], token)
    pid = read_pid(pid_file)
    token.cancel()
    th.join(NEVER)
    [result] = results
    assert result.is_error and result.output == "Error: 'hang' was cancelled"
    assert wait_dead(pid)


def test_a_raising_tool_is_an_error_result(executor: RayExecutor) -> None:
    [result] = executor.run([request(ray_tools.explode, "c1", {"why": "boom"})], CancellationToken())
    assert result.is_error and result.output == "Error: RuntimeError: boom"


def test_a_closure_is_a_clear_error_result(executor: RayExecutor) -> None:
    def nearby(label: str) -> str:
        return label

    [result] = executor.run([request(nearby, "c1", {"label": "x"})], CancellationToken())
    assert result.is_error and "cannot run on Ray" in result.output and "module level" in result.output


def test_resources_from_tool_metadata(executor: RayExecutor) -> None:
    # Nodes have one CPU each: two CPUs on one node can never be had. Decided: an error result at once,
    # naming what was asked and what the largest node has, rather than a task pending until its time limit.
    big, fits = executor.run([
        request(ray_tools.where, "c1", {"label": "big"}, resources={"num_cpus": 2}),
        request(ray_tools.where, "c2", {"label": "fits"}, resources={"num_cpus": 1, "memory": 100_000_000}),
    ], CancellationToken())
    assert big.is_error and "cannot run on this Ray cluster" in big.output and "CPU=2" in big.output
    assert "largest node offers CPU=1" in big.output
    assert not fits.is_error and fits.output["label"] == "fits"
    [gpu] = executor.run([request(ray_tools.where, "c3", {"label": "gpu"}, resources={"num_gpus": 1})],
                         CancellationToken())
    assert gpu.is_error and "GPU=1" in gpu.output


def test_engine_runs_tools_with_executor_ray(ray_cluster: str) -> None:
    pytest.importorskip("hookstream_openai", reason="the engine test speaks OpenAI Chat Completions")
    from hookstream import chat, get_model
    from hookstream.testing import LoopbackServer, Response
    from hookstream.testing.provider_bodies import final_stream, provider_stream

    first = provider_stream("openai", tool_name="where", tool_args={"label": "Paris"}).body
    with LoopbackServer([Response(first), Response(final_stream("openai", "Done.").body)]) as srv:
        model = get_model("openai:gpt-4o-mini", base_url=srv.url + "/v1", api_key="sk-test")
        stream = chat(model, "where?", tools=[ray_tools.where], executor=("ray", None, INIT))
        for _ in stream:
            pass
    res = stream.result()
    assert res.outcome == "success", res
    [r] = res.tool_results
    assert not r.is_error and r.output["label"] == "Paris" and r.output["pid"] != os.getpid()
