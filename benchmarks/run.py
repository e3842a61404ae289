"""Run every benchmark; print one table with a PASS/MISS column and write it as JSON (``tox -e bench``).

``python benchmarks/run.py [--quick] [--peers] [--no-serve] [--rounds N] [--only SECTION,...] [--json PATH]``

* default: the core figures (floor vs hookstream on OpenAI and Anthropic text, tool arguments,
  memory, concurrency, latency, start-up, the otel plugin installed without an exporter, the server
  under a slowloris attack, StreamProcessor linearity) and the serving benchmark (``bench_serve.py``):
  ``hookstream serve`` on waitress and on gunicorn against pydantic-ai's AG-UI app under uvicorn
  (its own venv, ``scripts/install-agui-peer``, which ``./dev bench`` runs first), the same loopback
  provider behind each. Without that venv the serving rows say so instead of measuring.
* ``--peers``: also the peer libraries (openai, anthropic, LiteLLM, simonw/llm, pydantic-ai,
  openai-agents), each in its own venv under ``benchmarks/.venvs/`` created on first use.
* ``--no-serve``: without the serving benchmark (``--serve``, its former switch, is still accepted).
* ``--only``: just these sections (comma-separated): text, tool-args, memory, concurrency, latency,
  startup, observer, hooks, keepalive, attack, linearity, serve; ``--only text`` for a change to the
  text path.
* ``--json``: where the results go (default ``benchmarks/results.json``, not committed; the run
  docs/performance.md quotes is ``docs/performance-run.json``).

How the figures are measured: bench_pipeline.py's docstring and docs/performance.md. Compare ratios
measured in one run, never absolute times across runs or machines.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_hooks  # noqa: E402
import bench_keepalive  # noqa: E402
import bench_observer  # noqa: E402
import bench_pipeline  # noqa: E402
import bench_processor  # noqa: E402
import bench_serve  # noqa: E402
import bench_serve_attack  # noqa: E402
import peers  # noqa: E402

SECTIONS = (*bench_pipeline.SECTIONS, "observer", "hooks", "keepalive", "attack", "linearity", "serve")


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"python": f"{platform.python_implementation()} {platform.python_version()}",
            "cpus": os.cpu_count(), "cpu": cpu, "system": f"{platform.system()} {platform.release()}",
            "machine": platform.machine(), "load_average_at_start": list(os.getloadavg())}


def print_table(rows: list[dict[str, Any]]) -> None:
    w0 = min(110, max(len(r["what"]) for r in rows))
    w1 = max(len(r["measured"]) for r in rows)
    w2 = max(len(r["target"]) for r in rows)
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            print()
        what = r["what"] if len(r["what"]) <= w0 else r["what"][: w0 - 1] + "…"
        print(f"{what:<{w0}}  {r['measured']:<{w1}}  {r['target']:<{w2}}  {r['result']}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds")
    parser.add_argument("--peers", action="store_true", help="also measure the peer libraries (own venvs)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds for the text figures "
                        "(default 5, 3 with --quick)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # on by default now
    parser.add_argument("--no-serve", action="store_true", help="skip hookstream serve vs pydantic-ai's AG-UI app")
    parser.add_argument("--only", type=lambda v: v.split(","), default=None, metavar="SECTION,...",
                        help=f"just these sections, of: {', '.join(SECTIONS)} (default all)")
    parser.add_argument("--json", default=str(HERE / "results.json"), help="where to write the results")
    args = parser.parse_args(argv)
    only = args.only or list(SECTIONS)
    if unknown := set(only) - set(SECTIONS):
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    rounds = args.rounds or (3 if args.quick else 5)
    info = machine()
    print(f"# hookstream benchmarks: {info['python']}, {info['cpus']} CPUs ({info['cpu']}), {info['machine']} "
          f"{info['system']}; load average {info['load_average_at_start'][0]:.2f}")
    print("# CPU = time.process_time() of the client process only; the SSE server is another process. "
          "Medians of interleaved rounds; ratios vs the floor of this run.")
    t0 = time.monotonic()

    def progress(what: str) -> None:
        print(f"# [{time.monotonic() - t0:6.1f} s] {what} ...", file=sys.stderr, flush=True)

    rows = bench_pipeline.run_all(args.quick, rounds, args.peers, progress,
                                  [s for s in bench_pipeline.SECTIONS if s in only])
    if "observer" in only:
        rows += bench_observer.run_all(args.quick, rounds, progress)
    if "hooks" in only:
        rows += bench_hooks.run_all(args.quick, rounds, progress)
    if "keepalive" in only:
        progress("sequential short chats on one model: connections and time per call")
        rows += bench_keepalive.run(20 if args.quick else 50, 3 if args.quick else 7)
    if "attack" in only:
        progress("time to first event under slow clients (waitress: 200 trickling, gunicorn: 40 slow bodies)")
        rows += bench_serve_attack.run(2 if args.quick else 3)
        progress("resume streams on a quiet run; the memory event log under 24 big runs (issue 38)")
        rows += [*bench_serve_attack.resume_attack(), *bench_serve_attack.event_log_peak()]
    if "linearity" in only:
        progress("StreamProcessor linearity")
        rows += bench_processor.main()
    if "serve" in only and not args.no_serve:
        progress("hookstream serve vs pydantic-ai's AG-UI app under load")
        if bench_serve.PEER_PYTHON.exists():
            rows += bench_serve.run(args.quick)
        else:
            rows.append(bench_pipeline.row("serve", "peer-missing", "hookstream serve vs pydantic-ai's AG-UI app",
                                           f"not measured: {bench_serve.PEER_PYTHON} is missing "
                                           "(scripts/install-agui-peer)", None, "<= 0.5x CPU, <= 1.0x p99", False))
    print_table(rows)
    misses = [r["what"] for r in rows if r["result"] == "MISS"]
    print(f"\n{sum(r['result'] == 'PASS' for r in rows)} PASS, {len(misses)} MISS "
          f"({time.monotonic() - t0:.0f} s)")
    doc = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "machine": info,
           "quick": args.quick, "rounds": rounds, "sections": only,
           "peers": {v: peers.versions(v) for v in peers.VENVS} if args.peers else {},
           "rows": rows}
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"# written to {args.json}")
    return 0  # a MISS is a finding, not a failure of the benchmark


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
