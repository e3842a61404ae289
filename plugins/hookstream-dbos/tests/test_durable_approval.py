"""Approvals as durable waits, with real DBOS: a scripted loop (tool_a, then ``pay`` which needs approval,
then the answer) on a loopback server. The run ends waiting; its workflow journals the wait and detaches
(no thread waits for the answer); ``chat(..., resume=...)`` with the same id, in this process or another
one, sends the answer, resumes the workflow (it takes the answer with DBOS ``recv``) and is the next part
of the same durable run.

The cross-process tests SIGKILL a process whose run waits (``durable_approval_child.py``) on a
database of their own (SQLite; PostgreSQL from ``scripts/start-postgres``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import durable_kit
import pytest
from hookstream import chat, get_model, tool
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import final_stream, provider_stream
from hookstream_dbos import Durable, list_runs
from test_durable_run import BARRIER_TIMEOUT, _finish, db_url  # noqa: F401  (db_url: the SQLite/PostgreSQL fixture)
from test_durable_run import _child as durable_child

HERE = Path(__file__).resolve().parent
CHILD = HERE / "durable_approval_child.py"
ANSWER = "Paid 5 after a1."


def scripted_server() -> LoopbackServer:
    bodies = [
        provider_stream("openai", text="First a. ", reasoning="", tool_name="tool_a", tool_args={"n": 1}).events,
        provider_stream("openai", text="Now pay. ", reasoning="", tool_name="pay", tool_args={"amount": 5}).events,
        final_stream("openai", text=ANSWER).events,
    ]
    return LoopbackServer([Response(pieces=b) for b in bodies]).start()


def _child(server: LoopbackServer, run_id: str, db: str, folder: Path, *mode: str) -> subprocess.Popen[str]:
    return durable_child(server, run_id, db, folder, *mode, script=CHILD)


def _kill_at(proc: subprocess.Popen[str], barrier: Path) -> None:
    waited = threading.Event()
    for _ in range(int(BARRIER_TIMEOUT / 0.05)):
        if barrier.exists():
            break
        if proc.poll() is not None:
            pytest.fail(f"the process ended before {barrier.name}: {proc.communicate()[1][-3000:]}")
        waited.wait(0.05)
    else:
        pytest.fail(f"{barrier.name} never came")
    proc.kill()
    proc.communicate()


def _log(folder: Path) -> list[str]:
    return (folder / "tools.log").read_text("utf-8").splitlines()


def _state(db: str, run_id: str) -> str:
    return list_runs(db, run_id=run_id)[0].state


def test_sigkill_while_waiting_then_answered_in_another_process(db_url: str, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "run"
    folder.mkdir()
    with scripted_server() as server:
        proc = _child(server, "order-42", db_url, folder, "start", "hold")
        _kill_at(proc, folder / "waiting")
        assert (folder / "waiting").read_text("utf-8").startswith("interrupt approval_")
        assert len(server.requests) == 2 and _log(folder) == ["tool_a 1"]
        assert _state(db_url, "order-42") == "waiting"

        out = _finish(_child(server, "order-42", db_url, folder, "approve"))
        assert out.strip() == f"success {ANSWER}"
        # Each request once: only the answer to pay's result was sent; pay ran once, tool_a not again.
        assert len(server.requests) == 3
        assert server.requests[2].json()["messages"][-1]["content"] == "paid 5"
        assert _log(folder) == ["tool_a 1", "pay 1"]
        info = list_runs(db_url, run_id="order-42")[0]
        assert (info.state, info.steps, info.text) == ("finished", 5, ANSWER)  # three model calls, two tool calls

        # A second answer (a denial now) is refused; the same answer again replays: nothing sent or run.
        _finish(_child(server, "order-42", db_url, folder, "deny"))
        assert "AnswerRefused" in (folder / "answer-1.txt").read_text("utf-8")
        out = _finish(_child(server, "order-42", db_url, folder, "approve"))
        assert out.strip() == f"success {ANSWER}"
        assert len(server.requests) == 3 and _log(folder) == ["tool_a 1", "pay 1"]


def test_sigkill_during_the_answered_part_resumes_it(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    with scripted_server() as server:
        _finish(_child(server, "order-7", db, folder, "start"))  # exits normally: its wait detaches
        assert _state(db, "order-7") == "waiting"
        _kill_at(_child(server, "order-7", db, folder, "approve", "hold"), folder / "pay-running")
        assert _state(db, "order-7") == "interrupted"
        out = _finish(_child(server, "order-7", db, folder, "approve"))
        assert out.strip() == f"success {ANSWER}"
        assert len(server.requests) == 3
        assert _log(folder) == ["tool_a 1", "pay 1", "pay 2"]  # in flight at the kill: at least once


# -- in process ---------------------------------------------------------------------------------------

RAN: list[str] = []


@tool
def tool_a(n: int) -> str:
    """First tool."""
    RAN.append("tool_a")
    return f"a{n}"


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay once, when approved."""
    RAN.append("pay")
    return f"paid {amount}"


