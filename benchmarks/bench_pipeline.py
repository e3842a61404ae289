"""Loopback benchmarks of the whole pipeline, as ratios measured in one run (issue 2 and issue 6).

The server (hookstream.testing.LoopbackServer; in a child process for the concurrency and memory
figures) sends each SSE event as its own HTTP chunk. Every figure is a median over interleaved
repeats (clients take turns in rotating order), so a noisy machine shifts all clients alike; compare ratios,
never absolute numbers across runs
(see ../shared/MEASURED.md for anchors).

* throughput: 20,000 OpenAI Chat chunks: floor (requests ``iter_lines`` + ``json.loads``),
  ``hookstream.chat`` with a StreamProcessor consuming every event, the openai SDK's
  ``chat.completions.stream(...).get_final_completion()``; the same on 20,000 Anthropic events with the
  anthropic SDK's ``messages.stream(...).get_final_message()``.
* tool-argument streaming: 20 KB / 200 KB / 1 MB of arguments in 8-byte deltas, processor keeping the
  partial arguments current, vs the floor on the same bytes.
* latency: one delta every 20 ms; time from the server's write to the processor's ``on_text_update``.
* concurrency: 1, 8, 32 streams in threads; aggregate chunks/s relative to one stream.
* memory: tracemalloc peak while streaming a 10 MB response, over the response size.

Run: ``python benchmarks/bench_pipeline.py [--quick]``; ``benchmarks/run.py`` prints every table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import requests
from hookstream import get_model
from hookstream._chat import chat
from hookstream._processor import StreamProcessor
from hookstream.testing.server import LoopbackServer, Response

Row = tuple[str, str, str]


def openai_events(n: int, *, text: str = "tok ", tool_args: str | None = None, delta: int = 8) -> list[bytes]:
    def chunk(d: dict[str, Any], finish: str | None = None) -> bytes:
        doc = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "bench",
               "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        return b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    if tool_args is None:
        out += [chunk({"content": text})] * n
        out.append(chunk({}, "stop"))
    else:
        out.append(chunk({"tool_calls": [{"index": 0, "id": "call_b", "type": "function",
                                          "function": {"name": "write_file", "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": tool_args[i : i + delta]}}]})
                for i in range(0, len(tool_args), delta)]
        out.append(chunk({}, "tool_calls"))
    out.append(b'data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench",'
               b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}\n\n')
    out.append(b"data: [DONE]\n\n")
    return out


def anthropic_events(n: int, text: str = "tok ") -> list[bytes]:
    def ev(kind: str, **f: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **f}, separators=(',', ':'))}\n\n".encode()

    out = [ev("message_start", message={"id": "msg_b", "type": "message", "role": "assistant", "model": "bench",
                                        "content": [], "stop_reason": None, "stop_sequence": None,
                                        "usage": {"input_tokens": 5, "output_tokens": 1}}),
           ev("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    out += [ev("content_block_delta", index=0, delta={"type": "text_delta", "text": text})] * n
    out += [ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
               usage={"output_tokens": n}),
            ev("message_stop")]
    return out


# -- clients ------------------------------------------------------------------------------------------

def floor(url: str) -> int:
    """requests iter_lines + json.loads: the least any Python client must do."""
    n = 0
    with requests.post(url, json={"stream": True}, stream=True) as r:
        for line in r.iter_lines():
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                json.loads(line[6:])
                n += 1
    return n


def hookstream_run(provider: str, base_url: str, **kw: Any) -> int:
    proc = StreamProcessor()
    n = 0
    for ev in chat(get_model(f"{provider}:bench", base_url=base_url, api_key="bench"), "hi", max_steps=1, **kw):
        proc.process_chunk(ev)
        n += 1
    proc.finalize()
    return n


def openai_sdk(base_url: str) -> int:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    with client.chat.completions.stream(model="bench", messages=[{"role": "user", "content": "hi"}]) as s:
        s.get_final_completion()
    client.close()
    return 0


def anthropic_sdk(base_url: str) -> int:
    import anthropic

    client = anthropic.Anthropic(base_url=base_url, api_key="bench", max_retries=0)
    with client.messages.stream(model="bench", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s:
        s.get_final_message()
    client.close()
    return 0


def interleaved(clients: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds per client over ``repeats`` rounds, each round in a rotated order."""
    times: dict[str, list[float]] = {k: [] for k in clients}
    names = list(clients)
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            t0 = time.perf_counter()
            clients[name]()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


# -- benchmarks -----------------------------------------------------------------------------------------

def bench_throughput(n: int, repeats: int) -> list[Row]:
    rows: list[Row] = []
    with LoopbackServer([Response(pieces=openai_events(n))]) as srv:
        clients: dict[str, Callable[[], Any]] = {
            "floor: requests iter_lines + json.loads": lambda: floor(srv.url + "/v1/chat/completions"),
            "hookstream.chat + StreamProcessor (openai)": lambda: hookstream_run("openai", srv.url + "/v1"),
        }
        if _have("openai"):
            clients["openai SDK .stream().get_final_completion()"] = lambda: openai_sdk(srv.url + "/v1")
        med = interleaved(clients, repeats)
    base = med["floor: requests iter_lines + json.loads"]
    for name, t in med.items():
        rows.append((f"{n:,} OpenAI chunks: {name}", f"{n / t:,.0f} chunks/s", f"{t / base:.2f}x floor"))
    if "openai SDK .stream().get_final_completion()" in med:
        hs = med["hookstream.chat + StreamProcessor (openai)"]
        rows.append(("  openai SDK / hookstream", f"{med['openai SDK .stream().get_final_completion()'] / hs:.1f}x",
                     "target >= 10x"))
    with LoopbackServer([Response(pieces=anthropic_events(n))]) as srv:
        clients = {
            "floor": lambda: floor(srv.url + "/v1/messages"),
            "hookstream.chat + StreamProcessor (anthropic)": lambda: hookstream_run("anthropic", srv.url),
        }
        if _have("anthropic"):
            clients["anthropic SDK messages.stream().get_final_message()"] = lambda: anthropic_sdk(srv.url)
        med = interleaved(clients, repeats)
    base = med["floor"]
    for name, t in med.items():
        rows.append((f"{n:,} Anthropic events: {name}", f"{n / t:,.0f} events/s", f"{t / base:.2f}x floor"))
    return rows


