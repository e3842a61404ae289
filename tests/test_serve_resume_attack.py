"""What an attack on resuming found (issue 38, findings 2, 4, 8, 11, 12), each against real `hookstream
serve` processes: waitress without a store, and `--workers 2` with SQLite and with PostgreSQL, three
principals with bearer tokens, serving the simulated OpenAI provider of tests/store_kit.py (which holds
a conversation's answer after its first text until the test lets go: a quiet run).

- 2: ten resume streams of one principal on a quiet run: past ``--max-resume-streams`` (4 per worker)
  ``429``; other principals' runs are served meanwhile; closed resume sockets free their threads (the
  server's ``: ping`` write fails) so the principal may open as many again while the run is still
  quiet; a client that leaves a quiet live run gets it cancelled after ``--detached-run-seconds``.
- 4: another principal's ``(threadId, runId)`` is refused, and the owner's run is untouched.
- 8: the in-memory event log stays within ``--event-log-principal-bytes`` under 24 big runs; the
  oldest ended runs are dropped first (their resume answers 404), another principal's are kept.
- 11: ``Last-Event-ID: <runId>:²`` (and other non-ASCII digits, 13 digits) is ``400``.
- 12: another principal's run and no run get the same answer on both resume routes.

Times under attack are measured by benchmarks/bench_serve_attack.py, not asserted here: the waits below
poll for what the server does, with generous timeouts only against a hang.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sseclient
from hookstream_server.runlog import run_log_of

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from hookstream.stores import open_store
from store_kit import Client, SimProvider, postgres, serve_workers

TOKENS = "token-alice alice\ntoken-bob bob\ntoken-carol carol\n"
ALICE = {"Authorization": "Bearer token-alice", "Accept": "text/event-stream"}
BOB = {"Authorization": "Bearer token-bob", "Accept": "text/event-stream"}
PING = "0.2"  # seconds: --ping-seconds of every server here
LOG_CAP = 2_000_000  # --event-log-principal-bytes of the memory server


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProvider]:
    with SimProvider() as provider:
        yield provider


class Server:
    def __init__(self, url: str, workers: int, store: str | None) -> None:
        self.url, self.workers, self.store = url, workers, store


@pytest.fixture(scope="module", params=["waitress", "workers-sqlite", "workers-postgresql"])
def server(request: pytest.FixtureRequest, sim: SimProvider) -> Iterator[Server]:
    if request.param != "waitress" and sys.platform == "win32":
        pytest.skip("gunicorn runs on Unix only")
    if request.param != "waitress":
        pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    with tempfile.TemporaryDirectory() as where:
        tokens = Path(where) / "tokens"
        tokens.write_text(TOKENS)
        extra = ("--auth-tokens", str(tokens), "--ping-seconds", PING, "--detached-run-seconds", "1",
                 "--event-log-principal-bytes", str(LOG_CAP), "--event-log-bytes", str(4 * LOG_CAP))
        if request.param == "waitress":
            with serve_workers(None, sim.url, workers=1, threads=8, extra=extra) as base:
                yield Server(base, 1, None)
        elif request.param == "workers-sqlite":
            url = f"sqlite:///{where}/threads.db"
            with serve_workers(url, sim.url, workers=2, threads=8, extra=extra) as base:
                yield Server(base, 2, url)
        else:
            with postgres() as url, serve_workers(url, sim.url, workers=2, threads=8, extra=extra) as base:
                yield Server(base, 2, url)


def _events(resp: requests.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    for sse in sseclient.SSEClient(resp).events():  # SSE comments (": ping") are not events
        yield sse.id, json.loads(sse.data)


def _start(srv: Server, sim: SimProvider, tag: str, headers: dict[str, str] = ALICE,
           hold: bool = True) -> tuple[str, str, Any, requests.Response]:
    """A run of a new thread (held after its first text when ``hold``), read to its third event."""
    thread_id, run_id = f"thread-{tag}", f"run-{uuid.uuid4().hex}"
    event = sim.hold(tag) if hold else None
    body = {"threadId": thread_id, "runId": run_id, "tools": [], "state": None, "context": [],
            "forwardedProps": None, "messages": [{"id": f"u-{tag}", "role": "user", "content": f"{tag}| hi there"}]}
    resp = requests.post(srv.url + "/", json=body, headers=headers, stream=True, timeout=60)
    assert resp.status_code == 200, resp.text
    return thread_id, run_id, event, resp


_READERS: list[Iterator[Any]] = []  # a reader dropped mid-stream closes its connection (urllib3): keep them


def _first_three(resp: requests.Response) -> list[tuple[str, dict[str, Any]]]:
    got: list[tuple[str, dict[str, Any]]] = []
    reader = _events(resp)
    _READERS.append(reader)
    for item in reader:
        got.append(item)
        if len(got) == 3:
            return got
    raise AssertionError(f"the run ended early: {got}")


def _logged(srv: Server, thread_id: str, run_id: str) -> None:
    """Until the run is in the server's shared log (its worker writes the log in batches)."""
    if srv.store is None:
        return
    run_log = run_log_of(open_store(srv.store))
    while run_log.read(thread_id, run_id, 1 << 40) is None:
        time.sleep(0.02)


