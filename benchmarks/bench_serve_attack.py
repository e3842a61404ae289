"""A well-behaved client's time to first event while the server is under a bounded slowloris attack.

``hookstream serve --workers 2 --threads 4`` (gunicorn, the request-read deadline on) against the
simulated OpenAI provider of tests/store_kit.py, both in their own processes. Rounds alternate, one
without and one with the attack (24 sockets trickling headers or bodies a byte per half second, more
than the server has threads); in each, one client runs 20 conversations of one turn in turn and records
the seconds from POST to the first SSE event. Prints p50 and p99 of both and the ratio of the p99s.

``python benchmarks/bench_serve_attack.py [--rounds N]`` (also part of ``./dev bench``). The target is
that the attack does not stop the server: every run of the good client gets served; the p99 under attack
is reported against the p99 without it, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_pipeline import Row, row  # noqa: E402


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))]


def run(rounds: int = 3, conversations: int = 20) -> list[Row]:
    """Both servers: gunicorn (``--workers 2 --threads 4``) and waitress (``--workers 1 --threads 4``)."""
    return [*_run(2, rounds, conversations), *_run(1, rounds, conversations)]


def _run(workers: int, rounds: int, conversations: int) -> list[Row]:
    from store_kit import Client, SimProvider, serve_workers
    from test_server_adversarial import TOKEN, attack

    quiet: list[float] = []
    loud: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"{TOKEN} mallory\ntok-good-{'g' * 20} grace\n")
        with SimProvider() as sim, serve_workers(f"sqlite:///{tmp}/t.db", sim.url, workers=workers, threads=4,
                                                 extra=("--auth-tokens", str(tokens), "--max-runs-per-minute",
                                                        "100000", "--max-concurrent-runs", "100")) as base:
            for r in range(rounds * 2):
                under_attack = r % 2 == 1
                stop = threading.Event()
                socks: list[Any] = attack(base, 24, stop) if under_attack else []
                try:
                    for i in range(conversations):
                        c = Client(base, f"G{r}x{i}", full=True, token=f"tok-good-{'g' * 20}")
                        c.say("hello")
                        (loud if under_attack else quiet).append(c.first_event[0])
                finally:
                    stop.set()
                    for s in socks:
                        s.close()
    q99, l99 = _pct(quiet, 99), _pct(loud, 99)
    server = "gunicorn --workers 2" if workers > 1 else "waitress --workers 1"
    return [
        row("serve_attack", f"quiet-{workers}", f"{server} --threads 4: time to first event, {len(quiet)} runs, "
            "no attack", f"p50 {statistics.median(quiet) * 1e3:.0f} ms, p99 {q99 * 1e3:.0f} ms", q99),
        row("serve_attack", f"attack-{workers}", f"{server} --threads 4: time to first event, {len(loud)} runs, "
            "24 slowloris sockets (slow headers and bodies)", f"p50 {statistics.median(loud) * 1e3:.0f} ms, "
            f"p99 {l99 * 1e3:.0f} ms = {l99 / q99:.1f}x the quiet p99", l99, "every run served", True),
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for r in run(args.rounds):
        print(f"{r['what']}: {r['measured']} {r['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
