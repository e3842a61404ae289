"""The AG-UI server sends each event as it is produced, proved by order rather than by latency.

The run's stream yields one event, then waits until the HTTP client (``requests``, reading the real
waitress server) has parsed it before producing the next. A server that held events back (a write
buffer waiting to fill, or for the next event) would leave the client waiting and the stream's wait
unanswered. Latency numbers belong to the Node test's report and to ``benchmarks/``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
import requests

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from hookstream import events as E
from hookstream.events import BaseEvent
from hookstream.server import RunInput, RunStream, make_app

# Only keeps a broken server from hanging the test; a working one answers at once.
NEVER = 30.0


class _Lockstep:
    """Yields its events one at a time, each only after the client has seen all earlier ones."""

    def __init__(self, run: RunInput, seen: list[str], arrived: threading.Condition) -> None:
        self.events: list[BaseEvent] = [
            E.RunStarted(run.thread_id, run.run_id),
            E.TextMessageStart("m1"),
            E.TextMessageContent("m1", "Hel"),
            E.TextMessageContent("m1", "lo"),
            E.TextMessageEnd("m1"),
            E.RunFinished(run.thread_id, run.run_id),
        ]
        self.seen, self.arrived = seen, arrived
        self.unanswered: list[int] = []

    def __iter__(self) -> Iterator[BaseEvent]:
        for n, ev in enumerate(self.events, start=1):
            yield ev
            if n < len(self.events):
                with self.arrived:
                    if not self.arrived.wait_for(lambda n=n: len(self.seen) >= n, NEVER):
                        self.unanswered.append(n)

    def cancel(self) -> None:
        pass


def test_each_event_reaches_the_client_before_the_next_is_produced() -> None:
    from waitress.server import create_server

    seen: list[str] = []
    arrived = threading.Condition()
    streams: list[_Lockstep] = []

    def factory(run: RunInput) -> RunStream:
        streams.append(_Lockstep(run, seen, arrived))
        return streams[-1]

    server = create_server(make_app(stream_factory=factory), host="127.0.0.1", port=0, threads=2)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.effective_port}/"  # type: ignore[union-attr]
        doc = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}],
               "tools": [], "context": [], "state": {}, "forwardedProps": {}}
        with requests.post(url, json=doc, stream=True, timeout=NEVER) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines(chunk_size=1):
                if line.startswith(b"data:"):
                    with arrived:
                        seen.append(json.loads(line[5:])["type"])
                        arrived.notify_all()
    finally:
        server.close()
    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
                    "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert streams and streams[0].unanswered == [], (
        f"events {streams[0].unanswered} were produced but not sent until a later one was")
