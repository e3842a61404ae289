"""What a durable run costs (issue 40): the same scripted three-step tool loop (tool_a, tool_b, the answer:
three model calls, two tool calls) with and without ``hookstream_dbos.Durable``, on DBOS's SQLite system
database and, when PostgreSQL is installed (``scripts/start-postgres``), on PostgreSQL.

Each database is measured in a process of its own (DBOS keeps one system database per process): a
loopback server streams the OpenAI Chat Completions bodies of the testing kit's builders, one warm-up run
of each kind, then ``--rounds`` rounds, each a plain run and a durable run (a new id each time) in turn,
so both see the same machine load. Per run: elapsed time and the process's CPU time (all threads: DBOS
writes on its own). The cost per journaled step is (durable - plain) / 7: three model calls, two tool
starts, two tool results. Medians are printed and written as JSON (``--json PATH``).

    .venv/bin/python benchmarks/bench_durable.py [--rounds 30] [--no-postgres] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STEPS = 7
"""DBOS steps a durable run of the script writes: 3 model calls, 2 tool starts, 2 tool results."""


def _measure(db: str, rounds: int) -> dict[str, Any]:
    from hookstream import chat, get_model, tool
    from hookstream.testing import LoopbackServer, Response
    from hookstream.testing.provider_bodies import final_stream, provider_stream
    from hookstream_dbos import Durable

    @tool
    def tool_a(n: int) -> str:
        """First tool."""
        return f"a{n}"

    @tool
    def tool_b(n: int) -> str:
        """Second tool."""
        return f"b{n}"

    script = [provider_stream("openai", text="First a. ", reasoning="", tool_name="tool_a", tool_args={"n": 1}).events,
              provider_stream("openai", text="Now b. ", reasoning="", tool_name="tool_b", tool_args={"n": 2}).events,
              final_stream("openai", text="Both done.").events]
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "durable": []}

    def one(kind: str, n: int) -> tuple[float, float]:
        with LoopbackServer([Response(pieces=events) for events in script]) as server:
            model = get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="bench-key")
            plugins = [Durable(f"bench-{time.time_ns()}-{n}", db)] if kind == "durable" else []
            w0, c0 = time.perf_counter(), time.process_time()
            result = chat(model, "Run a then b.", tools=[tool_a, tool_b], plugins=plugins).result()
            w1, c1 = time.perf_counter(), time.process_time()
            assert result.outcome == "success" and len(server.requests) == 3, result.error
        return w1 - w0, c1 - c0

    one("plain", -1)
    one("durable", -1)  # DBOS launched, tables created
    for n in range(rounds):
        for kind in ("plain", "durable") if n % 2 == 0 else ("durable", "plain"):
            times[kind].append(one(kind, n))
    med = {kind: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for kind, t in times.items()}
    (pw, pc), (dw, dc) = med["plain"], med["durable"]
    return {"db": db.split(":", 1)[0], "rounds": rounds,
            "plain_ms": round(pw * 1e3, 2), "durable_ms": round(dw * 1e3, 2),
            "plain_cpu_ms": round(pc * 1e3, 2), "durable_cpu_ms": round(dc * 1e3, 2),
            "per_step_ms": round((dw - pw) * 1e3 / STEPS, 2), "per_step_cpu_ms": round((dc - pc) * 1e3 / STEPS, 2)}


def _child(db: str, rounds: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", db, "--rounds", str(rounds)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {db.split(':', 1)[0]} run failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.rounds)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    results = [_child(f"sqlite:///{folder / 'durable.sqlite'}", args.rounds)]
    if not args.no_postgres:
        pg = tempfile.mkdtemp(prefix="bench-durable-pg-")  # its own: the postgres user must reach it
        started = subprocess.run([str(ROOT / "scripts" / "start-postgres"), pg],
                                 capture_output=True, text=True, check=False)
        if started.returncode == 0:
            try:
                results.append(_child(started.stdout.strip(), args.rounds))
            finally:
                subprocess.run([str(ROOT / "scripts" / "start-postgres"), "--stop", pg], capture_output=True,
                               check=False)
        else:
            print(f"PostgreSQL left out: {started.stderr.strip()}", file=sys.stderr)
        shutil.rmtree(pg, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    for r in results:
        print(f"{r['db']:<11} plain {r['plain_ms']:8.2f} ms ({r['plain_cpu_ms']:.2f} CPU)  "
              f"durable {r['durable_ms']:8.2f} ms "
              f"({r['durable_cpu_ms']:.2f} CPU)  per journaled step {r['per_step_ms']:.2f} ms "
              f"({r['per_step_cpu_ms']:.2f} CPU)  [{r['rounds']} rounds, medians]")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), "utf-8")


if __name__ == "__main__":
    main()
