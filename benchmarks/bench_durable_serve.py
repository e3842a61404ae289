"""What ``hookstream serve --durable`` costs a streamed run (issue 40), above all its log-then-send (each
SSE frame is written to the SQL event log before its client gets it).

Two servers, each in processes of its own (``serve --workers 2 --threads 4 --store sqlite:///...``), one
plain and one with ``--durable`` (DBOS on SQLite), both against one loopback OpenAI-style model server
that streams an answer of N text deltas (N from the prompt). In each round the same client POSTs a
short run (``--short`` deltas) and a long run (``--long`` deltas) to each server, in turn, and reads
every frame. Medians over the rounds. The durable run's cost per frame is the slope
((durable long - durable short) - (plain long - plain short)) / (frames long - frames short): what a
frame costs beyond a plain frame, the run's constant costs (the workflow's start and end, the model
call's journal write) cancelled out.

    .venv/bin/python benchmarks/bench_durable_serve.py [--rounds 20] [--short 20] [--long 400] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent


class _Model(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    doc = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


@contextlib.contextmanager
def model_server() -> Iterator[str]:
    """Answers each chat completion with N one-word deltas, N the last message's text (``n=N``)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            n = int(str(body["messages"][-1]["content"]).split("n=", 1)[1])
            out = b"".join([_chunk({"role": "assistant", "content": ""}),
                            *(_chunk({"content": f"w{i} "}) for i in range(n)), _chunk({}, "stop"),
                            b"data: [DONE]\n\n"])
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = _Model(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@contextlib.contextmanager
def serve(model: str, folder: Path, name: str, *extra: str) -> Iterator[str]:
    env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
    cmd = [sys.executable, "-m", "hookstream", "serve", "--workers", "2", "--threads", "4",
           "--store", f"sqlite:///{folder / (name + '-threads.db')}", "--model", "openai:gpt-4o-mini",
           "--base-url", model + "/v1", "--port", "0", *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise SystemExit(f"serve did not start: {line}")
        yield line.split("listening on ", 1)[1].split()[0].rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def one_run(base: str, n: int) -> tuple[float, int]:
    """Seconds from the POST to the last frame, and the frames read. A connection of its own: a request
    sent on a kept-alive connection right after a streamed response waited ~40 ms (delayed ACK), the
    second run of a round whichever server or size it was."""
    doc = {"threadId": f"t-{uuid.uuid4().hex}", "runId": f"r-{uuid.uuid4().hex}", "tools": [], "context": [],
           "state": None, "forwardedProps": None, "messages": [{"id": "u1", "role": "user", "content": f"n={n}"}]}
    started = time.perf_counter()
    frames = 0
    with requests.post(base + "/", json=doc, stream=True, timeout=120, headers={"Accept": "text/event-stream"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith(b"data: "):
                frames += 1
    return time.perf_counter() - started, frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--short", type=int, default=20)
    parser.add_argument("--long", type=int, default=400)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-durable-serve-"))
    durable_db = f"sqlite:///{folder / 'durable.sqlite'}"
    times: dict[str, list[float]] = {k: [] for k in ("plain-short", "plain-long", "durable-short", "durable-long")}
    frames: dict[str, int] = {}
    with model_server() as model, serve(model, folder, "plain") as plain, \
            serve(model, folder, "durable", "--durable", "--durable-db", durable_db) as durable:
        servers = {"plain": plain, "durable": durable}
        for base in servers.values():  # warm-up: connections, DBOS, the tables
            one_run(base, args.short)
            one_run(base, args.long)
        for _ in range(args.rounds):
            for kind, base in servers.items():
                for size, n in (("short", args.short), ("long", args.long)):
                    seconds, count = one_run(base, n)
                    times[f"{kind}-{size}"].append(seconds)
                    frames[size] = count
    med = {k: statistics.median(v) for k, v in times.items()}
    extra_frames = frames["long"] - frames["short"]
    per_frame = ((med["durable-long"] - med["durable-short"]) - (med["plain-long"] - med["plain-short"])) / extra_frames
    plain_frame = (med["plain-long"] - med["plain-short"]) / extra_frames
    out = {"rounds": args.rounds, "frames": frames, "median_seconds": med,
           "seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
           "durable_extra_ms_per_frame": per_frame * 1000, "plain_ms_per_frame": plain_frame * 1000,
           "ratio_long_run": med["durable-long"] / med["plain-long"],
           "ratio_short_run": med["durable-short"] / med["plain-short"],
           "load_average": os.getloadavg()}
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
