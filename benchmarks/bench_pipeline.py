"""Loopback benchmarks of the whole pipeline against a floor and peer libraries, measured in one run.

How (see docs/performance.md):

* The SSE server (``sse_server.py``) runs in its own process on 127.0.0.1, as a real provider does,
  and sends each SSE event as its own HTTP chunk. Its CPU time is never counted.
* Each client (``clients.py``: the floor, hookstream, every peer) runs in its own long-lived worker
  process, peers in their own venvs (``peers.py``). A worker measures ``time.process_time()`` (its own
  user + system CPU) and ``time.perf_counter()`` (elapsed) around each run and reports them.
* Rounds are interleaved: in every round each client runs once, in an order rotated per round, so
  the machine's drift shifts every client alike. One warm-up run per worker is not counted. Figures
  are medians over rounds; ratios are against the floor's median measured in the same run.

The floor is requests ``iter_lines`` + ``json.loads`` of each data line (../shared/MEASURED.md).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
import sse_server  # noqa: E402

Row = dict[str, Any]
LABELS = {
    "floor": "floor: requests iter_lines + json.loads",
    "hookstream": "hookstream.chat + StreamProcessor",
    "hookstream-stdlib-json": "hookstream.chat + StreamProcessor, msgspec blocked (stdlib json)",
    "openai-create": "openai SDK create(stream=True), iterate chunks",
    "openai-stream": "openai SDK .stream() + get_final_completion()",
    "anthropic-stream": "anthropic SDK messages.stream() + get_final_message()",
    "litellm": "LiteLLM completion(stream=True), iterate chunks",
    "llm": "simonw/llm OpenAI Chat model (api_base), prompt(stream=True)",
    "pydantic-ai": "pydantic-ai Agent(OpenAIChatModel).run_stream_sync, stream_text(delta=True)",
    "openai-agents": "openai-agents Runner.run_streamed (OpenAIChatCompletionsModel)",
}


def row(section: str, key: str, what: str, measured: str, value: float | None = None,
        target: str = "", ok: bool | None = None, **data: Any) -> Row:
    """One printed line and its JSON record; ``ok`` None means no target (context only)."""
    return {"section": section, "key": key, "what": what, "measured": measured, "value": value,
            "target": target, "result": "" if ok is None else ("PASS" if ok else "MISS"), "data": data}


# -- processes ----------------------------------------------------------------------------------------------

def cpu_split() -> tuple[str, str] | None:
    """(the server's CPUs, the clients' CPUs) as ``BENCH_CPUS`` values: the last CPU this process may
    use for the server, the others for the clients. ``None`` with one CPU or without
    ``os.sched_setaffinity`` (not Linux): then nothing is pinned.

    A provider runs on machines of its own. On a 2-core machine an unpinned server competes with the
    client for the same core and pulls the client's threads from one core to the other: measured on
    32 streams on threads, the per-round ratio to one stream at a time ranged from 0.65 to 1.0 for the
    same code (floor and hookstream alike), and from 0.91 to 1.01 (one round 0.74) pinned."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return str(cpus[-1]), ",".join(map(str, cpus[:-1]))


CPUS = cpu_split()