def _model(server: LoopbackServer) -> Any:
    return get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="test-key")


def test_answered_in_the_same_process_continues_the_same_workflow() -> None:
    db = durable_kit.session_url()
    RAN.clear()
    with scripted_server() as server:
        first = chat(_model(server), "Run a, then pay 5.", tools=[tool_a, pay],
                     plugins=[Durable("inproc-1", db)]).result()
        assert first.outcome == "interrupt" and RAN == ["tool_a"]
        assert _state(db, "inproc-1") == "waiting"
        resume = first.resume({first.pending_approvals[0].approval_id: True})
        done = chat(_model(server), tools=[tool_a, pay], resume=resume, plugins=[Durable("inproc-1", db)]).result()
        assert (done.outcome, done.text) == ("success", ANSWER), done.error
        assert RAN == ["tool_a", "pay"] and len(server.requests) == 3
        assert _state(db, "inproc-1") == "finished"
        # One workflow: the first run's steps under their names, then the answer, then the answering run's.
        names = [s["function_name"] for s in _steps("inproc-1") if not s["function_name"].startswith("DBOS.")]
        call_id = first.pending_approvals[0].call.id
        assert names[3:] == ["model_call:2", "wait:0", f"s1:tool_started:0:{call_id}", f"s1:tool_call:0:{call_id}",
                             "s1:model_call:1"]

        deny = first.resume({first.pending_approvals[0].approval_id: False})
        denied = chat(_model(server), tools=[tool_a, pay], resume=deny, plugins=[Durable("inproc-1", db)]).result()
        assert denied.outcome == "error" and "AnswerRefused" in str(denied.error)
        assert RAN == ["tool_a", "pay"] and len(server.requests) == 3


def test_an_answer_to_a_run_that_never_waited_is_refused() -> None:
    db = durable_kit.session_url()
    with LoopbackServer([Response(pieces=final_stream("openai", text="Hi.").events)]) as server:
        chat(_model(server), "Hello.", plugins=[Durable("never-waited", db)]).result()
        with scripted_server() as other:
            first = chat(_model(other), "Run a, then pay 5.", tools=[tool_a, pay]).result()
        resume = first.resume({first.pending_approvals[0].approval_id: True})
        refused = chat(_model(server), tools=[tool_a, pay], resume=resume,
                       plugins=[Durable("never-waited", db)]).result()
        assert refused.outcome == "error" and "AnswerRefused" in str(refused.error)


def test_a_wait_expires() -> None:
    db = durable_kit.session_url()
    RAN.clear()
    with scripted_server() as server:
        first = chat(_model(server), "Run a, then pay 5.", tools=[tool_a, pay],
                     plugins=[Durable("expiring", db, wait=0.5)]).result()
        assert first.outcome == "interrupt"
        past = threading.Event()
        for _ in range(int(BARRIER_TIMEOUT / 0.05)):  # nothing holds the wait: past its deadline, it is expired
            if _state(db, "expiring") == "expired":
                break
            past.wait(0.05)
        assert _state(db, "expiring") == "expired"
        resume = first.resume({first.pending_approvals[0].approval_id: True})
        late = chat(_model(server), tools=[tool_a, pay], resume=resume, plugins=[Durable("expiring", db)]).result()
        assert late.outcome == "error" and "expired" in str(late.error)
        assert len(server.requests) == 2 and RAN == ["tool_a"]  # refused before the approved tool could run