def _resume_url(srv: Server, thread_id: str, run_id: str) -> str:
    return f"{srv.url}/agui/threads/{thread_id}/runs/{run_id}/events"


# -- finding 2: resume streams hold threads -----------------------------------------------------------

def test_resume_streams_are_limited_and_freed_by_pings(server: Server, sim: SimProvider) -> None:
    tag = f"q{uuid.uuid4().hex[:8]}"
    thread_id, run_id, hold, live = _start(server, sim, tag)
    try:
        last = _first_three(live)[-1][0]
        _logged(server, thread_id, run_id)
        url = _resume_url(server, thread_id, run_id)
        streams = [requests.get(url, headers={**ALICE, "Last-Event-ID": last}, stream=True, timeout=60)
                   for _ in range(10)]
        held = [s for s in streams if s.status_code == 200]
        refused = [s for s in streams if s.status_code != 200]
        assert all(s.status_code == 429 and int(s.headers["Retry-After"]) >= 1 for s in refused), \
            [(s.status_code, s.text) for s in refused]
        assert 1 <= len(held) <= 4 * server.workers and len(refused) >= 10 - 4 * server.workers, len(held)
        for s in refused:
            s.close()

        # Other principals are served while alice holds her streams (and her quiet run).
        for token in ("token-bob", "token-carol"):
            client = Client(server.url, f"g{uuid.uuid4().hex[:6]}", full=True, token=token)
            assert client.say("hello")[-1]["type"] == "RUN_FINISHED"

        # Every held stream is quiet but pinged: its client gone, the server's next writes fail and free it.
        for s in held:
            s.close()
        again: list[requests.Response] = []
        give_up = time.monotonic() + 60  # against a hang only: pings free them in well under a second
        while len(again) < len(held):
            assert time.monotonic() < give_up, f"only {len(again)} of {len(held)} resume streams freed"
            s = requests.get(url, headers={**ALICE, "Last-Event-ID": last}, stream=True, timeout=60)
            if s.status_code == 200:
                again.append(s)
            else:
                assert s.status_code == 429, s.text
                s.close()
                time.sleep(0.05)
        assert not hold.is_set()  # all of it while the run was still quiet
        hold.set()
        rest = [e for _, e in _events(again[0])]
        assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["outcome"]["type"] == "success", rest[-3:]
        for s in again:
            s.close()
    finally:
        hold.set()
        live.close()


def test_a_client_gone_from_a_quiet_run_gets_it_cancelled_after_detached_run_seconds(
        server: Server, sim: SimProvider) -> None:
    tag = f"d{uuid.uuid4().hex[:8]}"
    thread_id, run_id, hold, live = _start(server, sim, tag)
    try:
        last = _first_three(live)[-1][0]
        live.close()  # the client leaves while the model is quiet: only a ping tells the server
        _logged(server, thread_id, run_id)
        with requests.get(_resume_url(server, thread_id, run_id), headers={**ALICE, "Last-Event-ID": last},
                          stream=True, timeout=60) as resumed:
            assert resumed.status_code == 200, resumed.text
            rest = [e for _, e in _events(resumed)]  # ends when the detached run is cancelled
        assert not hold.is_set()
        assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["outcome"]["type"] == "cancelled", rest[-3:]
    finally:
        hold.set()


