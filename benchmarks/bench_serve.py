"""The AG-UI server under load: ``hookstream serve`` beside pydantic-ai's AG-UI app, same provider (issue 26).

* The provider is tests/store_kit.py's ``SimProvider`` (OpenAI Chat Completions chunks over SSE, no delay)
  in its own process, with TCP_NODELAY on its sockets as real providers' servers have (without it,
  Nagle plus delayed ACKs add ~40 ms to each request of an async httpx client on a kept-alive
  connection: the peer's 2-step run took ~108 ms at N=1, less with it).
  The servers, each in its own process and pointed at it:
  ``hookstream serve --workers 1`` (waitress), ``hookstream serve --workers 2`` (gunicorn) and
  pydantic-ai's ``AGUIAdapter`` in a Starlette app under uvicorn, one worker (peer_agui_app.py, in
  benchmarks/.venvs/agui-peer: scripts/install-agui-peer plus ``pydantic-ai-slim[openai]``).
  hookstream gets as many threads as the largest N in each process (each gunicorn worker too: the two
  do not share connections evenly, 156 and 100 of 256 requests in one measured batch, and with the
  threads split a worker's surplus waited for a thread, p90 211 ms), so no run waits for a thread; its
  per-principal limits are lifted. uvicorn is async and takes every connection.
* A client process of its own (this file with ``--client``) runs N concurrent conversations (threads, a
  ``requests`` session each); each POSTs a RunAgentInput whose user says ``look x``: the provider answers
  a ``lookup`` call, the server runs the tool, the provider answers text (2 model steps), and the client
  reads the SSE up to RUN_FINISHED, recording the seconds to the first and to the last event. Each of the
  N conversations runs ``max(2, 32 // N)`` such runs back to back.
* Server CPU per run: utime + stime of the server's process tree (children included: the gunicorn
  workers) from /proc/PID/stat, before and after, over the runs. Runs per second: runs / wall time.
  RSS per concurrent run: (peak VmRSS of the tree sampled every 20 ms during the load minus the tree's
  RSS before it) / N. Nothing is pinned to CPUs.
* The OpenAI-compatible route (issue 42): a ``--workers 1`` server like ``waitress`` gets the same
  conversations as Chat Completions requests (``POST /v1/chat/completions``, ``"stream": true``, the user
  ``look x``), read up to ``data: [DONE]``; its server CPU per run is compared with the AG-UI route's
  without the event log (``waitress-nolog``: the OpenAI route logs no frames) in the same rounds.
  ``--no-peer`` leaves pydantic-ai out (when its venv is not installed). When LiteLLM's proxy is installed
  (benchmarks/.venvs/litellm: ``pip install 'litellm[proxy]'``), it forwards Chat Completions to the same
  simulated provider, and both it and the OpenAI route get a one-step request (the user ``hello``: the
  provider echoes it, no tool) in the same rounds: ``openai-echo`` against ``litellm``.
* Rounds are interleaved: each round runs every N on every server, the servers' order rotated per round.
  One warm-up per server is not counted. Figures are medians over rounds of each round's figure.

``python benchmarks/bench_serve.py [--quick] [--full] [--rounds N]`` (also part of ``./dev bench``).
N is 1, 16 and 64 (``--quick``: 1 and 16; ``--full``: also 256). Targets: hookstream's server CPU per
run at most half of the peer's (at the largest N); p99 time to first event at 64 concurrent runs no worse
than the peer's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))

from bench_pipeline import Row, row  # noqa: E402

PEER_PYTHON = HERE / ".venvs" / "agui-peer" / "bin" / "python"
SERVERS = {"waitress": "hookstream serve --workers 1 (waitress)",
           "gunicorn": "hookstream serve --workers 2 (gunicorn)",
           "peer": "pydantic-ai AGUIAdapter + uvicorn (1 worker)",
           "waitress-nolog": "hookstream serve --workers 1 --no-resume (no event log)",
           "gunicorn-nolog": "hookstream serve --workers 2 --no-resume (no event log)",
           "openai": "hookstream serve --workers 1, POST /v1/chat/completions (OpenAI route)",
           "openai-echo": "hookstream serve --workers 1, OpenAI route, one-step request",
           "litellm": "LiteLLM proxy (1 worker) forwarding the one-step request"}
LITELLM = HERE / ".venvs" / "litellm" / "bin" / "litellm"
_LITELLM_CONFIG = """model_list:
  - model_name: hookstream
    litellm_params:
      model: openai/sim
      api_base: {base}
      api_key: sim-key-not-secret
