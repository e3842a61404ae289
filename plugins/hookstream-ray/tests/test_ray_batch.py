"""``batch --ray`` on a local two-node Ray cluster (loopback, one CPU per node): the same output lines as a
batch on threads, worker processes on both nodes, a tool from the current directory shipped to the
workers, one rate limit held across worker processes, a 429 pausing every worker, a SIGKILLed driver
resumed with every id written once, and the API key never written to Ray's files.

Chats go through a real loopback OpenAI Chat Completions server in this process; each prompt names its
id, so the server's captured requests tell how often each id was asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_kit import ray_cluster_fixture  # noqa: F401  (the session fixture `ray_cluster`)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))  # the core's test kits
from holdkit import PauseWatch, hold_after, kill_after_lines
from hookstream import batch
from hookstream.testing import CapturedRequest, LoopbackServer, Response
from hookstream_ray.batch import DEFAULT_MARGIN
from hookstream_ray.batch import batch as ray_batch

pytestmark = pytest.mark.slow

MODEL = "openai:gpt-4o-mini"
KEY = "sk-ray-batch-secret-5f3a9c"
INIT = {"_node_ip_address": "127.0.0.1"}
NEVER = 120.0  # only keeps a broken test from hanging; never bounds how fast the code is


def frame(doc: dict[str, Any] | str) -> bytes:
    return b"data: " + (doc if isinstance(doc, str) else json.dumps(doc)).encode() + b"\n\n"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None,
          usage: dict[str, int] | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    doc: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": choices}
    if usage is not None:
        doc["usage"] = usage
    return doc


def text_pieces(*deltas: str) -> list[bytes]:
    return [frame(chunk({"role": "assistant", "content": ""})), *(frame(chunk({"content": d})) for d in deltas),
            frame(chunk({}, "stop")),
            frame(chunk(usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})), frame("[DONE]")]


def tool_body(name: str, args: dict[str, Any]) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return b"".join([frame(chunk({"role": "assistant", "content": None, "tool_calls": [call]})),
                     frame(chunk({}, "tool_calls")), frame("[DONE]")])


def prompt_id(req: CapturedRequest) -> str:
    return str(req.json()["messages"][-1]["content"]).split("item ", 1)[1]


def write_inputs(path: Path, ids: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "prompt": f"item {i}"}) + "\n" for i in ids))


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hookstream", "batch", *args, "--no-progress"]


def env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY}


def test_the_lines_are_those_of_a_batch_on_threads_and_workers_span_both_nodes(
        ray_cluster: str, tmp_path: Path) -> None:
    ids = [f"s{i:02d}" for i in range(30)]
    inputs = [{"id": i, "prompt": f"item {i}"} for i in ids]
    answer = Response(pieces=text_pieces("Hel", "lo"))
    with LoopbackServer(answer) as srv:
        threads = list(batch(inputs, MODEL, base_url=srv.url + "/v1", api_key=KEY,
                             output=tmp_path / "threads.jsonl", concurrency=4))
        run = ray_batch(inputs, MODEL, base_url=srv.url + "/v1", api_key=KEY, output=tmp_path / "ray.jsonl",
                        concurrency=4, workers=2, init_options=INIT)
        nodes = list(getattr(run.runner, "nodes", []))
        on_ray = list(run)
        asked = sorted(prompt_id(r) for r in srv.requests)
    assert len(nodes) == 2 and len(set(nodes)) == 2, "one worker process on each node"
    assert sorted(r.id for r in on_ray) == ids == sorted(r.id for r in threads)
    by_id = {d["id"]: d for d in read_lines(tmp_path / "threads.jsonl")}
    assert sorted(read_lines(tmp_path / "ray.jsonl"), key=lambda d: d["id"]) == [by_id[i] for i in ids]
    assert asked == sorted(ids * 2)  # each id asked once by each batch
    assert all({k.lower(): v for k, v in req.headers.items()}["authorization"] == f"Bearer {KEY}"
               for req in srv.requests)
    # The key reached the workers as an actor argument, never a file of Ray's (logs, spilled objects).
    files = [p for d in Path("/tmp").glob("hsray-*") for p in d.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files, "the cluster's temp dir holds its logs"
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:  # a socket or a file Ray removed meanwhile
            continue
        assert KEY.encode() not in data, f"the API key is in {path}"


def test_cli_ships_a_tool_from_the_current_directory_to_the_workers(ray_cluster: str, tmp_path: Path) -> None:
    (tmp_path / "shouting.py").write_text(
        "def shout(word: str) -> str:\n    \"\"\"Shout a word.\n\n    Args:\n        word: the word.\n    \"\"\"\n"
        "    import os\n    return word.upper() + ' from pid ' + str(os.getpid())\n")
    write_inputs(tmp_path / "in.jsonl", ["t1"])
    responses = [Response(tool_body("shout", {"word": "hey"})), Response(pieces=text_pieces("done"))]
    with LoopbackServer(responses) as srv:
        proc = subprocess.Popen(
            cli(str(tmp_path / "in.jsonl"), "--model", MODEL, "--base-url", srv.url + "/v1", "--output",
                str(tmp_path / "out.jsonl"), "--ray", ray_cluster, "--workers", "2", "--tool", "shouting:shout"),
            cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=NEVER * 2)
        second = srv.requests[-1].json()["messages"]
    assert proc.returncode == 0, err
    assert "2 worker processes on 2 nodes" in err
    [line] = read_lines(tmp_path / "out.jsonl")
    assert line["text"] == "done" and line["error"] is None
    tool_message = next(m for m in second if m["role"] == "tool")
    assert tool_message["content"].startswith("HEY from pid ")
    assert int(tool_message["content"].rsplit(" ", 1)[1]) != proc.pid, "the tool ran in a worker, not the driver"
    assert KEY not in err


def max_in_window(times: list[float], width: float) -> int:
    times = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - width:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def test_the_rate_limit_holds_across_worker_processes(ray_cluster: str, tmp_path: Path) -> None:
    arrivals: list[float] = []

    def stamp(index: int, req: CapturedRequest) -> None:
        arrivals.append(time.monotonic())
        return None

    rpm = 240  # 40 requests in any 10-second window
    inputs = [{"id": f"r{i:02d}", "prompt": f"item r{i:02d}"} for i in range(70)]
    with LoopbackServer(Response(pieces=text_pieces("ok")), check=stamp) as srv:
        t_start = time.monotonic()  # before the limiter admits anything
        run = ray_batch(inputs, MODEL, base_url=srv.url + "/v1", api_key=KEY, concurrency=8, workers=2, rpm=rpm,
                        init_options=INIT)
        results = list(run)
    assert len(results) == 70 and all(r.error is None for r in results)
    assert len(arrivals) == 70
    # Causal, whatever the load: the limiter admits its 41st request no sooner than window + margin
    # (10.25 s) after its first, which came after t_start, and a request arrives after its admission.
    # Two workers each with a limiter of their own would admit all 70 at once.
    assert sum(1 for t in arrivals if t < t_start + 10.0 + DEFAULT_MARGIN) <= 40
    # Not a trickle either: the first 40 requests (eight at a time) all arrived within 10 s.
    assert max_in_window(arrivals, 10.0) >= 40


@pytest.mark.parametrize("rpm", [None, 100_000], ids=["no-caps", "caps"])
def test_a_429_pauses_every_worker_process(ray_cluster: str, tmp_path: Path, rpm: int | None) -> None:
    # Causal, not timed: the limiter counts the 429 in `pauses` only once every worker process holds the
    # pause, and the server holds every request after the 429 until the test has seen that count (at
    # t_ack), so no worker thread can run ahead meanwhile. A request that arrives after t_ack and
    # before the pause ends must then have passed its limiter check before its process held the pause:
    # at most one per worker thread other than the one that got the 429 (which paused itself first).
    # Without the pause reaching every worker (or the limiter, with caps), the other threads would go
    # on sending right after t_ack.
    concurrency, retry_after = 4, 2.0
    w = PauseWatch(NEVER)
    refused = Response(b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}', status=429,
                       headers={"Retry-After": f"{retry_after:g}"}, content_type="application/json")
    inputs = [{"id": f"p{i}", "prompt": f"item p{i}"} for i in range(40)]
    with LoopbackServer([refused, Response(pieces=text_pieces("ok"), delay=0.01)], check=w.check) as srv:
        run = ray_batch(inputs, MODEL, base_url=srv.url + "/v1", api_key=KEY, concurrency=concurrency,
                        workers=2, rpm=rpm, init_options=INIT)
        with w.watching(run, poll=0.005):
            results = list(run)
    stamps = w.stamps
    assert all(r.error is None for r in results) and len(results) == 40
    assert run.limiter.pauses == 1
    assert len(stamps) == 41  # 40 chats and the one retry
    t429 = dict(stamps)[0]
    assert w.t_ack is not None and w.t_ack > t429
    # Every process noted the pause after the server sent the 429, so it holds until t429 + 2 at least.
    late = [t for i, t in stamps if i > 0 and w.t_ack < t < t429 + retry_after]
    assert len(late) <= concurrency - 1, late
    assert any(t >= t429 + retry_after for _, t in stamps), "the batch went on after the pause"


def test_a_killed_driver_resumes_with_every_id_once_and_no_repeated_requests(
        ray_cluster: str, tmp_path: Path) -> None:
    ids = [f"k{i:03d}" for i in range(60)]
    write_inputs(tmp_path / "in.jsonl", ids)
    out = tmp_path / "out.jsonl"
    slow = Response(pieces=text_pieces("one", " two"), delay=0.03)

    def command(url: str) -> list[str]:
        return cli(str(tmp_path / "in.jsonl"), "--model", MODEL, "--base-url", url + "/v1", "--output", str(out),
                   "--concurrency", "4", "--ray", ray_cluster, "--workers", "2")

    # The server answers the first 14 requests only and holds the rest until the kill: the kill comes
    # after 10 lines and before the 15th, however the machine is loaded.
    answered, release = 14, threading.Event()
    with LoopbackServer(slow, check=hold_after(answered, release, NEVER)) as srv:
        kill_after_lines(command(srv.url), env(), out, 10, release, NEVER)
    first = read_lines(out)
    finished = {d["id"] for d in first}
    assert 10 <= len(finished) <= answered
    assert len(first) == len(finished)
    with LoopbackServer(slow) as srv2:
        res = subprocess.run(command(srv2.url), env=env(), capture_output=True, text=True, timeout=NEVER * 2,
                             check=False)
        asked_again = [prompt_id(r) for r in srv2.requests]
    assert res.returncode == 0, res.stderr
    assert "resuming" in res.stderr
    lines = read_lines(out)
    assert sorted(d["id"] for d in lines) == ids
    assert not finished & set(asked_again)
    assert len(asked_again) == len(ids) - len(finished)
    assert all(d["error"] is None and d["text"] == "one two" for d in lines)
