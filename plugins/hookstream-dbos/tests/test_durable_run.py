"""Durable runs with real DBOS: a scripted three-step tool loop (tool_a, tool_b, answer) on a loopback
server speaking OpenAI Chat Completions (bodies from the testing kit's builders), a process SIGKILLed
while tool_b runs, then the same run id again.

The crash tests run each attempt in a process of its own (``durable_child.py``) on a database of their
own (SQLite; PostgreSQL from ``scripts/start-postgres``); the in-process tests share one SQLite file for
the session (DBOS has one system database per process).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import durable_kit
import pytest
from hookstream import Agent, LoopSettings, chat, get_model, tool
from hookstream.events import to_json
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import final_stream, provider_stream
from hookstream_dbos import Durable, RerunRefused, attempt

sys.path.append(str(Path(__file__).resolve().parents[3] / "tests"))  # the core's test kits (as mcp_kit reaches them)

from store_kit import postgres

HERE = Path(__file__).resolve().parent
CHILD = HERE / "durable_child.py"
ANSWER = "Both done: a1 and b2."
BARRIER_TIMEOUT = 120.0  # seconds: a loaded CI machine starts a Python process with DBOS slowly


def scripted_bodies() -> list[list[bytes]]:
    """The three model calls, each a list of SSE events: tool_a, then tool_b, then the answer."""
    return [
        provider_stream("openai", text="First a. ", reasoning="", tool_name="tool_a", tool_args={"n": 1}).events,
        provider_stream("openai", text="Now b. ", reasoning="", tool_name="tool_b", tool_args={"n": 2}).events,
        final_stream("openai", text=ANSWER).events,
    ]


def scripted_server() -> LoopbackServer:
    return LoopbackServer([Response(pieces=events) for events in scripted_bodies()]).start()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'durable.sqlite'}"
        return
    with postgres() as url:
        yield url


def _child(server: LoopbackServer, run_id: str, db: str, folder: Path, *mode: str,
           script: Path = CHILD) -> subprocess.Popen[str]:
    """``script`` (``durable_child.py`` unless told) on the run, in a process of its own."""
    return subprocess.Popen([sys.executable, str(script), server.url, run_id, db, str(folder), *mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=BARRIER_TIMEOUT)
    assert proc.returncode == 0, err[-3000:]
    return out


def _kill_at_barrier(proc: subprocess.Popen[str], barrier: Path) -> None:
    """Wait until the child created ``barrier`` (its tool_b is running), then SIGKILL it."""
    waited = threading.Event()
    for _ in range(int(BARRIER_TIMEOUT / 0.05)):
        if barrier.exists():
            break
        if proc.poll() is not None:
            pytest.fail(f"the run ended before tool_b ran: {proc.communicate()[1][-3000:]}")
        waited.wait(0.05)
    else:
        pytest.fail("tool_b never ran")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def _events(folder: Path, attempt: int) -> list[str]:
    """The AG-UI JSON lines ``durable_child.py``'s run number ``attempt`` (from 0) streamed."""
    return (folder / f"events-{attempt}.jsonl").read_text("utf-8").splitlines()


def _tool_log(folder: Path) -> list[str]:
    return (folder / "tools.log").read_text("utf-8").splitlines()


