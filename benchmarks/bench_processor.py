"""Linearity of the StreamProcessor, as ratios measured in one run (the machine is noisy: compare
ratios, never absolute times across runs; see ../shared/MEASURED.md).

1. 1 MB of text in 4-byte deltas, Immediate strategy (every delta published, full text to the
   ``on_text_update`` callback each time), against a tenth of that size run ten times.
2. A tool call with 1 MB of arguments (one long string value, the shape of a tool writing a file, plus
   small members) in 8-byte deltas, partial arguments current after every delta, against a tenth x10.

A ratio near 1.0 means linear; the issue asks for at most 1.5. Times are CPU time of this process
(``time.process_time``); no server is involved. Run: ``python benchmarks/bench_processor.py``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from hookstream import StreamProcessor
from hookstream import _events as E

MB = 1_000_000


def text_events(size: int) -> list[E.BaseEvent]:
    body = ("word " * (size // 5 + 1))[:size]
    deltas = [E.TextMessageContent("m1", body[i : i + 4]) for i in range(0, size, 4)]
    return [E.RunStarted("t", "r"), E.TextMessageStart("m1"), *deltas, E.TextMessageEnd("m1"),
            E.RunFinished("t", "r", finish_reason="stop")]


def tool_events(size: int) -> list[E.BaseEvent]:
    content = ("line of a file\n" * (size // 15 + 1))[: size - 60]
    args = json.dumps({"path": "out.txt", "mode": "w", "content": content, "lines": [1, 2, 3]})
    deltas = [E.ToolCallArgs("c1", args[i : i + 8]) for i in range(0, len(args), 8)]
    return [E.RunStarted("t", "r"), E.ToolCallStart("c1", "write_file"), *deltas, E.ToolCallEnd("c1"),
            E.RunFinished("t", "r", finish_reason="tool_calls")]


def run_text(events: list[E.BaseEvent]) -> None:
    shown = 0

    def on_text(message_id: str, text: str) -> None:
        nonlocal shown
        shown = len(text)  # what a terminal does: print text[shown:]

    r = StreamProcessor(on_text_update=on_text).process(events)
    assert shown == len(r.content)


def run_tool(events: list[E.BaseEvent]) -> None:
    p = StreamProcessor()
    p.process_chunk(events[0])
    p.process_chunk(events[1])
    part = p.messages[0].parts[0]
    for e in events[2:-2]:
        p.process_chunk(e)
        assert part.input is not None  # type: ignore[union-attr]  # current after every delta
    r = p.process(events[-2:])
    assert r.tool_calls[0].arguments is not None and len(r.tool_calls[0].arguments["content"]) > 0


def ratio(run: Callable[[list[E.BaseEvent]], None], make: Callable[[int], list[E.BaseEvent]],
          size: int, repeats: int = 5) -> tuple[float, float, float]:
    big, small = make(size), make(size // 10)
    big_t, small_t = [], []
    for _ in range(repeats):  # interleaved, medians
        t = time.process_time()
        run(big)
        big_t.append(time.process_time() - t)
        t = time.process_time()
        for _ in range(10):
            run(small)
        small_t.append(time.process_time() - t)
    b, s = statistics.median(big_t), statistics.median(small_t)
    return b, s, b / s


def main() -> list[dict[str, Any]]:
    """One record per figure, in the shape ``bench_pipeline.row`` makes."""
    rows = []
    for key, name, run, make in (
            ("text", "StreamProcessor linearity, text 1 MB in 4-byte deltas (immediate) vs 10 x 100 KB",
             run_text, text_events),
            ("tool_args", "StreamProcessor linearity, tool arguments 1 MB in 8-byte deltas (partial arguments "
             "current) vs 10 x 100 KB", run_tool, tool_events)):
        b, s, r = ratio(run, make, MB)
        rows.append({"section": "processor", "key": key, "what": name,
                     "measured": f"{b:.3f} s vs {s:.3f} s CPU = {r:.2f}", "value": r, "target": "<= 1.5",
                     "result": "PASS" if r <= 1.5 else "MISS", "data": {"big_cpu_s": b, "small_cpu_s": s}})
    return rows


if __name__ == "__main__":
    for rec in main():
        print(f"{rec['what']}: {rec['measured']} ({rec['result']}, target {rec['target']})")
