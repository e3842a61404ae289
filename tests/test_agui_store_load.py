"""Load test of the scaled-out server: `hookstream serve --workers 4` on SQLite and PostgreSQL, 200
conversations at once against a simulated OpenAI provider (10 ms before each SSE event), each with a
tool call and an approval that is resumed; every message must be stored once, in order.

Prints the time to first event (POST sent to the first SSE event read: RUN_STARTED) at p50 and p99 over
all runs; docs/agui-server.md ("Scaling out") quotes a measured run. No latency is asserted: the
figures depend on the machine.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
if sys.platform == "win32":
    pytest.skip("gunicorn runs on Unix only", allow_module_level=True)

from store_kit import Client, SimProvider, assert_stored_once_in_order, converse, percentile, postgres, serve_workers

pytestmark = pytest.mark.slow

CONVERSATIONS = 200
SCRIPT = ["look weather", "pay 3"]
ROLES = ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "tool", "assistant"]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "sqlite":
        with tempfile.TemporaryDirectory() as where:
            yield f"sqlite:///{where}/threads.db"
    else:
        with postgres() as url:
            yield url


def test_200_concurrent_conversations_on_4_workers(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with SimProvider(delay=0.01) as sim, serve_workers(store_url, sim.url, workers=4, threads=64) as base:
        clients = [Client(base, f"load{k}", full=k % 2 == 0) for k in range(CONVERSATIONS)]
        started = time.perf_counter()
        with ThreadPoolExecutor(CONVERSATIONS) as pool:
            for done in [pool.submit(converse, c, SCRIPT) for c in clients]:
                done.result()
        elapsed = time.perf_counter() - started
        pids = {r.rsplit(" ", 1)[1] for c in clients for r in c.results("sent 3")}
        for c in clients:
            assert_stored_once_in_order(store_url, c, SCRIPT, ROLES)
        assert len(sim.requests) == CONVERSATIONS * 4
    waits = [w for c in clients for w in c.first_event]
    assert len(waits) == CONVERSATIONS * 3
    with capsys.disabled():
        print(f"\n{store_url.split(':', 1)[0]}: {CONVERSATIONS} conversations, {len(waits)} runs in {elapsed:.1f} s "
              f"on {len(pids)} workers; time to first event p50 {percentile(waits, 0.5) * 1000:.0f} ms, "
              f"p99 {percentile(waits, 0.99) * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms")