def test_sigkill_while_the_second_tool_runs_then_resume(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    with scripted_server() as server:
        _kill_at_barrier(_child(server, "order-42", db_url, folder, "hold"), folder / "b-running")
        assert len(server.requests) == 2  # tool_a's call and tool_b's call; tool_b was running

        out = _finish(_child(server, "order-42", db_url, folder))
        assert out.strip() == f"success {ANSWER}"
        # Each request once: the resumed run sent only the third (the answer to both tool results).
        assert len(server.requests) == 3
        bodies = [r.json() for r in server.requests]
        assert [len(b["messages"]) for b in bodies] == [1, 3, 5]
        assert bodies[2]["messages"][-1]["content"] == "b2"
        # tool_a ran once; tool_b, in flight at the kill, ran again and knew it (attempt 2).
        assert _tool_log(folder) == ["tool_a 1", "tool_b 1", "tool_b 2"]
        # The resumed run streamed again, byte for byte, what the killed one had streamed, tool_a's
        # progress events (journaled with its result) included, each once and in order.
        killed, resumed = _events(folder, 0), _events(folder, 1)
        assert resumed[:len(killed)] == killed
        progress = [json.loads(e)["value"] for e in resumed if '"name":"progress"' in e]
        assert progress == [{"done": 1, "of": 2}, {"done": 2, "of": 2}]

        # A finished id: the recorded answer, nothing sent, nothing run; the same events.
        out = _finish(_child(server, "order-42", db_url, folder))
        assert out.strip() == f"success {ANSWER}"
        assert len(server.requests) == 3
        assert _tool_log(folder) == ["tool_a 1", "tool_b 1", "tool_b 2"]
        assert _events(folder, 2) == resumed


def test_a_tool_refuses_to_run_again_after_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    with scripted_server() as server:
        _kill_at_barrier(_child(server, "pay-1", db, folder, "hold"), folder / "b-running")
        out = _finish(_child(server, "pay-1", db, folder, "refuse"))
        assert out.startswith("success ")
        assert _tool_log(folder) == ["tool_a 1", "tool_b 1", "tool_b 2"]  # the second attempt raised at once
        told = server.requests[2].json()["messages"][-1]["content"]
        assert "may already have run" in told
        # Journaled like any result: a third run neither runs tool_b nor asks the model again.
        _finish(_child(server, "pay-1", db, folder, "refuse"))
        assert len(server.requests) == 3
        assert _tool_log(folder) == ["tool_a 1", "tool_b 1", "tool_b 2"]


# -- in process ---------------------------------------------------------------------------------------


@pytest.fixture
def session_db() -> str:
    return durable_kit.session_url()


RAN: list[str] = []


@tool
def tool_a(n: int) -> str:
    """First tool."""
    RAN.append(f"tool_a {attempt()}")
    return f"a{n}"


@tool
def tool_b(n: int) -> str:
    """Second tool."""
    RAN.append(f"tool_b {attempt()}")
    return f"b{n}"


def _model(server: LoopbackServer) -> Any:
    return get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="test-key")


def _shape(events: list[Any]) -> list[tuple[str, str]]:
    """Event types with their text deltas and tool-call arguments (ids left out: the adapter makes
    message ids up anew)."""
    return [(ev.type, str(getattr(ev, "delta", ""))) for ev in events]


def test_a_finished_id_replays_the_same_events_without_a_request(session_db: str) -> None:
    RAN.clear()
    with scripted_server() as server:
        stream = chat(_model(server), "Run a then b.", tools=[tool_a, tool_b],
                      plugins=[Durable("same-events", session_db)])
        first = list(stream)
        result = stream.result()
        assert result.outcome == "success" and result.text == ANSWER
        assert len(server.requests) == 3 and RAN == ["tool_a 1", "tool_b 1"]

        again = chat(_model(server), "Run a then b.", tools=[tool_a, tool_b],
                     plugins=[("durable", {"id": "same-events", "db": session_db})])
        replayed = list(again)
        assert len(server.requests) == 3 and RAN == ["tool_a 1", "tool_b 1"]
        assert _shape(replayed) == _shape(first)
        second = again.result()
        assert second.text == result.text
        assert second.usage == result.usage
        assert [s.tool_calls for s in second.steps] == [s.tool_calls for s in result.steps]


