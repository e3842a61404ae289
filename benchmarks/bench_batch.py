"""Batch throughput: ``hookstream.batch()`` runs N chats against a simulated provider with a real
provider's pace, at several ``concurrency`` levels (threads).

``python benchmarks/bench_batch.py [--chats 10000] [--levels 1,8,32,128] [--ray-workers 1,2,4]
[--ray-concurrency 128] [--ttft 200] [--deltas 20] [--gap 10] [--max-chats-per-thread 0] [--rpm N]
[--json PATH]``

The provider is ``sse_server.py`` in its own process on 127.0.0.1 (scenario
``openai-latency-<ttft>-<deltas>-<gap>``: the first delta after ``ttft`` ms, then one every ``gap`` ms,
so one chat lasts about ``ttft + (deltas - 1) * gap`` ms). Each level writes its own output file
(one ``os.write`` per line, no fsync) and the figures are: chats per second over the wall time, the
ideal ``concurrency / chat latency`` (or ``rpm / 60`` when ``--rpm`` caps it lower) for comparison,
client CPU seconds (``time.process_time()``, this process only; the server's CPU is not in it),
and the most requests sent inside any 10-second window (the limiter's admission times; with
``--rpm`` at most ``rpm / 6``). Levels whose ``chats``
would take too long at low concurrency can be capped with ``--max-chats-per-thread`` (then fewer
chats run at that level, and the row says how many).

``--ray-workers 1,2,4`` adds rows for ``batch --ray`` (``hookstream_ray.batch``) with that many worker
processes and ``--ray-concurrency`` chats at once in all, on a Ray cluster the benchmark starts on this
machine (one node, loopback, stopped at the end). Their CPU figure is the CPU time of this process and
every process it started except the server (psutil): the driver, the worker processes (their start-up
included) and Ray's own daemons (raylet, GCS), which is what running on Ray costs; for the thread rows
it is this process's CPU time as before.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_pipeline import Server  # noqa: E402


def run_level(url: str, scenario: str, chats: int, concurrency: int, out: Path, rpm: int | None = None,
              ) -> dict[str, Any]:
    import threading

    import hookstream
    from hookstream import RateLimiter

    sent: list[float] = []
    sent_lock = threading.Lock()

    class Recording(RateLimiter):
        """Notes when each request was admitted (sent), to check the cap on the client's own clock."""

        def acquire(self, tokens: int = 0, *, cancelled: threading.Event | None = None) -> Any:
            permit = super().acquire(tokens, cancelled=cancelled)
            if permit is not None:
                with sent_lock:
                    sent.append(permit.time)
            return permit

    inputs = [{"id": f"c{i:05d}", "prompt": f"item {i}"} for i in range(chats)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    done = errors = tokens = 0
    for r in hookstream.batch(inputs, "openai:bench", base_url=f"{url}/{scenario}/v1", api_key="sk-bench",
                              output=out, concurrency=concurrency, limiter=Recording(rpm)):
        done += 1
        errors += r.error is not None
        tokens += r.total_tokens
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    lines = out.read_bytes().count(b"\n")
    # Most requests sent inside any 10-second window (two pointers over the sorted send times).
    sent.sort()
    most, k = 0, 0
    for j, t in enumerate(sent):
        while sent[k] <= t - 10.0:
            k += 1
        most = max(most, j - k + 1)
    return {"concurrency": concurrency, "chats": chats, "done": done, "lines": lines, "errors": errors,
            "tokens": tokens, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "chats_per_s": round(done / wall, 1), "cpu_ms_per_chat": round(1000 * cpu / max(done, 1), 2),
            "max_per_10s": most}


def tree_cpu(exclude: int) -> dict[int, float]:
    """User + system CPU seconds so far of this process and each of its descendants except the process
    ``exclude`` (the server), by pid; the Ray cluster's processes are descendants, since the benchmark
    starts it."""
    import psutil

    me = psutil.Process()
    out: dict[int, float] = {}
    for proc in [me, *me.children(recursive=True)]:
        if proc.pid == exclude:
            continue
        try:
            t = proc.cpu_times()
        except psutil.Error:  # exited meanwhile
            continue
        out[proc.pid] = t.user + t.system
    return out


def cpu_since(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two :func:`tree_cpu` snapshots by the processes alive at the second
    (a process that exited in between, such as a previous level's worker, is not counted at all: its
    whole time would otherwise be subtracted)."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def start_ray() -> None:
    """A one-node Ray cluster on loopback for the ``--ray-workers`` rows."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a token another Ray user left must not switch it on
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    ray.init(address="local", num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")


def run_ray_level(url: str, scenario: str, chats: int, concurrency: int, workers: int, out: Path,
                  server_pid: int) -> dict[str, Any]:
    from hookstream_ray.batch import batch as ray_batch

    inputs = [{"id": f"c{i:05d}", "prompt": f"item {i}"} for i in range(chats)]
    cpu0, t0 = tree_cpu(server_pid), time.perf_counter()
    run = ray_batch(inputs, "openai:bench", base_url=f"{url}/{scenario}/v1", api_key="sk-bench", output=out,
                    concurrency=concurrency, workers=workers)
    done = errors = tokens = 0
    cpu = wall = 0.0
    for r in run:
        done += 1
        errors += r.error is not None
        tokens += r.total_tokens
        if done == chats:  # before the batch closes and its worker processes (and their CPU times) go
            wall, cpu = time.perf_counter() - t0, cpu_since(cpu0, tree_cpu(server_pid))
    lines = out.read_bytes().count(b"\n")
    return {"ray_workers": workers, "concurrency": concurrency, "chats": chats, "done": done, "lines": lines,
            "errors": errors, "tokens": tokens, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "chats_per_s": round(done / wall, 1), "cpu_ms_per_chat": round(1000 * cpu / max(done, 1), 2),
            "max_per_10s": None}


def report(label: str, row: dict[str, Any]) -> dict[str, Any]:
    """Print one level's row (after checking every chat got its output line) and return it."""
    assert row["lines"] == row["chats"] == row["done"], row
    most = "-" if row["max_per_10s"] is None else row["max_per_10s"]
    print(f"{label:>12} {row['chats']:>7} {row['wall_s']:>8} {row['chats_per_s']:>9} "
          f"{row['ideal_chats_per_s']:>9} {row['of_ideal']:>9.0%} {row['cpu_s']:>7} "
          f"{row['cpu_ms_per_chat']:>12} {row['errors']:>7} {most:>9}", flush=True)
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--levels", default="1,8,32,128", help="concurrency levels, comma-separated")
    parser.add_argument("--ttft", type=int, default=200, help="time to first token, ms")
    parser.add_argument("--deltas", type=int, default=20, help="text deltas per answer")
    parser.add_argument("--gap", type=int, default=10, help="ms between deltas")
    parser.add_argument("--max-chats-per-thread", type=int, default=0,
                        help="cap chats at concurrency * this (0: no cap), for the slow low levels")
    parser.add_argument("--rpm", type=int, default=None, help="a requests-per-minute cap for every thread level")
    parser.add_argument("--ray-workers", default="", help="Ray worker-process counts, comma-separated (e.g. 1,2,4)")
    parser.add_argument("--ray-concurrency", type=int, default=128, help="chats at once in all, for the Ray rows")
    parser.add_argument("--json", default=None, help="write the rows here as JSON")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x]
    ray_levels = [int(x) for x in args.ray_workers.split(",") if x]
    scenario = f"openai-latency-{args.ttft}-{args.deltas}-{args.gap}"
    latency = (args.ttft + (args.deltas - 1) * args.gap) / 1000
    plan = [(c, min(args.chats, c * args.max_chats_per_thread) if args.max_chats_per_thread else args.chats)
            for c in levels]
    server = Server(sum(n for _, n in plan) + args.chats * len(ray_levels) + 10, max_seconds=7200)
    rows = []
    print(f"# hookstream batch: {platform.python_version()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}; scenario {scenario} (one chat >= {latency * 1000:.0f} ms); "
          "server in its own process")
    print(f"{'threads':>12} {'chats':>7} {'wall s':>8} {'chats/s':>9} {'ideal/s':>9} {'of ideal':>9} "
          f"{'CPU s':>7} {'CPU ms/chat':>12} {'errors':>7} {'max/10 s':>9}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for concurrency, chats in plan:
                row = run_level(server.url, scenario, chats, concurrency, Path(tmp) / f"out-{concurrency}.jsonl",
                                args.rpm)
                row["ideal_chats_per_s"] = round(concurrency / latency, 1)
                if args.rpm:
                    row["ideal_chats_per_s"] = min(row["ideal_chats_per_s"], round(args.rpm / 60, 1))
                row["of_ideal"] = round(row["chats_per_s"] / row["ideal_chats_per_s"], 3)
                rows.append(report(str(concurrency), row))
            if ray_levels:
                start_ray()
            for workers in ray_levels:
                c = args.ray_concurrency
                row = run_ray_level(server.url, scenario, args.chats, c, workers,
                                    Path(tmp) / f"out-ray-{workers}.jsonl", server.proc.pid)
                row["ideal_chats_per_s"] = round(c / latency, 1)
                row["of_ideal"] = round(row["chats_per_s"] / row["ideal_chats_per_s"], 3)
                rows.append(report(f"{c} ray x{workers}", row))
    finally:
        server.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"scenario": scenario, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
