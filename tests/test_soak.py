"""Soak and leaks: 1,000 back-to-back runs and 64 concurrent runs against one loopback server.

Bounds (stated, generous for a noisy CI machine): after the runs and a settle period the thread count
and the process's open TCP sockets are back at their baseline, and Python heap growth between run 100
and run 1,000 (tracemalloc, current size) stays under 2 MB, i.e. nothing is kept per run.
"""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest
from faultkit import open_sockets, running_threads, settle
from hookstream import chat, get_model, get_registry
from hookstream.events import RunFinished
from hookstream.testing.provider_bodies import final_stream
from hookstream.testing.server import LoopbackServer, Response

pytestmark = pytest.mark.slow

RUNS = 1000
CONCURRENT = 64
HEAP_GROWTH_BOUND = 2 * 1024 * 1024


def _one(url: str, text: str) -> None:
    # Closed as the docs ask: its pool keeps the connection alive after the call until then.
    with get_model("openai:soak", base_url=url + "/v1", api_key="k") as model:
        stream = chat(model, "hi", max_steps=1)
        events = list(stream)
    assert isinstance(events[-1], RunFinished), events[-1]
    assert stream.result().text == text


@pytest.fixture
def server() -> LoopbackServer:
    if "openai" not in get_registry().names("providers"):
        pytest.skip("openai provider is not installed")
    script = final_stream("openai")
    with LoopbackServer([Response(pieces=script.events)]) as srv:
        srv.text = script.text  # type: ignore[attr-defined]
        yield srv


def test_back_to_back_runs_do_not_grow(server: LoopbackServer) -> None:
    threads0, sockets0 = running_threads(), open_sockets()
    text = server.text  # type: ignore[attr-defined]
    for _ in range(100):
        _one(server.url, text)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(RUNS - 100):
            _one(server.url, text)
        server.requests.clear()  # the server's own capture list is not the client's memory
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert current - base < HEAP_GROWTH_BOUND, f"heap grew by {(current - base) / 1e6:.2f} MB over {RUNS - 100} runs"
    threads, sockets = settle(threads0, sockets0)
    assert threads <= threads0 and sockets <= sockets0


def test_concurrent_runs_in_threads(server: LoopbackServer) -> None:
    threads0, sockets0 = running_threads(), open_sockets()
    text = server.text  # type: ignore[attr-defined]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _one(server.url, text)
        except BaseException as exc:  # collected and re-raised on the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(CONCURRENT)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert not errors, errors[:3]
    threads, sockets = settle(threads0, sockets0)
    assert threads <= threads0, threading.enumerate()
    assert sockets <= sockets0