def bench_tool_args(sizes: list[int], repeats: int) -> list[Row]:
    rows: list[Row] = []
    for size in sizes:
        content = ("line of a file\n" * (size // 15 + 1))[: size - 40]
        args = json.dumps({"path": "out.txt", "content": content})
        with LoopbackServer([Response(pieces=openai_events(0, tool_args=args))]) as srv:
            med = interleaved({
                "floor": lambda: floor(srv.url + "/v1/chat/completions"),
                "hookstream": lambda: hookstream_run("openai", srv.url + "/v1"),
            }, repeats)
        rows.append((f"tool arguments {size // 1000:,} KB in 8-byte deltas", f"{med['hookstream']:.3f} s",
                     f"{med['hookstream'] / med['floor']:.2f}x floor"))
    return rows


def bench_latency(count: int, interval: float) -> list[Row]:
    sent: list[float] = []
    received: list[float] = []
    head = [openai_events(0)[0]]
    tail = openai_events(0)[-3:]

    def writer(wfile: Any, sock: Any) -> None:
        def chunk(data: bytes) -> None:
            wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            wfile.flush()

        for piece in head:
            chunk(piece)
        delta = openai_events(1, text="x")[1]
        for _ in range(count):
            time.sleep(interval)
            sent.append(time.perf_counter())
            chunk(delta)
        for piece in tail:
            chunk(piece)
        wfile.write(b"0\r\n\r\n")
        wfile.flush()

    def on_text(message_id: str, text: str) -> None:
        received.append(time.perf_counter())

    with LoopbackServer([Response(writer=writer)]) as srv:
        proc = StreamProcessor(on_text_update=on_text)
        for ev in chat(get_model("openai:bench", base_url=srv.url + "/v1", api_key="bench"), "hi", max_steps=1):
            proc.process_chunk(ev)
        proc.finalize()
    lat = sorted((r - s) * 1000 for s, r in zip(sent, received, strict=False))
    if not lat:
        return [("latency", "no callbacks", "")]

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))]

    return [(f"latency server write -> on_text_update ({len(lat)} deltas, 1 per {interval * 1000:.0f} ms)",
             f"p50 {pct(0.5):.2f} ms, p90 {pct(0.9):.2f} ms, p99 {pct(0.99):.2f} ms, max {lat[-1]:.2f} ms",
             "target <= 2 ms")]


@contextlib.contextmanager
def child_server(pieces: list[bytes]) -> Iterator[str]:
    """The loopback server in a forked child process, yielding its URL.

    For the concurrency and memory figures the server must not share the client's GIL (32 client
    threads would otherwise compete with 32 server threads) nor its heap (tracemalloc would count the
    server's copy of the response)."""
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe()

    def serve(conn: Any) -> None:
        with LoopbackServer([Response(pieces=pieces)]) as srv:
            conn.send(srv.url)
            conn.recv()

    proc = ctx.Process(target=serve, args=(theirs,), daemon=True)
    proc.start()
    try:
        yield mine.recv()
    finally:
        mine.send(None)
        proc.join(5)


def bench_concurrency(n: int, levels: list[int], repeats: int) -> list[Row]:
    rows: list[Row] = []
    with child_server(openai_events(n)) as url:
        def run(k: int) -> float:
            threads = [threading.Thread(target=hookstream_run, args=("openai", url + "/v1")) for _ in range(k)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return k * n / (time.perf_counter() - t0)

        results: dict[int, list[float]] = {k: [] for k in levels}
        for r in range(repeats):
            for k in levels[r % len(levels):] + levels[: r % len(levels)]:
                results[k].append(run(k))
    single = statistics.median(results[levels[0]])
    for k in levels:
        agg = statistics.median(results[k])
        rows.append((f"{k} concurrent streams x {n:,} chunks (threads)", f"{agg:,.0f} chunks/s aggregate",
                     f"{agg / single:.2f}x one stream" + (" (target >= 0.85)" if k == 32 else "")))
    return rows


def bench_memory(size: int) -> list[Row]:
    delta = 1024
    events = openai_events(size // delta, text="m" * delta)
    total = sum(len(e) for e in events)
    with child_server(events) as url:
        tracemalloc.start()
        hookstream_run("openai", url + "/v1")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return [(f"peak memory streaming a {total / 1e6:.1f} MB response (tracemalloc)", f"{peak / 1e6:.1f} MB",
             f"{peak / total:.2f}x response size (target <= 3x)")]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    args = parser.parse_args(argv)
    q = args.quick
    rows: list[Row] = []
    rows += bench_throughput(5000 if q else 20000, 3 if q else 5)
    rows += bench_tool_args([20_000, 200_000] if q else [20_000, 200_000, 1_000_000], 3)
    rows += bench_latency(50 if q else 100, 0.02)
    rows += bench_concurrency(500 if q else 2000, [1, 8, 32], 3)
    rows += bench_memory(10 * 1024 * 1024)
    return rows


def print_table(rows: list[Row]) -> None:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:>{w1}}  {c}")


if __name__ == "__main__":
    print_table(main())