# -- finding 4: another principal's (threadId, runId) -------------------------------------------------

def test_another_principals_run_ids_are_refused(server: Server, sim: SimProvider) -> None:
    tag = f"o{uuid.uuid4().hex[:8]}"
    thread_id, run_id, hold, live = _start(server, sim, tag)
    try:
        last = _first_three(live)[-1][0]
        live.close()
        _logged(server, thread_id, run_id)
        body = {"threadId": thread_id, "runId": run_id, "tools": [], "state": None, "context": [],
                "forwardedProps": None, "messages": [{"id": "u-bob", "role": "user", "content": f"{tag}| mine now"}]}
        # 409 without a store (the run id is alice's), 404 with one (so is the thread)
        with requests.post(server.url + "/", json=body, headers=BOB, timeout=60) as taken:
            assert taken.status_code in (404, 409) and "RUN_STARTED" not in taken.text, taken.text
        with requests.get(_resume_url(server, thread_id, run_id), headers={**BOB, "Last-Event-ID": last},
                          timeout=60) as read:
            assert read.status_code == 404, read.text
        # alice's log is hers still: the rest of her run, once, in order
        with requests.get(_resume_url(server, thread_id, run_id), headers={**ALICE, "Last-Event-ID": last},
                          stream=True, timeout=60) as mine:
            assert mine.status_code == 200, mine.text
            hold.set()
            rest = list(_events(mine))
        seqs = [int(i.rsplit(":", 1)[1]) for i, _ in rest]
        assert seqs == list(range(4, 4 + len(rest)))
        assert "".join(e["delta"] for _, e in rest if e["type"] == "TEXT_MESSAGE_CONTENT") == "echo: hi there"
        # and once it has ended, its ids are still refused to bob
        with requests.post(server.url + "/", json=body, headers=BOB, timeout=60) as later:
            assert later.status_code in (404, 409), later.text
    finally:
        hold.set()


# -- finding 8: the memory event log's caps -------------------------------------------------------------

def _resumed_bytes(srv: Server, thread_id: str, run_id: str, headers: dict[str, str]) -> int | None:
    """The SSE data bytes the log holds of a run (``None``: it answers 404 or 410)."""
    with requests.get(_resume_url(srv, thread_id, run_id), headers=headers, timeout=60) as resp:
        if resp.status_code in (404, 410):
            return None
        assert resp.status_code == 200, resp.text
        return sum(len(line) + 1 for line in resp.content.split(b"\n")[:-1] if not line.startswith(b"id: ")) + 1


def test_the_memory_event_log_stays_within_its_caps(server: Server, sim: SimProvider) -> None:
    if server.store is not None:
        pytest.skip("the in-memory event log: a server without a SQL store")
    big = "x" * 150_000  # each run logs ~300 kB: its echo in two deltas, JSON-escaped
    bobs = []
    for i in range(2):
        c = Client(server.url, f"b{i}{uuid.uuid4().hex[:6]}", full=False, token="token-bob")
        run = c.say(big)
        bobs.append((c.thread_id, run[0]["runId"]))
    alices = []
    for i in range(24):
        c = Client(server.url, f"a{i}{uuid.uuid4().hex[:6]}", full=False, token="token-alice")
        run = c.say(big)
        alices.append((c.thread_id, run[0]["runId"]))
    kept = [_resumed_bytes(server, t, r, ALICE) for t, r in alices]
    assert sum(k or 0 for k in kept) <= LOG_CAP, kept
    assert kept[0] is None and kept[-1] is not None, kept  # the oldest ended runs went first
    first_kept = next(i for i, k in enumerate(kept) if k is not None)
    assert all(k is not None for k in kept[first_kept:]), kept
    # alice's flood passed her own cap, not the server's: bob's runs are kept
    assert all(_resumed_bytes(server, t, r, BOB) for t, r in bobs)


# -- findings 11 and 12: Last-Event-ID digits, one answer for another's and none --------------------------