def _steps(run_id: str) -> list[dict[str, Any]]:
    from dbos import DBOS

    return list(DBOS.list_workflow_steps(run_id))


def test_runs_list_json_says_waiting() -> None:
    from hookstream.testing import run_cli

    db = durable_kit.session_url()
    with scripted_server() as server:
        chat(_model(server), "Run a, then pay 5.", tools=[tool_a, pay], plugins=[Durable("listed-wait", db)]).result()
    listed = run_cli(["runs", "list", "--durable-db", db, "--json"])
    rows = {r["id"]: r for r in map(json.loads, listed.output.splitlines())}
    assert rows["listed-wait"]["state"] == "waiting"


def _workflow_threads() -> list[int]:
    """The threads of this process inside a durable run's workflow function."""
    from hookstream_dbos import journal

    found = []
    for ident, frame in sys._current_frames().items():
        f: Any = frame
        while f is not None and not (f.f_code.co_name == "durable_run" and f.f_code.co_filename == journal.__file__):
            f = f.f_back
        if f is not None:
            found.append(ident)
    return found


def test_a_waiting_run_holds_no_thread_and_its_answer_resumes_it() -> None:
    """The run that ends waiting journals its wait and detaches its workflow before it ends (cancelled,
    still waiting in the database): no thread of the process stays in the workflow; the answer resumes it."""
    from dbos import DBOS

    db = durable_kit.session_url()
    RAN.clear()
    with scripted_server() as server:
        first = chat(_model(server), "Run a, then pay 5.", tools=[tool_a, pay],
                     plugins=[Durable("detached-wait", db)]).result()
        assert first.outcome == "interrupt"
        status = DBOS.get_workflow_status("detached-wait")
        assert status is not None and status.status == "CANCELLED"  # before the run ended
        assert _state(db, "detached-wait") == "waiting"
        gone = threading.Event()
        for _ in range(int(BARRIER_TIMEOUT / 0.05)):  # the execution's last step raises, then its thread leaves
            if not _workflow_threads():
                break
            gone.wait(0.05)
        assert not _workflow_threads()
        resume = first.resume({first.pending_approvals[0].approval_id: True})
        done = chat(_model(server), tools=[tool_a, pay], resume=resume,
                    plugins=[Durable("detached-wait", db)]).result()
        assert (done.outcome, done.text) == ("success", ANSWER), done.error
        assert RAN == ["tool_a", "pay"] and len(server.requests) == 3


def test_answered_in_another_process_while_the_waiting_one_still_lives(tmp_path: Path) -> None:
    """The process whose run ended waiting is alive (its workflow detached): the answering process resumes
    the workflow and goes on with it; the first process stays harmless."""
    folder = tmp_path / "run"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    with scripted_server() as server:
        holder = _child(server, "order-9", db, folder, "start", "hold")
        try:
            waited = threading.Event()
            for _ in range(int(BARRIER_TIMEOUT / 0.05)):
                if (folder / "waiting").exists():
                    break
                waited.wait(0.05)
            out = _finish(_child(server, "order-9", db, folder, "approve"))
            assert out.strip() == f"success {ANSWER}"
            assert len(server.requests) == 3 and _log(folder) == ["tool_a 1", "pay 1"]
            assert _state(db, "order-9") == "finished"
            assert holder.poll() is None  # still there, waiting to be killed; it ran nothing
        finally:
            holder.kill()
            holder.communicate()
        assert len(server.requests) == 3 and _log(folder) == ["tool_a 1", "pay 1"]
