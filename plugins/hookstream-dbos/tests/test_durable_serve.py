"""``hookstream serve --durable`` with real DBOS, real gunicorn (``--workers 2 --threads 4``), a SQLite
store and a loopback model server playing the scripted three-step tool loop (tool_a, tool_b, the
answer): the worker that streams a run is SIGKILLed while tool_b runs; DBOS recovers the run in a live
worker; the client that reconnects to the resume route with ``Last-Event-ID`` gets the rest: every
event once, the model server saw each request once, tool_a ran once, the run ends with the scripted
answer. The same server without ``--durable`` streams the same run unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
if sys.platform == "win32":
    pytest.skip("gunicorn runs on Unix only", allow_module_level=True)

from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.faults import ChunkWriter
from hookstream.testing.provider_bodies import provider_stream
from test_durable_run import ANSWER, db_url, scripted_bodies  # noqa: F401  (db_url: the fixture)

HERE = Path(__file__).resolve().parent
WAIT = 120.0  # seconds: a bound on a loaded machine, never a timing assertion


def scripted_server() -> LoopbackServer:
    """The three model calls, each tool call with an id of its own (a store keeps calls by id)."""
    bodies = scripted_bodies()
    bodies[0] = [e.replace(b"call_fault1", b"call_a") for e in bodies[0]]
    bodies[1] = [e.replace(b"call_fault1", b"call_b") for e in bodies[1]]
    return LoopbackServer([Response(pieces=events) for events in bodies]).start()


@contextlib.contextmanager
def serve(model_url: str, store: str, folder: Path, *extra: str, hold: bool = True, workers: int = 2,
          pid: list[int] | None = None) -> Iterator[str]:
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "DURABLE_KIT_DIR": str(folder),
           **({"DURABLE_KIT_HOLD": "1"} if hold else {}),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "hookstream", "serve", "--workers", str(workers), "--threads", "4", "--store", store,
           "--model", "openai:gpt-4o-mini", "--base-url", model_url + "/v1", "--port", "0",
           "--tool", "durable_served:tool_a", "--tool", "durable_served:tool_b", *extra]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        if pid is not None:
            pid.append(proc.pid)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "listening on" not in line:
                err.seek(0)
                raise AssertionError(f"serve did not start: {line}{err.read()[-3000:]}")
            yield line.split("listening on ", 1)[1].split()[0].rstrip("/")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            err.seek(0)
            log = err.read()
            if "Traceback" in log:
                print(log[-6000:])


def _frames(resp: requests.Response, into: list[tuple[str, dict[str, Any]]]) -> None:
    """Append ``(id, event)`` of each SSE frame read from ``resp`` until it ends or breaks."""
    with contextlib.suppress(requests.RequestException):
        ident = ""
        for line in resp.iter_lines():
            if line.startswith(b"id: "):
                ident = line[4:].decode()
            elif line.startswith(b"data: "):
                into.append((ident, json.loads(line[6:])))


def _until(what: str, check: Callable[[], bool], why: str = "") -> None:
    """Look at ``check`` every 50 ms until it holds (a barrier on what another process did); the test
    fails, saying ``what`` never happened (and ``why``), after :data:`WAIT` seconds."""
    pause = threading.Event()
    for _ in range(int(WAIT / 0.05)):
        if check():
            return
        pause.wait(0.05)
    pytest.fail(f"{what} never happened{why}")


def _wait_for(path: Path, what: str) -> None:
    _until(what, path.exists, f" ({path} missing)")


def _run_input(thread_id: str, run_id: str) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": run_id, "tools": [], "context": [], "state": None,
            "forwardedProps": None, "messages": [{"id": "u1", "role": "user", "content": "Run a then b."}]}


def _post_run(base: str, thread_id: str, run_id: str,
              into: list[tuple[str, dict[str, Any]]]) -> tuple[requests.Response, threading.Thread]:
    """POST the run; a thread reads its frames into ``into`` (the caller closes the response)."""
    resp = requests.post(base + "/", json=_run_input(thread_id, run_id), stream=True, timeout=WAIT,
                         headers={"Accept": "text/event-stream"})
    reader = threading.Thread(target=_frames, args=(resp, into))
    reader.start()
    return resp, reader


TOKENS = {"alice": "alice-token-" + "a" * 20, "bob": "bob-token-" + "b" * 20}  # two principals' bearer tokens


def run_folders(tmp: Path) -> tuple[Path, Path]:
    """A served test's ``run`` folder (the tools' marks) and its ``--auth-tokens`` file of :data:`TOKENS`."""
    folder = tmp / "run"
    folder.mkdir()
    tokens = tmp / "tokens.txt"
    tokens.write_text("".join(f"{t} {who}\n" for who, t in TOKENS.items()), "utf-8")
    return folder, tokens


def thread_store(durable_db: str, tmp_path: Path) -> str:
    """The served threads' store: the durable database's own PostgreSQL, else a SQLite file of the test."""
    return durable_db if durable_db.startswith("postgres") else f"sqlite:///{tmp_path / 'threads.db'}"


def _stopped_in_tool_b(base: str, folder: Path, thread_id: str, run_id: str,
                       stop: Callable[[int], None]) -> list[tuple[str, dict[str, Any]]]:
    """POST the run, wait until ``tool_b`` runs, ``stop(pid of the worker running it)``; once the client's
    stream has ended, unfinished, the ``(id, event)`` pairs it got."""
    before: list[tuple[str, dict[str, Any]]] = []
    resp, reader = _post_run(base, thread_id, run_id, before)
    assert resp.status_code == 200, resp.text
    _wait_for(folder / "b-running", "tool_b's first run")
    stop(int((folder / "b-running").read_text("utf-8")))
    reader.join(WAIT)
    assert not reader.is_alive(), "the stopped worker's stream never ended"
    resp.close()
    assert before and before[-1][1]["type"] != "RUN_FINISHED", before
    return before


@contextlib.contextmanager
def _resumed(base: str, thread_id: str, run_id: str, last_id: str) -> Iterator[requests.Response]:
    """The resume route's stream of the run after ``last_id`` (``Last-Event-ID``), its status checked."""
    url = f"{base}/agui/threads/{thread_id}/runs/{run_id}/events"
    with requests.get(url, headers={"Last-Event-ID": last_id, "Accept": "text/event-stream"},
                      stream=True, timeout=WAIT) as again:
        assert again.status_code == 200, again.text
        yield again