"""
OPENAI_TARGET = 1.10  # the OpenAI route's server CPU per run, at most this times the AG-UI route's
EVENT_LOG_TARGET = 0.10  # the event log's share of server CPU per run, at most (issue 34)
_SIM = ("import socketserver, sys; socketserver.StreamRequestHandler.disable_nagle_algorithm = True; "
        "sys.path.insert(0, sys.argv[1]); from store_kit import SimProvider; "
        "s = SimProvider().__enter__(); print(s.url, flush=True); sys.stdin.read()")
_TICK = os.sysconf("SC_CLK_TCK")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))]


# -- the client process ---------------------------------------------------------------------------------------

def _ended(data: str) -> str | None:
    """The kind of end an SSE data line is (AG-UI RUN_FINISHED / RUN_ERROR, OpenAI [DONE]), else None."""
    if data == "[DONE]":
        return "RUN_FINISHED"
    kind = json.loads(data).get("type", "")
    return kind if kind in ("RUN_FINISHED", "RUN_ERROR") else None


def _body(openai: bool, text: str) -> dict[str, Any]:
    if openai:
        return {"model": "hookstream", "stream": True, "messages": [{"role": "user", "content": text}]}
    return {"threadId": f"thread-{uuid.uuid4().hex}", "runId": f"run-{uuid.uuid4().hex}",
            "messages": [{"id": f"user-{uuid.uuid4().hex}", "role": "user", "content": text}],
            "tools": [], "state": {}, "context": [], "forwardedProps": {}}


def _conversation(url: str, reps: int, start: threading.Barrier, out: list[tuple[float, float]],
                  errors: list[str], text: str = "look x") -> None:
    import requests
    import sseclient

    session = requests.Session()
    openai = url.endswith("/v1/chat/completions")
    start.wait()
    for _ in range(reps):
        body = _body(openai, text)
        t0 = time.perf_counter()
        first = last = None
        kind = ""
        try:
            with session.post(url, json=body, stream=True, timeout=300,
                              headers={"Accept": "text/event-stream"}) as resp:
                if resp.status_code != 200:
                    errors.append(f"HTTP {resp.status_code}: {resp.text[:200]}")
                    continue
                for sse in sseclient.SSEClient(resp).events():
                    if first is None:
                        first = time.perf_counter() - t0
                    kind = _ended(sse.data) or ""
                    if kind:
                        last = time.perf_counter() - t0
                        break
        except Exception as e:  # reported, not raised: the others go on
            errors.append(repr(e)[:200])
            continue
        if kind != "RUN_FINISHED" or first is None or last is None:
            errors.append(f"ended with {kind or 'no event'}")
            continue
        out.append((first, last))


def client_main() -> int:
    """Reads ``{"url", "n", "reps"}`` lines; answers each with the runs' first/last event times and wall time."""
    for line in sys.stdin:
        job = json.loads(line)
        out: list[tuple[float, float]] = []
        errors: list[str] = []
        start = threading.Barrier(job["n"] + 1)
        threads = [threading.Thread(target=_conversation,
                                    args=(job["url"], job["reps"], start, out, errors, job.get("text", "look x")))
                   for _ in range(job["n"])]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        print(json.dumps({"first": [a for a, _ in out], "last": [b for _, b in out], "wall": wall,
                          "errors": errors[:5], "n_errors": len(errors)}), flush=True)
    return 0


# -- the server processes -------------------------------------------------------------------------------------

def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _cpu(root: int) -> dict[int, int]:
    """utime + stime ticks of each process in the tree."""
    ticks = {}
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks[pid] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks


def _rss(root: int) -> int:
    total = 0
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(x.split()[1]) for x in f if x.startswith("VmRSS:")), 0) * 1024
        except OSError:
            pass
    return total