def _nested_run(session_db: str, run_id: str, **durable: Any) -> tuple[list[str], list[Any], int]:
    """An agent used as a tool (its run streams in the parent's: ``SUBAGENT_*`` events, its usage added),
    as durable run ``run_id`` twice (the second time a finished id): both runs' AG-UI JSON, both results,
    and the requests the agent's model server got."""
    parent = [provider_stream("openai", text="", reasoning="", tool_name="research", tool_args={"prompt": "x?"}).events,
              final_stream("openai", text="x is 42.").events]
    with LoopbackServer([Response(pieces=b) for b in parent]) as server, \
            LoopbackServer([Response(pieces=final_stream("openai", text="Found: x=42.").events)]) as sub:
        research = Agent(_model(sub), name="researcher").as_tool("research", "Research a question.")
        runs, results = [], []
        for _ in range(2):
            stream = chat(_model(server), "What is x?", tools=[research], thread_id=f"thread-{run_id}",
                          loop=LoopSettings(run_id=run_id), plugins=[Durable(run_id, session_db, **durable)])
            runs.append([to_json(ev) for ev in stream])
            results.append(stream.result())
        return runs[0] + ["--"] + runs[1], results, len(sub.requests)


def test_a_finished_id_replays_what_a_tool_streamed(session_db: str) -> None:
    got, (_, result), sub_calls = _nested_run(session_db, "nested-1")
    first, again = got[:got.index("--")], got[got.index("--") + 1:]
    assert sub_calls == 1 and result.text == "x is 42."
    assert again == first  # the nested run's events and usage too, from the journal
    assert sum('"SUBAGENT_STARTED"' in e for e in again) == 1 and '"SUBAGENT_FINISHED"' in "".join(again)

    # Past the bound, the call's result is journaled with its usage alone: a replay streams none of its
    # events, but the nested run's tokens still count (the same usage as the run that spent them).
    got, (ran, result), sub_calls = _nested_run(session_db, "nested-2", max_tool_stream=100)
    first, again = got[:got.index("--")], got[got.index("--") + 1:]
    assert sub_calls == 1 and result.text == "x is 42."
    assert '"SUBAGENT_STARTED"' in "".join(first) and '"SUBAGENT_STARTED"' not in "".join(again)
    assert ran.usage.total_tokens and result.usage == ran.usage, (ran.usage, result.usage)


@pytest.mark.parametrize("bound", [-1, "1000", 1.5])
def test_a_bad_max_tool_stream_is_refused_at_once(bound: Any) -> None:
    # Not later, inside a tool's emit on the tool's thread.
    with pytest.raises((TypeError, ValueError)):
        Durable("bad-bound", max_tool_stream=bound)


def test_another_prompt_under_a_finished_id_is_refused(session_db: str) -> None:
    with scripted_server() as server:
        chat(_model(server), "Run a then b.", tools=[tool_a, tool_b], plugins=[Durable("diverge", session_db)]).result()
        result = chat(_model(server), "Something else.", tools=[tool_a, tool_b],
                      plugins=[Durable("diverge", session_db)]).result()
        assert result.outcome == "error"
        assert getattr(result.error, "code", None) == "durable_diverged"
        assert len(server.requests) == 3


def _gated(events: list[bytes], gate: threading.Event, opened: list[bool] | None = None) -> Callable[[Any, Any], None]:
    """A response writer that sends the first two events, then waits for ``gate`` before the rest
    (``opened`` gets whether the gate opened while the body was held, rather than after 30 s)."""
    def write(wfile: Any, _sock: Any) -> None:
        for i, piece in enumerate(events):
            wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            wfile.flush()
            if i == 1:
                held = gate.wait(30)
                if opened is not None:
                    opened.append(held)
        wfile.write(b"0\r\n\r\n")
        wfile.flush()
    return write


def test_a_durable_run_streams_events_as_they_arrive(session_db: str) -> None:
    gate = threading.Event()
    answer = final_stream("openai", text="Streamed answer.").events
    opened: list[bool] = []
    with LoopbackServer([Response(writer=_gated(answer, gate, opened))]) as server:
        stream = chat(_model(server), "Say it.", plugins=[Durable("streaming", session_db)])
        seen = []
        for ev in stream:
            seen.append(ev.type)
            if ev.type == "TEXT_MESSAGE_CONTENT":
                # The server holds the rest of the body until this event reached the consumer.
                gate.set()
        assert stream.result().text == "Streamed answer."
        assert opened == [True]  # the text reached the consumer while the rest of the body was held