class Server:
    """``sse_server.py`` in a child process; bounded by request count and seconds; on a CPU of its own
    (:func:`cpu_split`)."""

    def __init__(self, max_requests: int, max_seconds: float, *, nodelay: bool = False) -> None:
        env = {**os.environ, **({"BENCH_CPUS": CPUS[0]} if CPUS else {})}
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "sse_server.py"), "--max-requests", str(max_requests),
             "--max-seconds", str(max_seconds), *(["--nodelay"] if nodelay else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError(f"sse_server.py did not start (exit {self.proc.poll()})")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()  # the server's signal to stop
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Worker:
    """One ``clients.py CLIENT`` process, on the CPUs the server does not use (:func:`cpu_split`);
    :meth:`call` sends a command and returns its JSON answer."""

    def __init__(self, client: str, python: str | Path = sys.executable, env: dict[str, str] | None = None) -> None:
        self.client = client
        self.log = tempfile.TemporaryFile(mode="w+")
        # ``env`` replaces this process's environment for the worker (bench_observer blocks a plugin in one).
        env = {**(os.environ if env is None else env),
               "LLM_USER_PATH": tempfile.gettempdir() + "/hookstream-bench-llm",
               **({"BENCH_CPUS": CPUS[1]} if CPUS else {})}
        self.proc = subprocess.Popen([str(python), str(HERE / "clients.py"), client], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        while True:
            line = self._line()
            if line.strip() == "ready":
                break

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            tail = self.log.read()[-2000:]
            raise RuntimeError(f"client {self.client} exited ({self.proc.wait()}): {tail}")
        return line

    def call(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        while True:  # a library may print to stdout; the answer is the JSON object line
            line = self._line()
            if line.startswith("{"):
                out: dict[str, Any] = json.loads(line)
                if "error" in out:
                    raise RuntimeError(f"client {self.client}: {out['error']}")
                return out

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _brief(exc: BaseException) -> str:
    """One line of an error: its first line's head and its last line (a child's traceback ends there)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return (lines[0] if len(lines) == 1 else f"{lines[0].split(':')[0]}: {lines[-1]}")[:300]


def start_workers(clients: Sequence[str], failed: dict[str, str] | None = None) -> dict[str, Worker]:
    """A worker per client. A peer that cannot be installed or started is left out and its error put
    in ``failed`` (when given); the floor's or hookstream's failure raises."""
    out = {}
    for c in clients:
        try:
            python = peers.ensure(peers.CLIENTS[c]) if c in peers.CLIENTS else sys.executable
            out[c] = Worker(c, python)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            if failed is None or c not in peers.CLIENTS:
                raise
            failed[c] = _brief(exc)
    return out


def close_all(workers: dict[str, Worker]) -> None:
    for w in workers.values():
        w.close()


# -- expectations: each run must prove it consumed the whole stream --------------------------------------------

def expected(scenario: str, client: str) -> int:
    events = sse_server.scenario(scenario)
    if client == "floor" and scenario.startswith(("ollama-", "bedrock-")):
        return len(events)  # one JSON value per NDJSON line / event-stream message
    if client == "floor":
        return sum(1 for e in events for line in e.split(b"\n")
                   if line.startswith(b"data: ") and line != b"data: [DONE]")
    _kind, shape, *nums = scenario.split("-")
    if shape == "args":
        return len(json.loads(sse_server.tool_arguments(int(nums[0])))["content"])
    if shape == "bigtext":
        return int(nums[0]) // int(nums[1]) * int(nums[1])
    return sum(len(w) for w in sse_server.words(int(nums[0])))


def measure(workers: dict[str, Worker], url: str, scenario: str, rounds: int, *, shape: str = "openai",
            tool: bool = False, threads: int = 1,
            failed: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """``rounds`` interleaved runs per worker (order rotated each round) after one warm-up run each.

    A peer whose run fails (an error, or a stream not consumed whole) is dropped from the remaining
    rounds and reported in ``failed`` (when given); the floor's or hookstream's failure raises."""
    names = list(workers)
    want = {c: expected(scenario, c) for c in names}
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in names}
    for r in range(-1, rounds):
        for c in names[r % len(names):] + names[: r % len(names)]:
            if failed and c in failed:
                continue
            try:
                out = workers[c].call(op="run", root=f"{url}/{scenario}", shape=shape, tool=tool, threads=threads)
                if out["got"] != want[c]:
                    raise RuntimeError(f"{c} on {scenario}: got {out['got']}, expected {want[c]}")
            except RuntimeError as exc:
                if failed is None or c not in peers.CLIENTS:
                    raise
                failed[c] = _brief(exc)
                results.pop(c, None)
                continue
            if r >= 0:
                results[c].append(out)
    return results


def med(runs: list[dict[str, Any]], field: str) -> float:
    return statistics.median(r[field] for r in runs)


# -- benchmarks -----------------------------------------------------------------------------------------------

FLOOR_LABELS = {"ollama": "floor: requests iter_lines + json.loads per NDJSON line",
                "bedrock": "floor: requests iter_content + botocore EventStreamBuffer + json.loads per message"}
TEXT_TITLES = {"openai": "OpenAI Chat text chunks", "anthropic": "Anthropic text_delta events",
               "ollama": "Ollama NDJSON text lines", "bedrock": "Bedrock ConverseStream text frames"}


# Issue 26's target for the two shapes most providers speak; NDJSON and AWS event-stream keep issue 22's.
TEXT_TARGETS = {"openai": 1.5, "anthropic": 1.5, "ollama": 2.0, "bedrock": 2.0}


def bench_text(url: str, shape: str, n: int, rounds: int, peer_clients: Sequence[str]) -> list[Row]:
    """CPU and elapsed time per chunk of a text stream, floor vs hookstream vs peers. With msgspec
    installed (``hookstream[fast]``, as in ``tox -e bench``), the judged figure decodes with it and a
    second hookstream worker with msgspec blocked measures the standard library's decoder (context)."""
    scenario = f"{shape}-text-{n}"
    title = TEXT_TITLES[shape]
    target = TEXT_TARGETS[shape]
    failed: dict[str, str] = {}
    stdlib_json = ["hookstream-stdlib-json"] if shape in ("openai", "anthropic") and _has_msgspec() else []
    workers = start_workers(["floor", "hookstream", *stdlib_json, *peer_clients], failed)
    try:
        res = measure(workers, url, scenario, rounds, shape=shape, failed=failed)
    finally:
        close_all(workers)
    floor_cpu, floor_wall = med(res["floor"], "cpu"), med(res["floor"], "wall")
    rows = []
    for c, runs in res.items():
        cpu, wall = med(runs, "cpu"), med(runs, "wall")
        ratio = cpu / floor_cpu
        is_hs = c == "hookstream"
        label = FLOOR_LABELS.get(shape, LABELS[c]) if c == "floor" else LABELS[c]
        rows.append(row(
            f"{shape}_text", c, f"{n:,} {title}: {label}",
            f"{cpu / n * 1e6:.1f} µs CPU/chunk = {ratio:.2f}x floor (elapsed {wall / n * 1e6:.1f} µs = "
            f"{wall / floor_wall:.2f}x)",
            ratio, f"CPU <= {target}x floor" if is_hs else "", (ratio <= target) if is_hs else None,
            cpu_s=[r["cpu"] for r in runs], wall_s=[r["wall"] for r in runs], chunks=n,
            cpu_us_per_chunk=cpu / n * 1e6, wall_us_per_chunk=wall / n * 1e6, elapsed_ratio=wall / floor_wall))
    for c, error in failed.items():
        rows.append(row(f"{shape}_text", c, f"{n:,} {title}: {LABELS[c]}", f"not measured: {error}", error=error))
    return rows


def _has_msgspec() -> bool:
    import importlib.util

    return importlib.util.find_spec("msgspec") is not None


def bench_tool_args(url: str, sizes: list[int], rounds: int) -> list[Row]:
    """Tool-call arguments in 8-byte deltas, the processor keeping partial arguments current."""
    rows = []
    workers = start_workers(["floor", "hookstream"])
    try:
        for size in sizes:
            res = measure(workers, url, f"openai-args-{size}-8", rounds, tool=True)
            ratio = med(res["hookstream"], "cpu") / med(res["floor"], "cpu")
            rows.append(row("tool_args", f"args_{size}", f"tool arguments {size // 1000:,} KB in 8-byte deltas: "
                            "hookstream vs floor", f"{med(res['hookstream'], 'cpu'):.3f} s CPU = {ratio:.2f}x floor",
                            ratio, "", None, floor_cpu_s=[r["cpu"] for r in res["floor"]],
                            hookstream_cpu_s=[r["cpu"] for r in res["hookstream"]]))
    finally:
        close_all(workers)
    return rows


def bench_memory(url: str, size: int) -> list[Row]:
    """Peak memory of one hookstream run, in a fresh worker per figure (warmed by a small run)."""
    rows = []
    for shape, scenario, tool in (("text", f"openai-bigtext-{size}-1024", False),
                                  ("tool arguments", f"openai-args-{size}-1024", True)):
        body = sum(len(e) for e in sse_server.scenario(scenario))
        small = scenario.replace(str(size), str(size // 64))
        figures = {}
        for mode in ("tracemalloc", "rss"):
            w = Worker("hookstream")
            try:
                w.call(op="run", root=f"{url}/{small}", tool=tool)
                out = w.call(op="run", root=f"{url}/{scenario}", tool=tool, trace=mode == "tracemalloc")
            finally:
                w.close()
            if out["got"] != expected(scenario, "hookstream"):
                raise RuntimeError(f"memory run on {scenario}: got {out['got']}")
            figures[mode] = out["peak"] if mode == "tracemalloc" else out["rss_peak"] - out["rss_before"]
        what = f"peak memory, {size / 2**20:.0f} MiB of {shape} in 1 KiB deltas ({body / 1e6:.1f} MB response body)"
        for mode, label in (("tracemalloc", "tracemalloc peak"), ("rss", "RSS peak - RSS before")):
            ratio = figures[mode] / body
            rows.append(row("memory", f"{shape.split()[0]}_{mode}", f"{what}: {label}",
                            f"{figures[mode] / 1e6:.1f} MB = {ratio:.2f}x the response", ratio,
                            "<= 3x response", ratio <= 3.0, bytes=figures[mode], body_bytes=body))
    return rows


def bench_concurrency(url: str, n: int, levels: list[int], rounds: int) -> list[Row]:
    """k streams at once on threads in one process; aggregate chunks/s by elapsed time vs one stream.

    One stream's throughput is measured over max(levels) streams run one after another, the same work
    as the largest level: a single 2,000-chunk stream lasts about 30 ms, too short for a steady figure
    (its CPU time varied by +-25 % between rounds). The floor runs the largest level too, in the same
    rounds: its ratio is the share the GIL and this machine take from any Python client."""
    scenario = f"openai-text-{n}"
    in_turn = max(levels)
    plan = [("hookstream", k) for k in levels] + [("floor", 1), ("floor", in_turn)]
    workers = {c: Worker(c) for c in ("hookstream", "floor")}
    res: dict[tuple[str, int], list[dict[str, Any]]] = {p: [] for p in plan}
    try:
        for r in range(-1, rounds):
            for c, k in plan[r % len(plan):] + plan[: r % len(plan)]:
                out = workers[c].call(op="run", root=f"{url}/{scenario}", threads=k, streams=in_turn if k == 1 else 1)
                if out["got"] != expected(scenario, c):
                    raise RuntimeError(f"{c}, {k} streams: a stream got {out['got']}")
                if r >= 0:
                    res[(c, k)].append(out)
    finally:
        close_all(workers)

    def chunks(k: int) -> int:
        return (in_turn if k == 1 else k) * n

    rows = []
    eff: dict[tuple[str, str], float] = {}  # (client, "elapsed" | "cpu") -> its ratio at the largest level
    for c, label in (("hookstream", ""), ("floor", "floor (requests iter_lines + json.loads): ")):
        one = chunks(1) / med(res[(c, 1)], "wall")
        one_cpu = chunks(1) / med(res[(c, 1)], "cpu")
        for k in [k for k in levels if (c, k) in res]:
            agg = chunks(k) / med(res[(c, k)], "wall")
            agg_cpu = chunks(k) / med(res[(c, k)], "cpu")
            if k == in_turn:
                eff[(c, "elapsed")], eff[(c, "cpu")] = agg / one, agg_cpu / one_cpu
            key = f"threads_{k}" if c == "hookstream" else f"floor_threads_{k}"
            what = label + (f"one stream at a time ({in_turn} in turn) x {n:,} chunks" if k == 1 else
                            f"{k} concurrent streams x {n:,} chunks (threads) vs one stream at a time")
            wall_s, cpu_s = [x["wall"] for x in res[(c, k)]], [x["cpu"] for x in res[(c, k)]]
            rows.append(row("concurrency", f"{key}_elapsed", f"{what}: chunks per elapsed second",
                            f"{agg:,.0f} chunks/s = {agg / one:.2f}x", agg / one, wall_s=wall_s, cpu_s=cpu_s))
            rows.append(row("concurrency", f"{key}_cpu", f"{what}: chunks per client CPU second",
                            f"{agg_cpu:,.0f} chunks/CPU-s = {agg_cpu / one_cpu:.2f}x", agg_cpu / one_cpu))
    # The target (issue 26): hookstream keeps at least 0.97 of what the floor keeps at the same level in
    # the same rounds, so the GIL's and the machine's share, which no Python client escapes, is divided out.
    for kind, unit in (("elapsed", "elapsed second"), ("cpu", "client CPU second")):
        mine, floor = eff[("hookstream", kind)], eff[("floor", kind)]
        rel = mine / floor
        rows.append(row("concurrency", f"threads_{in_turn}_{kind}_vs_floor",
                        f"{in_turn} streams on threads, chunks per {unit}: hookstream's efficiency over the floor's",
                        f"{mine:.2f}x / {floor:.2f}x = {rel:.2f}", rel, ">= 0.97", rel >= 0.97))
    return rows


def bench_latency(url: str, count: int, interval_ms: int, rounds: int) -> list[Row]:
    """Server write (its monotonic clock) to arrival: floor line parsed / hookstream ``on_text_update``."""
    workers = {c: Worker(c) for c in ("floor", "hookstream")}
    lat: dict[str, list[float]] = {c: [] for c in workers}
    try:
        for r in range(rounds):
            for c in list(workers)[r % 2:] + list(workers)[: r % 2]:
                lat[c] += workers[c].call(op="latency", root=f"{url}/openai-paced-{count}-{interval_ms}")["latency_ms"]
    finally:
        close_all(workers)
    rows = []
    for c, xs in lat.items():
        xs.sort()

        def pct(p: float, xs: list[float] = xs) -> float:
            return xs[min(len(xs) - 1, int(p * len(xs)))]

        ok = c == "hookstream"
        rows.append(row("latency", c, f"latency, server write -> {'on_text_update' if ok else 'line parsed'} "
                        f"({len(xs)} deltas, 1 per {interval_ms} ms): {LABELS[c]}",
                        f"p50 {pct(0.5):.2f} ms, p90 {pct(0.9):.2f} ms, p99 {pct(0.99):.2f} ms, max {xs[-1]:.2f} ms",
                        pct(0.99), "p99 <= 2 ms" if ok else "", (pct(0.99) <= 2.0) if ok else None,
                        p50_ms=pct(0.5), p90_ms=pct(0.9), p99_ms=pct(0.99), max_ms=xs[-1]))
    return rows


def _child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process run to completion (``RUSAGE_CHILDREN`` delta)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# Entry points of the core distribution itself: loaded in every process, never blocked here.
CORE_PLUGINS = ("builtins",)


def installed_plugins() -> list[str]:
    """Entry-point names of the ``hookstream`` group that are not the core's own (:data:`CORE_PLUGINS`)."""
    import importlib.metadata

    return sorted({ep.name for ep in importlib.metadata.entry_points(group="hookstream")} - set(CORE_PLUGINS))


# Run in a child per plugin: the registry with the core's built-ins only, then that plugin's entry point
# loaded and registered as the registry does it, its CPU time printed (what the plugin adds to any start).
PLUGIN_PROBE = """
import importlib.metadata, os, sys, time
os.environ["HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD"] = "1"
from hookstream._registry import Registry
registry = Registry()
(ep,) = [e for e in importlib.metadata.entry_points(group="hookstream") if e.name == sys.argv[1]]
t = time.process_time()
info = registry.add_plugin(ep.load(), ep.name, ep.dist.name if ep.dist else None, None)
cpu = time.process_time() - t
assert info is not None and not registry.failures, registry.failures
print(cpu)
"""


def _plugin_cpu(name: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", PLUGIN_PROBE, name], env=env, check=True, capture_output=True,
                         text=True)
    return float(out.stdout.split()[-1])


def bench_startup(rounds: int, peer_venvs: Sequence[str]) -> list[Row]:
    """CPU seconds of fresh processes: bare interpreter, ``import requests`` (the floor of any command that
    speaks HTTP), ``import hookstream``, ``hookstream replay`` and ``hookstream --version`` with every
    installed plugin and with only the core's entry points (``HOOKSTREAM_BLOCK_PLUGINS`` naming every
    other one); and what each plugin adds to a start, measured inside a child (:data:`PLUGIN_PROBE`:
    loading and registering its entry point, imports included), since a few milliseconds are within the
    noise of whole-process figures (issue 30: registration names things; heavy modules load on first use)."""
    env = {k: v for k, v in os.environ.items()  # as installed: .pyc kept; every plugin loaded
           if k not in ("PYTHONDONTWRITEBYTECODE", "HOOKSTREAM_BLOCK_PLUGINS", "HOOKSTREAM_DISABLE_PLUGIN_AUTOLOAD")}
    plugins = installed_plugins()
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "short.sse"
        body.write_bytes(b"".join(sse_server.scenario("openai-text-20")))
        script = Path(sys.executable).parent / "hookstream"
        hookstream = [str(script)] if script.exists() else [sys.executable, "-m", "hookstream"]
        cmds: dict[str, tuple[list[str], dict[str, str]]] = {
            "python": ([sys.executable, "-c", "pass"], env),
            "requests": ([sys.executable, "-c", "import requests"], env),
            "import": ([sys.executable, "-c", "import hookstream"], env),
            "replay": ([*hookstream, "replay", "--provider", "openai", str(body)], env),
            "version": ([*hookstream, "--version"], env),
            "version:core": ([*hookstream, "--version"], {**env, "HOOKSTREAM_BLOCK_PLUGINS": ",".join(plugins)}),
        }
        imports = {"openai": "openai", "anthropic": "anthropic", "litellm": "litellm", "llm": "llm",
                   "pydantic-ai": "pydantic_ai", "openai-agents": "agents"}
        for v in peer_venvs:
            cmds[f"peer:{v}"] = ([str(peers.python_of(v)), "-c", f"import {imports[v]}"], env)
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        names = list(cmds)
        for r in range(-1, rounds):  # the warm-up round writes .pyc files as a first install-time run would
            for k in names[r % len(names):] + names[: r % len(names)]:
                cmd, env_k = cmds[k]
                t = _child_cpu(cmd, {**env_k, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
                if r >= 0:
                    cpu[k].append(t)
            for name in plugins:
                t = _plugin_cpu(name, env)
                if r >= 0:
                    cpu.setdefault(f"plugin:{name}", []).append(t)
    m = {k: statistics.median(v) for k, v in cpu.items()}
    rows = [
        row("startup", "python", "fresh `python -c pass` (the interpreter alone), CPU", f"{m['python']:.3f} s",
            m["python"], cpu_s=cpu["python"]),
        row("startup", "requests", "fresh `python -c 'import requests'` (the floor of a command that speaks HTTP), "
            "CPU", f"{m['requests']:.3f} s", m["requests"], cpu_s=cpu["requests"]),
        row("startup", "import", "fresh `python -c 'import hookstream'`, CPU of the whole child",
            f"{m['import']:.3f} s (import alone {m['import'] - m['python']:.3f} s)", m["import"], "<= 0.15 s",
            m["import"] <= 0.15, cpu_s=cpu["import"]),
        row("startup", "replay", f"`hookstream replay --provider openai` of a 20-chunk body, {len(plugins)} plugins "
            "installed, CPU of the whole child", f"{m['replay']:.3f} s", m["replay"], "<= 0.25 s",
            m["replay"] <= 0.25, cpu_s=cpu["replay"], plugins=plugins),
        row("startup", "version", f"`hookstream --version`, {len(plugins)} plugins installed, CPU of the whole child",
            f"{m['version']:.3f} s (core's entry points only: {m['version:core']:.3f} s)", m["version"],
            cpu_s=cpu["version"], core_cpu_s=cpu["version:core"], plugins=plugins),
    ]
    added = m["version"] - m["version:core"]
    rows.append(row("startup", "plugins", f"what the {len(plugins)} plugins add to `hookstream --version`, whole "
                    "child (all installed vs only the core's entry points), CPU",
                    f"{added * 1e3:+.1f} ms ({added * 1e3 / max(1, len(plugins)):+.1f} ms a plugin)", added,
                    f"<= {5 * len(plugins)} ms", added <= 0.005 * len(plugins)))
    for name in plugins:
        k = f"plugin:{name}"
        rows.append(row("startup", k, f"plugin {name!r}: loading and registering its entry point in a started "
                        "process (imports included), CPU", f"{m[k] * 1e3:.1f} ms", m[k], "<= 5 ms",
                        m[k] <= 0.005, cpu_s=cpu[k]))
    for v in peer_venvs:
        k = f"peer:{v}"
        rows.append(row("startup", k, f"fresh `python -c 'import {imports[v]}'` ({v} venv), CPU",
                        f"{m[k]:.3f} s", m[k], cpu_s=cpu[k]))
    return rows


SECTIONS = ("text", "tool-args", "memory", "concurrency", "latency", "startup")


def run_all(quick: bool, rounds: int, with_peers: bool,
            progress: Callable[[str], None] = lambda s: None, only: Sequence[str] = SECTIONS) -> list[Row]:
    """The figures of each section in ``only`` (:data:`SECTIONS`), in that tuple's order."""
    openai_peers = ["openai-create", "openai-stream", "litellm", "llm", "pydantic-ai", "openai-agents"]
    n = 5000 if quick else 20000
    rows: list[Row] = []
    if set(only) - {"startup"}:
        server = Server(max_requests=100_000, max_seconds=3 * 3600)
        try:
            if "text" in only:
                progress(f"OpenAI text, {n:,} chunks" + (" (with peers)" if with_peers else ""))
                rows += bench_text(server.url, "openai", n, rounds, openai_peers if with_peers else [])
                progress(f"Anthropic text, {n:,} events")
                rows += bench_text(server.url, "anthropic", n, rounds, ["anthropic-stream"] if with_peers else [])
                progress(f"Ollama NDJSON text, {n:,} lines")
                rows += bench_text(server.url, "ollama", n, rounds, [])
                progress(f"Bedrock event-stream text, {n:,} frames")
                rows += bench_text(server.url, "bedrock", n, rounds, [])
            if "tool-args" in only:
                progress("tool arguments in 8-byte deltas")
                rows += bench_tool_args(server.url, [20_000, 200_000] if quick else [20_000, 200_000, 1_000_000], 3)
            if "memory" in only:
                progress("memory")
                rows += bench_memory(server.url, 8 * 2**20)
            if "concurrency" in only:
                progress("concurrency")
                rows += bench_concurrency(server.url, 500 if quick else 2000, [1, 8, 32], 3 if quick else 9)
            if "latency" in only:
                progress("latency")
                rows += bench_latency(server.url, 50 if quick else 100, 20, 1 if quick else 2)
        finally:
            server.close()
    if "startup" in only:
        progress("start-up")
        rows += bench_startup(3 if quick else 5, list(peers.VENVS) if with_peers else [])
    return rows
