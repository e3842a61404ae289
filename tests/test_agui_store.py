"""A scaled-out AG-UI server: `hookstream serve --workers 4 --store URL` on SQLite and on a real
PostgreSQL, serving a simulated OpenAI provider (tests/store_kit.py).

- Clients that POST the whole history and clients that POST only their new message make the model
  receive the same requests, turn after turn, approvals included.
- The store holds every message once, in order, whichever worker served each turn.
- An approval interrupt on one worker process is resumed on another (two servers sharing one store, so
  the processes are certainly different).
"""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
if sys.platform == "win32":
    pytest.skip("gunicorn runs on Unix only", allow_module_level=True)

from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream import events as E
from hookstream._stores.codec import dumps_message, loads_message
from hookstream.server import make_app
from hookstream.stores import InMemoryStore, PostgresStore, open_store
from hookstream.testing import run_cli
from hookstream_server.threads import assign_ids, merge
from store_kit import (
    Client,
    SimProvider,
    assert_stored_once_in_order,
    converse,
    postgres,
    serve_workers,
    transfer,
    whoami,
)

# One conversation: a tool call, plain text, an approval interrupt then its resume, another tool call.
SCRIPT = ["look weather", "hello", "pay 7", "look news"]
# What the store must hold for SCRIPT, in order (the interrupted turn's assistant message is stored
# with its pending call, then the results: the one that ran at once, then the approved one).
EXPECTED_ROLES = ["user", "assistant", "tool", "assistant",
                  "user", "assistant",
                  "user", "assistant", "tool", "tool", "assistant",
                  "user", "assistant", "tool", "assistant"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "sqlite":
        with tempfile.TemporaryDirectory() as where:
            yield f"sqlite:///{where}/threads.db"
    else:
        with postgres() as url:
            yield url


def test_full_history_and_new_message_clients_give_the_model_the_same_requests(store_url: str) -> None:
    with SimProvider() as sim, serve_workers(store_url, sim.url, workers=4) as base:
        clients = [Client(base, f"{'full' if full else 'new'}{k}", full) for k in range(3) for full in (True, False)]
        # Concurrent conversations, so turns land on different workers.
        with ThreadPoolExecutor(len(clients)) as pool:
            for done in [pool.submit(converse, c, SCRIPT) for c in clients]:
                done.result()
        for c in clients:
            assert c.results("sent 7"), f"{c.tag}: the approved transfer did not run"
        reference = sim.requests_of("full0")
        assert len(reference) == 7  # 2 + 1 + (1 interrupted + 1 resumed) + 2 model calls
        for c in clients:
            assert sim.requests_of(c.tag) == reference, c.tag
            assert_stored_once_in_order(store_url, c, SCRIPT, EXPECTED_ROLES)


@pytest.mark.parametrize("full", [True, False], ids=["full-history", "new-message"])
def test_an_interrupt_on_one_worker_resumes_on_another(store_url: str, full: bool) -> None:
    with SimProvider() as sim, serve_workers(store_url, sim.url, workers=2) as first, \
            serve_workers(store_url, sim.url, workers=2) as second:
        client = Client(first, f"move{int(full)}", full)
        client.say("look weather")
        client.say("hello")
        client.say("pay 7")
        assert client.interrupts and client.interrupts[0]["reason"] == "tool_approval"
        (interrupted_pid,) = client.results("pid")
        client.base = second
        client.approve()
        (sent,) = client.results("sent 7")
        assert sent.rsplit(" ", 1)[1] != interrupted_pid.rsplit(" ", 1)[1], "resumed in the same process"
        client.say("look news")
        assert_stored_once_in_order(store_url, client, SCRIPT, EXPECTED_ROLES)


CONFIRM = {"name": "confirm", "description": "Ask the user to confirm.",
           "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}


@pytest.mark.parametrize("full", [True, False], ids=["full-history", "new-message"])
def test_a_client_tool_answer_in_a_later_post_finds_its_stored_call(tmp_path: Path, full: bool) -> None:
    # One process (waitress, --workers 1) with a store: the tool message of the next POST answers a call
    # the client need not send again.
    store_url = f"sqlite:///{tmp_path}/threads.db"
    with SimProvider() as sim, serve_workers(store_url, sim.url, workers=1) as base:
        client = Client(base, f"ask{int(full)}", full, tools=[CONFIRM])
        events = client.say("ask ready?")
        (call,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
        assert call["toolCallName"] == "confirm"
        done = client.answer(call["toolCallId"], "yes")
        assert [e["delta"] for e in done if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["noted", ": yes"]
    stored = open_store(store_url).load(client.thread_id)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[2].tool_results[0].output == "yes"


def test_merge_recognises_messages_by_id_by_tool_call_and_by_answered_call() -> None:
    call = ToolCallPart("c1", "lookup", {"q": "x"})
    history = [Message("user", [TextPart("hi")], id="u1"), Message("assistant", [call], id="a1"),
               Message("tool", [ToolResultPart("c1", "lookup", "found")], id="t1")]
    echoed = [Message("user", [TextPart("hi")], id="u1"),
              Message("assistant", [call], id="client-side-id"),  # same call: same message
              Message("tool", [ToolResultPart("c1", "lookup", "found"), ToolResultPart("c2", "x", "new")]),
              Message("user", [TextPart("next")])]
    new = merge(history, echoed)
    assert [(m.role, [getattr(p, "tool_call_id", None) for p in m.parts]) for m in new] == [
        ("tool", ["c2"]), ("user", [None])]
    assert all(m.id for m in new)  # given fresh ids, so they are recognised next time
    assert merge([*history, *new], new) == []


class _DownStore:
    def load(self, thread_id: str) -> list[Message]:
        raise sqlite3.OperationalError("database is locked")

    def save(self, thread_id: str, messages: object) -> None:
        raise sqlite3.OperationalError("database is locked")


def test_a_failing_store_answers_503_not_a_traceback() -> None:
    app = make_app("openai:m", api_key="k", base_url="http://127.0.0.1:9/v1", store=_DownStore())
    body = json.dumps({"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]})
    status: list[str] = []
    out = b"".join(app({"REQUEST_METHOD": "POST", "PATH_INFO": "/", "CONTENT_LENGTH": str(len(body)),
                        "wsgi.input": io.BytesIO(body.encode())}, lambda s, h: status.append(s)))
    assert status == ["503 Service Unavailable"]
    assert json.loads(out)["error"]["message"] == "conversation store unavailable: OperationalError"


def test_a_runs_messages_take_the_ids_its_events_announced() -> None:
    events = [E.RunStarted("t", "r"),
              E.StepStarted("step-1"), E.ReasoningStart("r1"), E.ReasoningEnd("r1"), E.StepFinished("step-1"),
              E.StepStarted("step-2"), E.TextMessageStart("m2"), E.TextMessageEnd("m2"),
              E.ToolCallStart("c1", "lookup", parent_message_id="m2"), E.ToolCallEnd("c1"), E.StepFinished("step-2"),
              E.ToolCallResult("tr1", "c1", "found"),
              E.StepStarted("step-3"), E.TextMessageStart("m3"), E.TextMessageEnd("m3"), E.StepFinished("step-3")]
    produced = [Message("assistant", [ReasoningPart("hmm")]),
                Message("assistant", [TextPart("Looking. "), ToolCallPart("c1", "lookup", {})]),
                Message("tool", [ToolResultPart("c1", "lookup", "found")]),
                Message("assistant", [TextPart("Found.")]),
                Message("assistant", [TextPart("unexplained")])]
    assign_ids(produced, events)
    assert [m.id for m in produced[:4]] == ["r1", "m2", "tr1", "m3"]
    assert produced[4].id and produced[4].id.startswith("msg-")


def test_stored_messages_round_trip_with_file_bytes_as_base64() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    messages = [
        Message("user", [TextPart("see"), FilePart.from_bytes(png, filename="a.png")], id="u1"),
        Message("assistant", [ReasoningPart("think", {"anthropic": {"signature": "sig"}}),
                              ToolCallPart("c1", "lookup", {"q": "x"}, '{"q":"x"}')], id="a1"),
        Message("tool", [ToolResultPart("c1", "lookup", {"n": 1}, files=[FilePart.from_bytes(png)])], id="t1"),
    ]
    assert '"data":"iVBORw0KGgo' in dumps_message(messages[0])  # base64 of the PNG signature
    for m in messages:
        text = dumps_message(m)
        back = loads_message(text)
        assert back == m and back.id == m.id


def test_sqlite_store_saves_each_id_once(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    first, second = Message.user("one"), Message.user("two")
    first.id, second.id = "m1", "m2"
    store.save("t", [first])
    store.save("t", [first, second])
    store.save("t", [second])
    assert [m.id for m in store.load("t")] == ["m1", "m2"]
    assert store.load("other") == []


def test_unknown_store_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown store 'mysql'"):
        open_store("mysql://x")
    done = run_cli(["serve", "--model", "openai:m", "--workers", "2", "--store", "mysql://x"])
    assert done.exit_code == 2 and "--store: unknown store 'mysql'" in done.output
    done = run_cli(["serve", "--model", "openai:m", "--workers", "2", "--store", "memory:"])
    assert done.exit_code == 2 and "lives in one process" in done.output


class _SaveFailsAtRunEnd(InMemoryStore):
    """Keeps the request's messages, then fails the run's own save: the database refusing a connection
    ("too many clients") as the run ends."""

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        if any(m.role != "user" for m in messages):
            raise sqlite3.OperationalError("too many clients already")
        super().save(thread_id, messages)


def _post_events(app: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = json.dumps(body).encode()
    status: list[str] = []
    out = b"".join(app({"REQUEST_METHOD": "POST", "PATH_INFO": "/", "CONTENT_LENGTH": str(len(raw)),
                        "wsgi.input": io.BytesIO(raw)}, lambda s, h: status.append(s)))
    assert status == ["200 OK"], out
    return [json.loads(line[5:]) for line in out.split(b"\n") if line.startswith(b"data:")]


def test_a_run_whose_messages_were_not_saved_ends_with_run_error_not_an_interrupt() -> None:
    # Told "interrupted, approve this" while the thread holds no pending call, a client's approval would
    # resume nothing: the model would be asked again and interrupt again (the load test's failure).
    store = _SaveFailsAtRunEnd()
    with SimProvider() as sim:
        app = make_app("openai:sim", base_url=sim.url + "/v1", api_key="sim-key-not-secret", store=store,
                       tools=[whoami, transfer], max_steps=4)
        events = _post_events(app, {"threadId": "t1", "runId": "r1", "tools": [], "context": [], "state": None,
                                    "messages": [{"id": "u1", "role": "user", "content": "t1| pay 3"}]})
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    assert events[-1]["code"] == "store_unavailable"
    assert events[-1]["message"] == ("conversation store unavailable: OperationalError: the run's messages "
                                     "were not saved")
    assert [m.role for m in store.load("t1")] == ["user"]


def test_postgres_store_holds_a_connection_per_operation_at_once_not_per_thread() -> None:
    # A server's runs end on pool threads that stay alive between runs and save now and then; each
    # holding a connection for life made 4 workers pass PostgreSQL's max_connections under load (the
    # load test's failure: a run's messages not saved).
    psycopg = pytest.importorskip("psycopg")
    with postgres() as url:
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        done = threading.Event()
        workers: list[threading.Thread] = []
        try:
            for k in range(20):  # one save after another, each on a thread that then stays alive, idle
                saved = threading.Event()

                def save_then_idle(k: int = k, saved: threading.Event = saved) -> None:
                    store.save("t", [Message("user", [TextPart(f"m{k}")], id=f"m{k}")])
                    saved.set()
                    done.wait(120.0)  # 120 s only keeps a broken test from hanging

                workers.append(threading.Thread(target=save_then_idle))
                workers[-1].start()
                assert saved.wait(120.0)
            with psycopg.connect(url) as probe:
                row = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                    "AND pid <> pg_backend_pid()").fetchone()
        finally:
            done.set()
            for w in workers:
                w.join()
        assert row == (1,), f"{row} connections held by 20 idle threads that saved one after another"
        assert [m.id for m in store.load("t")] == [f"m{k}" for k in range(20)]