def test_a_refusing_tool_on_its_first_run_runs(session_db: str) -> None:
    """attempt() is 1 outside a crash, so a careful tool runs normally."""
    @tool
    def pay(amount: int) -> str:
        """Pay once."""
        if attempt() > 1:
            raise RerunRefused("the payment may already have run")
        return f"paid {amount}"

    bodies = [provider_stream("openai", text="", reasoning="", tool_name="pay", tool_args={"amount": 5}).events,
              final_stream("openai", text="Paid.").events]
    with LoopbackServer([Response(pieces=b) for b in bodies]) as server:
        result = chat(_model(server), "Pay 5.", tools=[pay], plugins=[Durable("pay-first", session_db)]).result()
        assert result.text == "Paid."
        assert json.loads(server.requests[1].body)["messages"][-1]["content"] == "paid 5"


def test_a_run_that_ended_with_an_error_resumes_where_it_stopped(session_db: str) -> None:
    """The second model call fails (HTTP 500, no retries): the run ends with RUN_ERROR and stays resumable;
    the same id against a server that now answers sends only what is missing."""
    RAN.clear()
    bodies = scripted_bodies()
    failing = [Response(pieces=bodies[0]),
               Response(body=b'{"error": {"message": "down", "type": "server_error"}}', status=500,
                        content_type="application/json")]
    with LoopbackServer(failing) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="test-key")
        result = chat(model, "Run a then b.", tools=[tool_a, tool_b], plugins=[Durable("stopped-1", session_db)],
                      loop=LoopSettings(max_retries=0)).result()
        assert result.outcome == "error" and RAN == ["tool_a 1"]
    with LoopbackServer([Response(pieces=bodies[1]), Response(pieces=bodies[2])]) as server:
        result = chat(_model(server), "Run a then b.", tools=[tool_a, tool_b],
                      plugins=[Durable("stopped-1", session_db)]).result()
        assert result.outcome == "success" and result.text == ANSWER, result.error
        assert len(server.requests) == 2  # the first model call came from the journal
        assert RAN == ["tool_a 1", "tool_b 1"]  # tool_a did not run again


def test_one_id_in_two_runs_at_once_is_refused(session_db: str) -> None:
    gate = threading.Event()
    answer = final_stream("openai", text="Held.").events
    with LoopbackServer([Response(writer=_gated(answer, gate))]) as server:
        first = chat(_model(server), "Hold.", plugins=[Durable("busy-1", session_db)])
        events = iter(first)
        next(events)  # RUN_STARTED: the id is open
        second = chat(_model(server), "Hold.", plugins=[Durable("busy-1", session_db)]).result()
        assert second.outcome == "error" and "already running" in str(second.error)
        gate.set()
        for _ in events:
            pass
        assert first.result().text == "Held."


def test_a_run_left_open_at_exit_does_not_hold_the_process(tmp_path: Path) -> None:
    """A consumer that stops reading without closing its stream (still referenced at exit): the run's
    workflow waits on a DBOS thread, which the interpreter joins at exit before the main thread counts as
    ended; the workflow sees the exit begin, detaches (resumable) and the process ends."""
    from hookstream_dbos import list_runs

    db = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    proc = subprocess.run([sys.executable, str(HERE / "durable_abandoned_child.py"), "left-open", db],
                          capture_output=True, text=True, timeout=BARRIER_TIMEOUT)
    assert proc.returncode == 0 and proc.stdout.strip() == "left open", proc.stderr[-3000:]
    [info] = list_runs(db, run_id="left-open")
    assert info.state == "stopped" and info.steps == 2  # the model call and the tool call: resumable