def _resume(base: str, thread_id: str, run_id: str, last_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every ``(id, event)`` the resume route sends after ``last_id``."""
    after: list[tuple[str, dict[str, Any]]] = []
    with _resumed(base, thread_id, run_id, last_id) as again:
        _frames(again, after)
    return after


def _assert_one_run(got: list[tuple[str, dict[str, Any]]], run_id: str) -> None:
    ids = [i for i, _ in got]
    assert ids == [f"{run_id}:{n}" for n in range(1, len(got) + 1)], ids  # every event once, in order
    events = [e for _, e in got]
    check_events(events, "run")
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"]["type"] == "success", events[-1]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.endswith(ANSWER), text
    results = [(e["toolCallId"], e["content"]) for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == [("call_a", "a1"), ("call_b", "b2")], results
    # tool_a's progress, once and in order: a recovered run streams it again from the journal.
    progress = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "progress"]
    assert progress == [{"done": 1, "of": 2}, {"done": 2, "of": 2}], progress


@pytest.fixture
def durable_db(db_url: str) -> str:  # noqa: F811
    """The durable-run database, SQLite or PostgreSQL (``test_durable_run``'s ``db_url``)."""
    return db_url


def test_a_killed_workers_run_is_recovered_and_the_client_gets_every_event_once(durable_db: str,
                                                                                 tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    store = thread_store(durable_db, tmp_path)
    thread_id, run_id = "thread-1", f"run-{uuid.uuid4().hex}"
    with scripted_server() as model, serve(model.url, store, folder, "--durable", "--durable-db", durable_db,
                                           "--durable-name", "test") as base:
        # SIGKILL of the worker that streams the run
        before = _stopped_in_tool_b(base, folder, thread_id, run_id, lambda pid: os.kill(pid, signal.SIGKILL))
        assert len(model.requests) == 2  # tool_a's call and tool_b's call; tool_b was running

        after = _resume(base, thread_id, run_id, before[-1][0])
        _assert_one_run(before + after, run_id)
        # The replayed steps (tool_a's progress too) equal the logged frames: no divergence repair (no
        # message ended early and sent again under a new id).
        assert [e["type"] for _, e in before + after].count("TEXT_MESSAGE_START") == 3
        # Each model request once: the recovered run sent only the third (the answer to both results).
        assert len(model.requests) == 3
        assert [len(r.json()["messages"]) for r in model.requests] == [1, 3, 5]
        # tool_a ran once; tool_b, in flight at the kill, ran again and knew it (attempt 2).
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1", "tool_b 2"]

        # `hookstream runs list` shows the served run, finished.
        from hookstream_dbos import list_runs
        from hookstream_dbos.serve import served_id

        [info] = list_runs(durable_db, run_id=served_id(thread_id, run_id))
        assert info.state == "finished" and info.text == ANSWER and info.model == "openai:gpt-4o-mini"

        # The thread keeps the run's messages once, as for a live run.
        from hookstream.stores import open_store

        stored = open_store(store).load(thread_id)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_a_worker_stopped_on_purpose_leaves_its_run_to_its_replacement(durable_db: str, tmp_path: Path) -> None:
    """A graceful stop (gunicorn's SIGTERM of a worker, as a deploy or ``--max-requests`` does) while a run
    is in a blocked tool: the worker exits without cancelling the run, its replacement (the same slot)
    recovers it, and the client that reconnects gets every event once."""
    folder = tmp_path / "run"
    folder.mkdir()
    store = thread_store(durable_db, tmp_path)
    thread_id, run_id = "thread-5", f"run-{uuid.uuid4().hex}"
    with scripted_server() as model, serve(model.url, store, folder, "--durable", "--durable-db", durable_db,
                                           "--durable-name", "stop") as base:
        # a graceful stop of the worker that streams the run
        before = _stopped_in_tool_b(base, folder, thread_id, run_id, lambda pid: os.kill(pid, signal.SIGTERM))

        after = _resume(base, thread_id, run_id, before[-1][0])
        _assert_one_run(before + after, run_id)
        assert len(model.requests) == 3
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1", "tool_b 2"]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_one_process_server_killed_then_started_again_recovers_its_run(stop: signal.Signals, tmp_path: Path) -> None:
    """``--workers 1`` (waitress) is slot 0: the same command started again after a SIGKILL, or after a
    Ctrl-C (a stop on purpose: the run is left pending, not cancelled), recovers the run, and the client
    reconnects to the new server's resume route."""
    folder = tmp_path / "run"
    folder.mkdir()
    store, db = f"sqlite:///{tmp_path / 'threads.db'}", f"sqlite:///{tmp_path / 'durable.sqlite'}"
    thread_id, run_id = "thread-4", f"run-{uuid.uuid4().hex}"
    with scripted_server() as model:
        before: list[tuple[str, dict[str, Any]]] = []
        pid: list[int] = []
        with serve(model.url, store, folder, "--durable", "--durable-db", db, workers=1, pid=pid) as base:
            resp, reader = _post_run(base, thread_id, run_id, before)
            _wait_for(folder / "b-running", "tool_b's first run")
            os.kill(pid[0], stop)
            reader.join(WAIT)
            resp.close()
        assert before and before[-1][1]["type"] != "RUN_FINISHED"
        with serve(model.url, store, folder, "--durable", "--durable-db", db, workers=1) as base:
            after = _resume(base, thread_id, run_id, before[-1][0])
        _assert_one_run(before + after, run_id)
        assert len(model.requests) == 3
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1", "tool_b 2"]


def test_a_model_call_in_flight_at_the_kill_that_says_something_else_again_leaves_a_valid_run(
        tmp_path: Path) -> None:
    """The worker dies while the model streams step 2's text; the recovered run sends that call again and
    the model says something else: the client reads the first attempt's text ended, then the second
    attempt as a new message, one valid AG-UI run, each event once."""
    folder = tmp_path / "run"
    folder.mkdir()
    bodies = scripted_bodies()
    first = [e.replace(b"call_fault1", b"call_a") for e in bodies[0]]
    again = [e.replace(b"call_fault1", b"call_b") for e in
             provider_stream("openai", text="Then b. ", reasoning="", tool_name="tool_b", tool_args={"n": 2}).events]
    sent_part, release = threading.Event(), threading.Event()

    def partial(wfile: Any, sock: Any) -> None:
        writer = ChunkWriter(wfile, sock, release)
        writer.chunks(bodies[1][:2])  # the text has begun ("No"...), no tool call yet
        sent_part.set()
        release.wait(WAIT)  # until the worker reading it is dead
        writer.drop()

    responses = [Response(pieces=first), Response(writer=partial), Response(pieces=again),
                 Response(pieces=bodies[2])]
    thread_id, run_id = "thread-3", f"run-{uuid.uuid4().hex}"
    with LoopbackServer(responses) as model, serve(model.url, f"sqlite:///{tmp_path / 'threads.db'}", folder,
                                                   "--durable", "--durable-db",
                                                   f"sqlite:///{tmp_path / 'durable.sqlite'}", hold=False) as base:
        before: list[tuple[str, dict[str, Any]]] = []
        resp, reader = _post_run(base, thread_id, run_id, before)
        assert resp.status_code == 200, resp.text
        assert sent_part.wait(WAIT), "step 2's model call never started"
        waited = threading.Event()
        for _ in range(int(WAIT / 0.05)):  # until the client holds the first attempt's text
            types = [e["type"] if e.get("stepName") != "step-2" else "STEP-2" for _, e in list(before)]
            if "STEP-2" in types and "TEXT_MESSAGE_CONTENT" in types[types.index("STEP-2"):]:
                break
            waited.wait(0.05)
        else:
            pytest.fail(f"the client never got step 2's text: {before}")
        os.kill(int((folder / "worker.pid").read_text("utf-8")), signal.SIGKILL)
        release.set()
        reader.join(WAIT)
        assert not reader.is_alive(), "the killed worker's stream never ended"
        resp.close()

        after = _resume(base, thread_id, run_id, before[-1][0])
        got = before + after
        _assert_one_run(got, run_id)
        events = [e for _, e in got]
        texts: dict[str, str] = {}
        for e in events:
            if e["type"] == "TEXT_MESSAGE_CONTENT":
                texts[e["messageId"]] = texts.get(e["messageId"], "") + e["delta"]
        step2 = list(texts.items())[1:3]
        # The first attempt's text as the client saw it, ended; the second attempt under a new id.
        assert step2[0][1] == "No" and step2[1][1] == "Then b. " and step2[1][0].startswith(step2[0][0] + "-"), texts
        # The in-flight call was sent again (at least once); the completed ones once; each tool once.
        assert len(model.requests) == 4
        assert model.requests[1].json() == model.requests[2].json()
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1"]


def test_without_durable_a_served_run_is_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    thread_id, run_id = "thread-2", f"run-{uuid.uuid4().hex}"
    with scripted_server() as model, serve(model.url, f"sqlite:///{tmp_path / 'threads.db'}", folder,
                                           hold=False) as base:
        got: list[tuple[str, dict[str, Any]]] = []
        with requests.post(base + "/", json=_run_input(thread_id, run_id), stream=True, timeout=WAIT,
                           headers={"Accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200, resp.text
            _frames(resp, got)
    _assert_one_run(got, run_id)
    # The adapter's own message ids: no durable plugin touched the run.
    starts = [e["messageId"] for _, e in got if e["type"] == "TEXT_MESSAGE_START"]
    assert starts and all(m.startswith("msg_") for m in starts), starts
    assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1"]
    assert len(model.requests) == 3


def test_durable_needs_a_sql_store(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "hookstream", "serve", "--model", "openai:m", "--durable"],
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2 and "--durable needs --store" in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "hookstream", "serve", "--model", "openai:m", "--durable-db",
                           f"sqlite:///{tmp_path / 'd.sqlite'}"], capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2 and "need --durable" in done.stderr, done.stderr