@pytest.mark.parametrize("seq", ["²", "٣", "1" * 13, "-1", "", " 1"])
def test_last_event_id_takes_ascii_digits_only(server: Server, seq: str) -> None:
    url = _resume_url(server, "thread-x", "run-x")
    # requests sends header values as Latin-1: "²" as is, the Arabic-Indic digit UTF-8-encoded
    value = f"run-x:{seq}".encode() if not seq.isascii() and seq != "²" else f"run-x:{seq}"
    with requests.get(url, headers={**ALICE, "Last-Event-ID": value}, timeout=60) as resp:  # type: ignore[dict-item]
        assert resp.status_code == 400, (seq, resp.status_code, resp.text)
    with requests.get(url, params={"lastEventId": f"run-x:{seq}"}, headers=ALICE, timeout=60) as resp:
        assert resp.status_code == 400, (seq, resp.status_code, resp.text)


def test_another_principals_run_is_answered_as_none(server: Server, sim: SimProvider) -> None:
    tag = f"n{uuid.uuid4().hex[:8]}"
    thread_id, run_id, hold, live = _start(server, sim, tag)
    try:
        last = _first_three(live)[-1][0]
        _logged(server, thread_id, run_id)
        seq = last.rsplit(":", 1)[1]

        def answer(thread: str, run: str) -> tuple[int, str]:
            with requests.get(_resume_url(server, thread, run), headers={**BOB, "Last-Event-ID": f"{run}:{seq}"},
                              timeout=60) as resp:
                return resp.status_code, resp.text.replace(thread, "T").replace(run, "R")

        other = answer(thread_id, run_id)
        assert other[0] == 404
        assert other == answer(thread_id, "run-none")  # alice's thread, no such run
        assert other == answer(f"thread-none-{tag}", run_id)  # no such thread

        chat_id = f"chat-{tag}"
        ui = {"id": chat_id, "trigger": "submit-message",
              "messages": [{"id": f"u-{tag}-ui", "role": "user", "parts": [{"type": "text", "text": f"{tag}| hi"}]}]}
        with requests.post(f"{server.url}/api/chat", json=ui, headers=ALICE, stream=True, timeout=60) as chat:
            assert chat.status_code == 200
            next(sseclient.SSEClient(chat).events())
            if server.store is not None:
                run_log = run_log_of(open_store(server.store))
                while run_log.latest(chat_id, "ui", "alice") is None:
                    time.sleep(0.02)
            with requests.get(f"{server.url}/api/chat/{chat_id}/stream", headers=ALICE, timeout=60,
                              stream=True) as own:
                assert own.status_code == 200  # alice's chat is streaming
            for chat_of in (chat_id, f"chat-none-{tag}"):
                with requests.get(f"{server.url}/api/chat/{chat_of}/stream", headers=BOB, timeout=60) as resp:
                    assert (resp.status_code, resp.content) == (204, b""), chat_of
    finally:
        hold.set()
        live.close()


def test_the_memory_log_refuses_other_owners_and_drops_the_oldest_ended_runs_first() -> None:
    from hookstream_server.runlog import MemoryRunLog

    log = MemoryRunLog(total_bytes=300, principal_bytes=200)
    assert log.start("t", "r", "alice", "agui", 1e12)
    assert not log.start("t", "r", "bob", "agui", 1e12)  # alice's ids
    assert not log.start("t", "r", "alice", "agui", 1e12)  # her run is still going
    log.append("t", "r", 1, b"a" * 100)
    log.update("t", "r", ended=True, truncated=False, expires_at=1e12)
    assert not log.start("t", "r", "bob", "agui", 1e12)  # logged for alice, ended or not
    assert log.latest("t", "agui", "bob") is None and log.latest("t", "agui", "alice") is not None
    assert log.start("t", "r2", "alice", "agui", 1e12)
    log.append("t", "r2", 1, b"b" * 150)  # past alice's 200: her oldest ended run goes
    assert log.read("t", "r", 0) is None and log.kept_bytes_of("alice") == 150
    assert log.start("u", "r", "bob", "agui", 1e12)
    log.append("u", "r", 1, b"c" * 100)
    log.append("u", "r", 2, b"c" * 100)  # past the 300 in all, only running runs left: no longer logged
    info, frames = log.read("u", "r", 0)  # type: ignore[misc]
    assert info.truncated and len(frames) == 1 and log.kept_bytes() == 250
    log.update("u", "r", ended=True, truncated=False, expires_at=1e12)
    assert log.read("u", "r", 0)[0].truncated  # type: ignore[index]  # stays truncated
