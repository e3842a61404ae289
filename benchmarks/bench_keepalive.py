"""Sequential short chats on one model: TCP connections opened and elapsed time per call.

``python benchmarks/bench_keepalive.py [--calls N] [--rounds R]`` (also ``run.py --only keepalive``).

The SSE server (``sse_server.py --nodelay``) runs in its own process on 127.0.0.1, HTTP/1.1 with
keep-alive and ``TCP_NODELAY`` as providers' servers set it (without it, each small answer on a kept-alive
connection waited 40 ms for the client's delayed ACK: 43 ms per call for the floor too), and counts the
TCP connections it accepts (``GET /connections``). Each round runs, in turn (interleaved):

* the floor: one ``requests.Session``, ``N`` streamed POSTs, ``iter_lines`` + ``json.loads`` per data
  line, each body read to its end (so the connection is reused);
* hookstream as before issue "keepalive": one model (``get_model``), ``N`` ``chat()`` calls, the rest of
  each body after the provider's last event left unread (``transport.DRAIN_MAX_BYTES = 0``), so every
  call closes its connection;
* hookstream now: the same with the body's end read (up to 64 KiB), the connection back in the pool.

Figures: medians over rounds of elapsed ms per call (ratio to the floor's median of the same run) and
connections opened per ``N`` calls. Loopback has no TLS: a provider's TLS handshake, which a reused
connection also saves, is not in these figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_pipeline import Row, Server, row  # noqa: E402

SHAPES = {"openai": ("openai-text-20", "/v1", "openai:bench"),
          "anthropic": ("anthropic-text-20", "", "anthropic:bench")}
"""Provider shape -> (server scenario: 20 text deltas, API root under it, model name)."""


def connections(url: str) -> int:
    """TCP connections the server accepted so far, the one this query opened included."""
    with urllib.request.urlopen(url + "/connections/", timeout=10) as resp:
        return int(json.loads(resp.read())["connections"])


def floor_calls(url: str, shape: str, calls: int) -> None:
    """``calls`` streamed POSTs on one requests session, every data line parsed, each body read to its end."""
    import requests

    scenario, root, _ = SHAPES[shape]
    path = "/chat/completions" if shape == "openai" else "/v1/messages"
    with requests.Session() as session:
        for _ in range(calls):
            with session.post(f"{url}/{scenario}{root}{path}", json={"stream": True}, stream=True) as resp:
                for line in resp.iter_lines():
                    if line.startswith(b"data: {"):
                        json.loads(line[6:])


def hookstream_calls(url: str, shape: str, calls: int, drain: bool) -> None:
    """``calls`` ``chat()`` calls on one model; ``drain`` False leaves each body's rest unread (as before)."""
    from hookstream import chat, get_model
    from hookstream._stream import transport

    scenario, root, name = SHAPES[shape]
    saved = transport.DRAIN_MAX_BYTES
    transport.DRAIN_MAX_BYTES = saved if drain else 0
    try:
        with get_model(name, base_url=f"{url}/{scenario}{root}", api_key="bench") as model:
            for _ in range(calls):
                events = list(chat(model, "hi"))
                last = events[-1] if events else None
                if last is None or last.type != "RUN_FINISHED":
                    raise RuntimeError(f"{shape} call ended with {last!r}")
    finally:
        transport.DRAIN_MAX_BYTES = saved


def measure(url: str, shape: str, calls: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per variant: elapsed seconds and connections opened for ``calls`` calls, one entry per round."""
    variants: dict[str, Callable[[], None]] = {
        "floor": lambda: floor_calls(url, shape, calls),
        "before": lambda: hookstream_calls(url, shape, calls, drain=False),
        "after": lambda: hookstream_calls(url, shape, calls, drain=True),
    }
    for run in variants.values():
        run()  # warm-up: imports, the first connection's set-up
    out: dict[str, dict[str, list[float]]] = {v: {"wall": [], "connections": []} for v in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            before = connections(url)
            t0 = time.perf_counter()
            run()
            out[name]["wall"].append(time.perf_counter() - t0)
            out[name]["connections"].append(connections(url) - before - 1)  # less the second query's own
    return out


def run(calls: int = 50, rounds: int = 7) -> list[Row]:
    """The rows: per shape, floor / before / after, ms per call and connections per ``calls`` calls."""
    server = Server(max_requests=1_000_000, max_seconds=1800, nodelay=True)
    rows: list[Row] = []
    try:
        for shape in SHAPES:
            res = measure(server.url, shape, calls, rounds)
            floor = statistics.median(res["floor"]["wall"]) / calls
            for name, label in (("floor", "floor: requests iter_lines + json.loads, body read to its end"),
                                ("before", "hookstream chat(), body's rest unread (before)"),
                                ("after", "hookstream chat(), body's end read (now)")):
                per_call = statistics.median(res[name]["wall"]) / calls
                conns = statistics.median(res[name]["connections"])
                ok = conns <= 1 if name == "after" else None
                rows.append(row("keepalive", f"{shape}_{name}", f"{calls} sequential {shape} chats (20 deltas) on one "
                                f"model: {label}", f"{per_call * 1e3:.3f} ms/call = {per_call / floor:.2f}x floor, "
                                f"{conns:.0f} connections", per_call / floor,
                                "1 connection" if name == "after" else "", ok,
                                ms_per_call=[w / calls * 1e3 for w in res[name]["wall"]],
                                connections=res[name]["connections"]))
    finally:
        server.close()
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=50, help="sequential calls per round (default 50)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    args = parser.parse_args(argv)
    for r in run(args.calls, args.rounds):
        print(f"{r['what']}: {r['measured']} {r['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