def _start(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: bool = False
           ) -> tuple[subprocess.Popen[str], str, Any]:
    err = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("http") and "listening on" not in line:
        proc.kill()
        err.seek(0)
        raise RuntimeError(f"{cmd[:4]} did not start: {line}\n{err.read()[-2000:]}")
    url = line.split("listening on ", 1)[-1].split()[0]
    return proc, url.rstrip("/") + "/", err


def _start_litellm(sim_url: str, tmp: str) -> tuple[subprocess.Popen[str], str, Any]:
    """LiteLLM's proxy, one worker, forwarding model ``hookstream`` to the simulated provider; waits for
    its liveliness probe (it starts in seconds, not at once)."""
    import socket

    import requests

    config = Path(tmp) / "litellm.yaml"
    config.write_text(_LITELLM_CONFIG.format(base=sim_url + "/v1"))
    with socket.socket() as s:  # a free port (the proxy takes no port 0)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                             "--num_workers", "1"], stdout=subprocess.DEVNULL, stderr=err, text=True,
                            # No key, as the hookstream servers here: a loopback benchmark, not a deployment.
                            env={**os.environ, "LITELLM_LOG": "ERROR",
                                 "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if requests.get(url + "health/liveliness", timeout=5).status_code == 200:
                return proc, url, err
        except requests.RequestException:
            pass
        time.sleep(0.5)
    proc.kill()
    err.seek(0)
    raise RuntimeError(f"the LiteLLM proxy did not start:\n{err.read()[-2000:]}")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the benchmark --------------------------------------------------------------------------------------------

def measure(ns: list[int], rounds: int, peer: bool = True) -> dict[str, dict[int, dict[str, float]]]:
    """{server: {N: median figures}}."""
    if peer and not PEER_PYTHON.exists():
        raise RuntimeError(f"{PEER_PYTHON} missing: run scripts/install-agui-peer, then "
                           f"{PEER_PYTHON} -m pip install 'pydantic-ai-slim[openai]'")
    threads = max(ns)
    procs: list[subprocess.Popen[str]] = []
    errs: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            sim, sim_url, e = _start([sys.executable, "-c", _SIM, str(TESTS)], TESTS, stdin=True)
            procs.append(sim)
            errs.append(e)
            sim_url = sim_url.rstrip("/")
            env = {**os.environ, "OPENAI_API_KEY": "sim-key-not-secret"}
            base = [sys.executable, "-m", "hookstream", "serve", "--model", "openai:sim", "--base-url",
                    sim_url + "/v1", "--tool", "store_kit:lookup", "--port", "0", "--max-steps", "4",
                    "--max-concurrent-runs", "100000", "--max-runs-per-minute", "100000000"]
            cmds = {"waitress": ([*base, "--workers", "1", "--threads", str(threads)], TESTS, env),
                    "gunicorn": ([*base, "--workers", "2", "--threads", str(threads),
                                         "--store", f"sqlite:///{tmp}/threads.db"], TESTS, env),
                    # The same servers without the event log (resumable runs), in the same rounds.
                    "waitress-nolog": ([*base, "--workers", "1", "--threads", str(threads), "--no-resume"],
                                       TESTS, env),
                    "gunicorn-nolog": ([*base, "--workers", "2", "--threads", str(threads),
                                        "--store", f"sqlite:///{tmp}/threads-nolog.db", "--no-resume"], TESTS, env),
                    "openai": ([*base, "--workers", "1", "--threads", str(threads)], TESTS, env),
                    "peer": ([str(PEER_PYTHON), str(HERE / "peer_agui_app.py"), sim_url], HERE, None)}
            if not peer:
                del cmds["peer"]
            servers: dict[str, tuple[int, str]] = {}
            texts = {"openai-echo": "hello", "litellm": "hello"}  # a one-step request: the provider echoes it
            for name, (cmd, cwd, env_) in cmds.items():
                p, url, e = _start(cmd, cwd, env_)
                procs.append(p)
                errs.append(e)
                servers[name] = (p.pid, url + "v1/chat/completions" if name == "openai" else url)
            servers["openai-echo"] = servers["openai"]
            if LITELLM.exists():
                p, url, e = _start_litellm(sim_url, tmp)
                procs.append(p)
                errs.append(e)
                servers["litellm"] = (p.pid, url + "v1/chat/completions")
            client = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--client"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(client)
            assert client.stdin is not None and client.stdout is not None

            def job(url: str, n: int, reps: int, text: str = "look x") -> dict[str, Any]:
                client.stdin.write(json.dumps({"url": url, "n": n, "reps": reps, "text": text}) + "\n")  # type: ignore[union-attr]
                client.stdin.flush()  # type: ignore[union-attr]
                return json.loads(client.stdout.readline())  # type: ignore[union-attr]

            for name, (_, url) in servers.items():  # warm-up
                res = job(url, 4, 2, texts.get(name, "look x"))
                if res["n_errors"]:
                    raise RuntimeError(f"{name}: {res['n_errors']} runs failed in the warm-up: {res['errors']}")
            per: dict[str, dict[int, list[dict[str, float]]]] = {s: {n: [] for n in ns} for s in servers}
            order = list(servers)
            for r in range(rounds):
                rot = order[r % len(order):] + order[: r % len(order)]
                for n in ns:
                    for name in rot:
                        pid, url = servers[name]
                        reps = max(2, 32 // n)
                        rss0, cpu0 = _rss(pid), _cpu(pid)
                        peak = [rss0]
                        done = threading.Event()

                        def sample(pid: int = pid, peak: list[int] = peak, done: threading.Event = done) -> None:
                            while not done.wait(0.02):
                                peak[0] = max(peak[0], _rss(pid))

                        sampler = threading.Thread(target=sample, daemon=True)
                        sampler.start()
                        res = job(url, n, reps, texts.get(name, "look x"))
                        done.set()
                        sampler.join()
                        cpu1 = _cpu(pid)
                        ticks = sum(t - cpu0.get(p, 0) for p, t in cpu1.items())
                        runs = len(res["first"])
                        if res["n_errors"] or not runs:
                            print(f"# {name} N={n}: {res['n_errors']} runs failed: {res['errors']}",
                                  file=sys.stderr)
                        if not runs:
                            continue
                        per[name][n].append({
                            "cpu_ms": ticks / _TICK / runs * 1e3, "rps": runs / res["wall"],
                            "ttfe_p50": statistics.median(res["first"]) * 1e3,
                            "ttfe_p99": _pct(res["first"], 99) * 1e3,
                            "ttle_p50": statistics.median(res["last"]) * 1e3,
                            "ttle_p99": _pct(res["last"], 99) * 1e3,
                            "rss_kib": (peak[0] - rss0) / n / 1024, "rss_mib": rss0 / 2**20,
                            "failed": res["n_errors"]})
        finally:
            for p in reversed(procs):
                if p.stdin:
                    p.stdin.close()
                _stop(p)
            for e in errs:
                e.close()
    return {s: {n: {k: statistics.median(d[k] for d in ms) for k in ms[0]} for n, ms in by_n.items() if ms}
            for s, by_n in per.items()}


def run(quick: bool, full: bool = False, rounds: int | None = None, peer: bool = True) -> list[Row]:
    ns = [1, 16] if quick else [1, 16, 64] + ([256] if full else [])
    rounds = rounds or 3
    res = measure(ns, rounds, peer)
    top = max(ns)
    rows: list[Row] = []
    for n in ns:
        for s, label in SERVERS.items():
            if s not in res:
                continue
            m = res[s].get(n)
            if m is None:
                rows.append(row("serve", f"{s}-{n}", f"{label}, {n} concurrent", "every run failed", None,
                                "", False))
                continue
            measured = (f"CPU {m['cpu_ms']:.1f} ms/run, {m['rps']:.0f} runs/s, first event p50 "
                        f"{m['ttfe_p50']:.0f} / p99 {m['ttfe_p99']:.0f} ms, last p50 {m['ttle_p50']:.0f} / "
                        f"p99 {m['ttle_p99']:.0f} ms")
            if n == top:
                measured += f", RSS {m['rss_kib']:.0f} KiB/run (idle {m['rss_mib']:.0f} MiB)"
            if m["failed"]:
                measured += f", {m['failed']:.0f} runs failed"
            rows.append(row("serve", f"{s}-{n}", f"{label}, {n} concurrent", measured, m["cpu_ms"], **m))
    openai, agui = res["openai"], res["waitress-nolog"]
    if top in openai and top in agui:
        # The same runs over the two wire protocols, one worker each, neither logging its frames (the OpenAI
        # route keeps no event log): what the Chat Completions framing costs against AG-UI's.
        ratio = openai[top]["cpu_ms"] / agui[top]["cpu_ms"]
        rows.append(row("serve", "openai-cpu-vs-agui", f"OpenAI route vs AG-UI route (--no-resume): server CPU "
                        f"per run, {top} concurrent", f"{ratio:.2f}x ({openai[top]['cpu_ms']:.2f} vs "
                        f"{agui[top]['cpu_ms']:.2f} ms/run)", ratio, f"<= {OPENAI_TARGET:.2f}x",
                        ratio <= OPENAI_TARGET))
    echo, litellm = res["openai-echo"], res.get("litellm", {})
    if top in echo and top in litellm:
        # The same one-step request to the same simulated provider: the agent's route against a gateway.
        ratio = echo[top]["cpu_ms"] / litellm[top]["cpu_ms"]
        rows.append(row("serve", "openai-cpu-vs-litellm", f"OpenAI route vs LiteLLM proxy: server CPU per "
                        f"one-step run, {top} concurrent", f"{ratio:.2f}x ({echo[top]['cpu_ms']:.2f} vs "
                        f"{litellm[top]['cpu_ms']:.2f} ms/run)", ratio))
    peer_res = res.get("peer", {})
    for s in ("waitress", "gunicorn"):
        mine, bare = res[s], res[f"{s}-nolog"]
        if top in mine and top in bare:
            # The log's share of the server CPU per run: same runs, same rounds, log on and off.
            cost = mine[top]["cpu_ms"] / bare[top]["cpu_ms"] - 1
            rows.append(row("serve", f"{s}-eventlog-cost", f"{SERVERS[s]}: the event log's server CPU per run, "
                            f"{top} concurrent", f"{cost:+.1%} ({mine[top]['cpu_ms']:.2f} vs "
                            f"{bare[top]['cpu_ms']:.2f} ms/run)", cost, f"<= {EVENT_LOG_TARGET:.0%}",
                            cost <= EVENT_LOG_TARGET))
        if top in mine and top in peer_res:
            ratio = mine[top]["cpu_ms"] / peer_res[top]["cpu_ms"]
            rows.append(row("serve", f"{s}-cpu-target", f"{SERVERS[s]}: server CPU per run vs the peer, {top} "
                            "concurrent", f"{ratio:.2f}x the peer's", ratio, "<= 0.5x", ratio <= 0.5))
        if 64 in mine and 64 in peer_res:
            ratio = mine[64]["ttfe_p99"] / peer_res[64]["ttfe_p99"]
            rows.append(row("serve", f"{s}-ttfe-target", f"{SERVERS[s]}: p99 time to first event vs the peer, "
                            "64 concurrent", f"{ratio:.2f}x the peer's", ratio, "<= 1.0x", ratio <= 1.0))
        else:
            rows.append(row("serve", f"{s}-ttfe-target", f"{SERVERS[s]}: p99 time to first event vs the peer, "
                            "64 concurrent", "not measured (N=64 not run)", None, "<= 1.0x"))
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--client"]:
        return client_main()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N in 1, 16")
    parser.add_argument("--full", action="store_true", help="also N = 256")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-peer", action="store_true", help="leave pydantic-ai's server out")
    args = parser.parse_args(argv)
    rows = run(args.quick, args.full, args.rounds, peer=not args.no_peer)
    w0 = max(len(r["what"]) for r in rows)
    w1 = max(len(r["measured"]) for r in rows)
    for r in rows:
        print(f"{r['what']:<{w0}}  {r['measured']:<{w1}}  {r['target']:<8}  {r['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
