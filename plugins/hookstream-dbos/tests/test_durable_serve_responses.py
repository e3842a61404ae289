"""``hookstream serve --durable`` and background OpenAI responses (``POST /v1/responses`` with
``"background": true``, resumed by ``GET /v1/responses/{id}?stream=true&starting_after=N``), with the
official ``openai`` SDK as the client, real DBOS (SQLite; PostgreSQL when it starts), real gunicorn
(``--workers 2``), ``--auth-tokens`` for alice and bob, a store and a loopback model server playing the
three-step tool loop (tool_a, block, the answer): the worker that streams alice's response is SIGKILLed
while ``block`` runs; DBOS recovers the run in a live worker; ``client.responses.retrieve(id,
stream=True, starting_after=last)`` reads the rest: each event once, sequence numbers 0, 1, ... with no
gap and no repeat across the kill, ending ``response.completed``; the model server saw each completed
request once, tool_a ran once. Bob retrieving her response (before the kill, while it is recovered and
after it ended) gets what an id that never was gets.

Causal order only: ``block`` writes ``started-7-ATTEMPT`` (the kill waits for the first, the reconnect
is open before the second is released), never a time bound.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")

from test_durable_run import ANSWER, db_url  # noqa: F401  (db_url: the fixture)
from test_durable_serve import TOKENS, WAIT, _wait_for, durable_db, run_folders, serve, thread_store  # noqa: F401  (durable_db: the fixture)
from test_durable_serve_ui import _script


def _client(base: str, who: str) -> Any:
    return openai.OpenAI(base_url=base + "/v1", api_key=TOKENS[who], max_retries=0, timeout=WAIT)


def _read(stream: Any, into: list[Any]) -> None:
    """Append each event of ``stream`` until it ends or breaks (its worker killed)."""
    try:
        for ev in stream:
            into.append(ev)
    except Exception:  # the connection broke: what was read is what the client has
        return


def _reader(stream: Any, into: list[Any]) -> threading.Thread:
    reader = threading.Thread(target=_read, args=(stream, into))
    reader.start()
    return reader


def _same_as_none(base: str, response_id: str) -> None:
    """Bob retrieving alice's response (whole and streamed) gets what an id that never was gets."""
    bob = _client(base, "bob")
    unknown = "resp_" + "0" * 32
    for call in (bob.responses.retrieve, lambda i: bob.responses.retrieve(i, stream=True, starting_after=0)):
        said = []
        for which in (response_id, unknown):
            with pytest.raises(openai.NotFoundError) as caught:
                call(which)
            said.append(str(caught.value.message).replace(which, "ID"))
        assert said[0] == said[1], said


def test_a_killed_workers_background_response_is_recovered_and_read_on(durable_db: str,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    folder, tokens = run_folders(tmp_path)
    store = thread_store(durable_db, tmp_path)
    with _script() as model, serve(model.url, store, folder, "--tool", "durable_attack_tools:block",
                                   "--auth-tokens", str(tokens), "--durable", "--durable-db", durable_db,
                                   "--durable-name", "responses", hold=False) as base:
        alice = _client(base, "alice")
        before: list[Any] = []
        stream = alice.responses.create(model="hookstream", input="Run a then b.", background=True, stream=True)
        reader = _reader(stream, before)
        _wait_for(folder / "started-7-1", "block's first attempt")
        _until_read(before)
        response_id = before[0].response.id
        _same_as_none(base, response_id)  # before the kill
        os.kill(int((folder / "started-7-1").read_text("utf-8")), signal.SIGKILL)  # the streaming worker
        reader.join(WAIT)
        assert not reader.is_alive(), "the killed worker's stream never ended"
        stream.close()
        assert before and before[-1].type != "response.completed", before[-1:]
        assert len(model.requests) == 2  # tool_a's call and block's call; block was running

        # Alice reads on after the last event she got.
        after: list[Any] = []
        last = before[-1].sequence_number
        reader = _reader(alice.responses.retrieve(response_id, stream=True, starting_after=last), after)
        _same_as_none(base, response_id)  # while the run is recovered
        _wait_for(folder / "started-7-2", "the recovered run's block")
        _same_as_none(base, response_id)
        (folder / "release-7").write_text("", "utf-8")
        reader.join(WAIT)
        assert not reader.is_alive(), "the resumed stream never ended"

        # Every event once: numbered on from where she left, none missing, none repeated.
        events = before + after
        seqs = [ev.sequence_number for ev in events]
        assert seqs == list(range(len(events))), seqs
        assert [ev.type for ev in events].count("response.created") == 1
        assert events[-1].type == "response.completed"
        final = events[-1].response
        assert final.id == response_id and final.status == "completed" and final.output_text.endswith(ANSWER)
        text = "".join(ev.delta for ev in events if ev.type == "response.output_text.delta")
        assert text == final.output_text
        # The whole stream from its start is what she read, event for event.
        whole = list(alice.responses.retrieve(response_id, stream=True))
        assert [e.model_dump() for e in whole] == [e.model_dump() for e in events]
        assert alice.responses.retrieve(response_id).model_dump() == final.model_dump()

        # Each model request once; tool_a once; block, in flight at the kill, again (attempt 2).
        assert [len(r.json()["messages"]) for r in model.requests] == [1, 3, 5]
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "block 7 1", "block 7 2"]
        _same_as_none(base, response_id)  # after it ended


def _until_read(events: list[Any]) -> None:
    """Until the client has read the first event (it names the response)."""
    pause = threading.Event()
    for _ in range(int(WAIT / 0.05)):
        if events:
            return
        pause.wait(0.05)
    pytest.fail("the response's first event never came")
