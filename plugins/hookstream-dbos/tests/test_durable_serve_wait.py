"""``hookstream serve --durable`` with approvals (real DBOS, real gunicorn ``--workers 2``, a loopback model
server; SQLite, then PostgreSQL for the store and DBOS): a run waits for ``pay``'s approval (its workflow
detached: no worker holds the wait); the worker that streamed it is SIGKILLed (or not); the POST that
answers (the same route as ever, ``resume``) continues the same durable run in the worker it reached,
and its client reads it through the run event log. A second answer is refused (409).
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")

from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import final_stream, provider_stream
from test_durable_run import db_url  # noqa: F401  (a fixture durable_db takes)
from test_durable_serve import WAIT, _frames, _resume, _wait_for, durable_db, serve, thread_store  # noqa: F401  (the db fixture)

ANSWER = "Paid 5 after a1."


def _post(base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    got: list[tuple[str, dict[str, Any]]] = []
    with requests.post(base + "/", json=body, stream=True, timeout=WAIT,
                       headers={"Accept": "text/event-stream"}) as resp:
        assert resp.status_code == 200, resp.text
        _frames(resp, got)
    return [e for _, e in got]


def _body(thread_id: str, run_id: str, messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": run_id, "tools": [], "context": [], "state": None,
            "forwardedProps": None, "messages": messages, **more}


@pytest.mark.parametrize("kill", [True, False], ids=["holder-killed", "holder-alive"])
def test_a_served_wait_survives_its_worker_and_the_answer_continues_the_same_durable_run(
        durable_db: str, kill: bool, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "run"
    folder.mkdir()
    bodies = [
        provider_stream("openai", text="First a. ", reasoning="", tool_name="tool_a", tool_args={"n": 1}).events,
        provider_stream("openai", text="Now pay. ", reasoning="", tool_name="pay", tool_args={"amount": 5}).events,
        final_stream("openai", text=ANSWER).events,
    ]
    bodies[0] = [e.replace(b"call_fault1", b"call_a") for e in bodies[0]]
    bodies[1] = [e.replace(b"call_fault1", b"call_p") for e in bodies[1]]
    store = thread_store(durable_db, tmp_path)
    thread_id, run_1, run_2 = "thread-w", f"run-{uuid.uuid4().hex}", f"run-{uuid.uuid4().hex}"
    with LoopbackServer([Response(pieces=b) for b in bodies]) as model, \
            serve(model.url, store, folder, "--tool", "durable_served:pay",
                  "--durable", "--durable-db", durable_db, "--durable-name", "wait", hold=False) as base:
        first = _post(base, _body(thread_id, run_1, [{"id": "u1", "role": "user", "content": "Run a, then pay 5."}]))
        end = first[-1]
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
        [interrupt] = end["outcome"]["interrupts"]

        from hookstream_dbos import list_runs
        from hookstream_dbos.serve import served_id

        durable_id = served_id(thread_id, run_1)
        assert list_runs(durable_db, run_id=durable_id)[0].state == "waiting"
        _wait_for(folder / "worker.pid", "tool_a's run")
        holder = int((folder / "worker.pid").read_text("utf-8"))
        if kill:
            os.kill(holder, signal.SIGKILL)  # the worker that streamed the waiting run

        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
        second = _post(base, _body(thread_id, run_2, [], resume=resume))
        assert second[-1]["type"] == "RUN_FINISHED" and second[-1]["outcome"]["type"] == "success", second[-1]
        results = [(e["toolCallId"], e["content"]) for e in second if e["type"] == "TOOL_CALL_RESULT"]
        assert results == [("call_p", "paid 5")], results
        text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == ANSWER, text
        # Each model request once, each tool once; one durable run, now finished.
        assert len(model.requests) == 3
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "pay 1"]
        if kill:
            assert int((folder / "pay.pid").read_text("utf-8")) != holder  # the answer went on in a live worker
        info = list_runs(durable_db, run_id=durable_id)[0]
        assert (info.state, info.steps, info.text) == ("finished", 5, ANSWER)
        assert not list_runs(durable_db, run_id=served_id(thread_id, run_2))  # not a durable run of its own

        late = requests.post(base + "/", json=_body(thread_id, f"run-{uuid.uuid4().hex}", [], resume=resume),
                             timeout=WAIT, headers={"Accept": "text/event-stream"})
        assert late.status_code == 409, late.text
        assert len(model.requests) == 3


def test_a_worker_killed_between_journaling_its_wait_and_detaching_is_answered_once(
        durable_db: str, tmp_path: Path) -> None:  # noqa: F811
    """The worker that streamed the run dies after it journaled its wait, before it detached (the workflow
    still PENDING under its slot; its client read the approval request, not yet RUN_FINISHED; the thread
    in the store without the run's tool call). A live worker recovers the waiting workflow, ends the
    interrupted run again from the journal (its messages saved, its log ended) and detaches it; the
    answer, which waits for the detach (one execution of the workflow at a time), continues the same
    durable run from the journaled conversation: the approved tool runs once, each model request is
    sent once, and the first run's client reads the rest of its run on the resume route, each event once."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "hold-detach").write_text("", "utf-8")
    asking = provider_stream("openai", text="Now pay. ", reasoning="", tool_name="pay", tool_args={"amount": 5})
    bodies = [asking.events, final_stream("openai", text=ANSWER).events]
    bodies[0] = [e.replace(b"call_fault1", b"call_p") for e in bodies[0]]
    db = durable_db
    store = thread_store(durable_db, tmp_path)
    thread_id, run_1, run_2 = "thread-k", f"run-{uuid.uuid4().hex}", f"run-{uuid.uuid4().hex}"
    with LoopbackServer([Response(pieces=b) for b in bodies]) as model, \
            serve(model.url, store, folder, "--tool", "durable_detach_hold:pay",
                  "--durable", "--durable-db", db, "--durable-name", "window", hold=False) as base:
        got: list[tuple[str, dict[str, Any]]] = []
        ask = [{"id": "u1", "role": "user", "content": "Pay 5."}]
        with requests.post(base + "/", json=_body(thread_id, run_1, ask), stream=True, timeout=WAIT,
                           headers={"Accept": "text/event-stream"}) as resp:
            reader = threading.Thread(target=_frames, args=(resp, got))
            reader.start()
            _wait_for(folder / "detach-held", "the wait journaled, the detach held")
            (folder / "hold-detach").unlink()
            os.kill(int((folder / "detach-held").read_text("utf-8")), signal.SIGKILL)
            reader.join(WAIT)
        # Killed before its RUN_FINISHED: the client answers the approval it was asked for.
        [asked] = [e["value"] for _, e in got if e["type"] == "CUSTOM" and e["name"] == "approval-requested"]
        interrupt = {"id": asked["approvalId"]}

        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
        second = _post(base, _body(thread_id, run_2, [], resume=resume))
        assert second[-1]["type"] == "RUN_FINISHED" and second[-1]["outcome"]["type"] == "success", second[-1]
        assert [(e["toolCallId"], e["content"]) for e in second if e["type"] == "TOOL_CALL_RESULT"] == \
            [("call_p", "paid 5")]
        assert len(model.requests) == 2
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["pay 1"]
        # The answering request carries the call and its result: the conversation went on whole.
        sent = model.requests[1].json()["messages"]
        assert [c["id"] for m in sent for c in m.get("tool_calls") or ()] == ["call_p"], sent
        assert [m["content"] for m in sent if m["role"] == "tool"] == ["paid 5"], sent
        # The first run's client reconnects: the rest of its interrupted run, each event once.
        rest = _resume(base, thread_id, run_1, got[-1][0])
        whole = [*got, *rest]
        assert [i for i, _ in whole] == [f"{run_1}:{n}" for n in range(1, len(whole) + 1)], whole
        end = whole[-1][1]
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
        assert [i["id"] for i in end["outcome"]["interrupts"]] == [interrupt["id"]], end
        # The thread in the store: the question, the call, its result, the answer (each once, in order).
        from hookstream.stores import open_store

        kept = open_store(store).load(thread_id)
        assert [(m.role, [c.id for c in m.tool_calls], [r.tool_call_id for r in m.tool_results]) for m in kept] == [
            ("user", [], []), ("assistant", ["call_p"], []), ("tool", [], ["call_p"]), ("assistant", [], [])], kept

        from hookstream_dbos import list_runs
        from hookstream_dbos.serve import served_id

        info = list_runs(db, run_id=served_id(thread_id, run_1))[0]
        assert (info.state, info.text) == ("finished", ANSWER)
