"""A well-behaved client's time to first event while the server is under a slow-client attack (issue 31).

``hookstream serve`` with a token file against the simulated OpenAI provider of tests/store_kit.py, both
in their own processes, on each server with the attack of issue 31 that used to starve it:

* waitress (``--workers 1 --threads 4``): 200 unauthenticated sockets trickling their headers one byte a
  second (waitress used to hold 100 connections; 110 such sockets starved every good client);
* gunicorn (``--workers 2 --threads 4``): 40 unauthenticated sockets sending a 33 MB body at 40 KiB/s,
  above the minimum rate (20 such sockets used to hold the threads, which read bodies before
  authenticating);
* gunicorn (``--workers 2 --threads 4``, ``--max-concurrent-runs 4``): 16 sockets of one authenticated
  principal sending a 33 MB body at 40 KiB/s (issue 38: they held all 8 threads, since a request counted
  toward its principal's limit only once its body was read).

The attack keeps its sockets in flight: a socket the server cuts off (or answers) is opened again one
second later. Rounds alternate, one without and one with the attack (started 4 s before the round, so
that the server has cut its first wave and it is reconnecting); in each, one client runs
``conversations`` conversations of one turn in turn, 0.1 s apart, and records the seconds from POST to
the first SSE event (three warm-up runs first, not counted). Prints p50 and p99 of both and the ratio
of the p99s, and what the server did to the attack's sockets (how long one lasted, p50; how many were
answered 401).

``python benchmarks/bench_serve_attack.py [--rounds N]`` (also part of ``./dev bench``). The target is
that the attack does not stop the server: every run of the good client gets served; the p99 under attack
is reported against the p99 without it, measured in the same run.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_pipeline import Row, row  # noqa: E402

GOOD = f"tok-good-{'g' * 20}"
MALLORY = f"tok-mallory-{'m' * 20}"  # the authenticated attacker's token
BODY_BYTES = 33_000_000  # under the 32 MiB body limit, so it is not refused from its Content-Length
BODY_RATE = 40 * 1024  # bytes per second, above the 32 KiB/s minimum rate
TICK = 0.25
ATTACK_LEAD = 4.0  # seconds the attack runs before the good client's first run of a round
PAUSE = 0.1  # seconds between two runs of the good client (a round under attack outlasts the deadlines)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))]


class Attack:
    """``sockets`` slow unauthenticated requests kept in flight against ``base`` on one thread:
    ``kind="headers"`` trickles a header byte a second; ``kind="body"`` sends complete headers for a
    :data:`BODY_BYTES` body and then the body at :data:`BODY_RATE`. A socket cut off or answered by the
    server is opened again a second later. ``lifetimes`` holds each closed socket's seconds open;
    ``answered`` counts the ones the server answered (with their status codes in ``statuses``)."""

    def __init__(self, base: str, sockets: int, kind: str, token: str | None = None) -> None:
        host, port = base.split("//", 1)[1].split(":")
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.address = (host, int(port))
        self.kind = kind
        self.slots: list[tuple[socket.socket, float] | None] = [None] * sockets
        self.reopen = [0.0] * sockets
        self.lifetimes: list[float] = []
        self.statuses: list[int] = []
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Attack:
        for i in range(len(self.slots)):
            self._open(i, time.monotonic())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for slot in self.slots:
            if slot is not None:
                slot[0].close()

    def _open(self, i: int, now: float) -> None:
        try:
            s = socket.create_connection(self.address, timeout=5)
            if self.kind == "headers":
                s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:
                s.sendall(f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{self.auth}"
                          f"Content-Length: {BODY_BYTES}\r\n\r\n".encode())
            s.setblocking(False)
        except OSError:
            self.reopen[i] = now + 1.0
            return
        self.opened += 1
        self.slots[i] = (s, now)

    def _close(self, i: int, now: float, status: int | None) -> None:
        slot = self.slots[i]
        assert slot is not None
        slot[0].close()
        self.lifetimes.append(now - slot[1])
        if status is not None:
            self.statuses.append(status)
        self.slots[i] = None
        self.reopen[i] = now + 1.0

    def _run(self) -> None:
        n = 0
        piece = b"a" * int(BODY_RATE * TICK)
        while not self._stop.wait(TICK):
            n += 1
            now = time.monotonic()
            for i, slot in enumerate(self.slots):
                if slot is None:
                    if now >= self.reopen[i]:
                        self._open(i, now)
                    continue
                self._step(i, slot[0], now, piece if self.kind == "body" else (b"a" if n % 4 == 0 else b""))

    def _step(self, i: int, s: socket.socket, now: float, data: bytes) -> None:
        try:
            answer = s.recv(4096)
        except BlockingIOError:
            answer = None
        except OSError:
            self._close(i, now, None)
            return
        if answer is not None:  # an answer (401, 408...) or the end of the connection
            status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
            self._close(i, now, status)
            return
        try:
            if data:
                s.send(data)
        except BlockingIOError:
            pass  # the server is not reading: the kernel's buffers are full
        except OSError:
            self._close(i, now, None)


def run(rounds: int = 3, conversations: int = 20, only: str | None = None) -> list[Row]:
    """Both servers: waitress with 200 trickling sockets, gunicorn with 40 slow bodies and with 16
    authenticated slow bodies of one principal (``only``: just the one of those named ``headers``,
    ``body`` or ``auth-body``)."""
    attacks = [(1, 200, "headers"), (2, 40, "body"), (2, 16, "auth-body")]
    return [r for workers, sockets, kind in attacks if only in (None, kind)
            for r in _run(workers, sockets, kind, rounds, conversations)]


def _run(workers: int, sockets: int, kind: str, rounds: int, conversations: int) -> list[Row]:
    from store_kit import Client, SimProvider, serve_workers

    quiet: list[float] = []
    loud: list[float] = []
    failed = 0
    attacks: list[Attack] = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"{GOOD} grace\n{MALLORY} mallory\n")
        authed = kind == "auth-body"
        # The good client runs one run at a time: the authenticated attack meets the default limit of 4.
        concurrent = "4" if authed else "100"
        with SimProvider() as sim, serve_workers(f"sqlite:///{tmp}/t.db", sim.url, workers=workers, threads=4,
                                                 extra=("--auth-tokens", str(tokens), "--max-runs-per-minute",
                                                        "100000", "--max-concurrent-runs", concurrent)) as base:
            for i in range(3):  # warm-up, not counted: the first runs of a process import and connect
                Client(base, f"W{i}", full=True, token=GOOD).say("hello")
            for r in range(rounds * 2):
                under_attack = r % 2 == 1
                attack = (Attack(base, sockets, "body" if authed else kind, MALLORY if authed else None)
                          if under_attack else None)
                if attack is not None:
                    attack.__enter__()
                    attacks.append(attack)
                    # Past the 3 s header deadline: the server has cut (or answered) the first wave and the
                    # attack is opening its sockets again while the good client runs.
                    time.sleep(ATTACK_LEAD)
                try:
                    for i in range(conversations):
                        c = Client(base, f"G{r}x{i}", full=True, token=GOOD)
                        try:
                            c.say("hello")  # 120 s timeout
                        except Exception:  # a run not served (timed out, cut off): what the row counts
                            failed += 1
                            continue
                        (loud if under_attack else quiet).append(c.first_event[0])
                        time.sleep(PAUSE)
                finally:
                    if attack is not None:
                        attack.__exit__()
    q99, l99 = _pct(quiet, 99), _pct(loud, 99)
    lifetimes = [x for a in attacks for x in a.lifetimes]
    statuses = [x for a in attacks for x in a.statuses]
    opened = sum(a.opened for a in attacks)
    server = "waitress --workers 1" if workers == 1 else "gunicorn --workers 2"
    what = {"headers": f"{sockets} unauthenticated sockets trickling headers, 1 byte/s",
            "body": f"{sockets} unauthenticated sockets sending a 33 MB body at 40 KiB/s",
            "auth-body": f"{sockets} authenticated slow bodies of one principal (33 MB at 40 KiB/s, "
                         "--max-concurrent-runs 4)"}[kind]
    held = (f"attack sockets held p50 {statistics.median(lifetimes):.1f} s" if lifetimes else "no attack socket closed")
    answered = {"headers": "", "body": f", {statuses.count(401)} of {opened} answered 401",
                "auth-body": f", {statuses.count(429)} of {opened} answered 429"}[kind]
    key = f"{'waitress' if workers == 1 else 'gunicorn'}-{kind}"
    return [
        row("serve_attack", f"quiet-{key}", f"{server} --threads 4: time to first event, {len(quiet)} runs, "
            "no attack", f"p50 {statistics.median(quiet) * 1e3:.0f} ms, p99 {q99 * 1e3:.0f} ms", q99),
        row("serve_attack", f"attack-{key}", f"{server} --threads 4: time to first event, {len(loud)} runs, {what}",
            f"p50 {statistics.median(loud) * 1e3:.0f} ms, p99 {l99 * 1e3:.0f} ms = {l99 / q99:.1f}x the quiet p99 "
            f"({held}{answered}; {failed} runs not served)", l99, "every run served", failed == 0,
            lifetimes_p50=statistics.median(lifetimes) if lifetimes else None, opened=opened,
            answered_401=statuses.count(401), answered_429=statuses.count(429)),
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--only", choices=("headers", "body", "auth-body"), default=None,
                        help="Run one attack only.")
    args = parser.parse_args(argv)
    for r in run(args.rounds, args.conversations, args.only):
        print(f"{r['what']}: {r['measured']} {r['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
