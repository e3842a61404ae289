"""Background responses (``POST /v1/responses`` with ``"background": true``, ``GET /v1/responses/{id}``
with ``stream=true&starting_after=N``, ``POST /v1/responses/{id}/cancel``; docs/openai-endpoint.md,
"Background responses") with the official ``openai`` SDK as the client, against ``make_app`` served by
waitress on 127.0.0.1 in this process. The runs are held by the test (an event per run it releases), so
a response is certainly still going when the client leaves and comes back: causal order, never time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import requests
from hookstream.events import Outcome, RunFinished, RunStarted, TextMessageContent, TextMessageEnd, TextMessageStart
from hookstream.server import RunInput, ServerLimits, TokenAuthenticator, make_app

pytest.importorskip("waitress", reason="the server runs on waitress: pip install 'hookstream[serve]'")

BOUND = 60.0  # seconds a held run waits for its release at most (the test fails first)
KEYS = {"alice-key": "alice", "bob-key": "bob"}


class _Held:
    """A run that says ``Hello `` and waits for ``gate`` before ``world``; cancelled, it ends so."""

    def __init__(self, run: RunInput, gate: threading.Event) -> None:
        self.run, self.gate = run, gate
        self.cancelled, self.asked = threading.Event(), threading.Event()

    def __iter__(self) -> Iterator[Any]:
        run = self.run
        yield RunStarted(run.thread_id, run.run_id)
        yield TextMessageStart("m1")
        yield TextMessageContent("m1", "Hello ")
        released = threading.Event()
        while not (self.gate.is_set() or self.cancelled.is_set()):
            released.wait(0.01)
        if self.cancelled.is_set():
            yield TextMessageEnd("m1")
            yield RunFinished(run.thread_id, run.run_id, outcome=Outcome("cancelled"))
            return
        yield TextMessageContent("m1", "world")
        yield TextMessageEnd("m1")
        yield RunFinished(run.thread_id, run.run_id)

    def cancel(self) -> None:
        self.asked.set()
        if not self.stubborn:
            self.cancelled.set()

    stubborn = False  # a run that takes its time to stop: cancel() is heard only once the gate opens


class _Server:
    def __init__(self, **app: Any) -> None:
        from waitress.server import create_server

        self.gate = threading.Event()
        self.runs: list[_Held] = []

        def factory(run: RunInput) -> _Held:
            self.runs.append(_Held(run, self.gate))
            return self.runs[-1]

        self.server = create_server(make_app(stream_factory=factory, serve_page=False, **app), host="127.0.0.1",
                                    port=0, threads=8)
        self.url = f"http://127.0.0.1:{self.server.effective_port}"  # type: ignore[union-attr]
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def client(self, key: str = "alice-key") -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=BOUND)

    def close(self) -> None:
        self.gate.set()
        self.server.close()  # its daemon thread ends with the process


@pytest.fixture
def served() -> Iterator[_Server]:
    server = _Server(authenticate=TokenAuthenticator(KEYS),
                     limits=ServerLimits(ping_seconds=0.05, max_concurrent_runs=2, resume_wait_seconds=BOUND))
    try:
        yield server
    finally:
        server.close()


def _until(check: Any) -> None:
    pause = threading.Event()
    for _ in range(int(BOUND / 0.01)):
        if check():
            return
        pause.wait(0.01)
    pytest.fail("never happened")


def test_a_streamed_background_response_resumes_after_its_last_sequence_number(served: _Server) -> None:
    client = served.client()
    first: list[Any] = []
    stream = client.responses.create(model="hookstream", input="hi", background=True, stream=True)
    for ev in stream:
        first.append(ev)
        if ev.type == "response.output_text.delta":
            break
    stream.close()  # the client leaves while the run waits: the run goes on
    response_id = first[0].response.id
    assert first[0].type == "response.created" and first[0].response.background is True
    # As OpenAI's background stream (a recorded one): created and queued say "queued", then in_progress.
    assert [(e.type, e.response.status) for e in first[:3]] == [
        ("response.created", "queued"), ("response.queued", "queued"), ("response.in_progress", "in_progress")]
    now = client.responses.retrieve(response_id)
    assert now.status == "in_progress" and now.id == response_id
    last = first[-1].sequence_number
    resumed = client.responses.retrieve(response_id, stream=True, starting_after=last)
    served.gate.set()
    rest = list(resumed)
    seqs = [ev.sequence_number for ev in first + rest]
    assert seqs == list(range(len(seqs))), seqs  # from 0, as OpenAI numbers them: nothing repeated, nothing lost
    assert rest[-1].type == "response.completed"
    text = "".join(ev.delta for ev in first + rest if ev.type == "response.output_text.delta")
    assert text == "Hello world"
    done = client.responses.retrieve(response_id)
    assert done.status == "completed" and done.output_text == "Hello world" and done.background is True
    assert done.model_dump() == rest[-1].response.model_dump()
    # The whole stream again, from its start, byte for byte the same events.
    again = list(client.responses.retrieve(response_id, stream=True))
    assert [e.model_dump() for e in again] == [e.model_dump() for e in first + rest]
    # starting_after=0 is after response.created (OpenAI's numbering: the first event is 0).
    after_created = list(client.responses.retrieve(response_id, stream=True, starting_after=0))
    assert [e.model_dump() for e in after_created] == [e.model_dump() for e in again[1:]]


def test_a_background_response_is_queued_at_once_and_its_stream_read_later(served: _Server) -> None:
    client = served.client()
    queued = client.responses.create(model="hookstream", input="hi", background=True)
    assert queued.status == "queued" and queued.background is True and queued.id.startswith("resp_")
    _until(lambda: served.runs)
    with requests.get(f"{served.url}/v1/responses/{queued.id}", params={"stream": "true"}, stream=True,
                      timeout=BOUND, headers={"Authorization": "Bearer alice-key"}) as raw:
        assert raw.status_code == 200 and raw.headers["Content-Type"].startswith("text/event-stream")
        lines = raw.iter_lines()
        seen: list[bytes] = []
        while b": ping" not in seen:  # the run waits: the stream keeps alive with SSE comments
            seen.append(next(lines))
        served.gate.set()
        seen += list(lines)
    assert seen[0].startswith(b"id: run_") and b"event: response.created" in seen
    assert b"event: response.completed" in seen
    assert client.responses.retrieve(queued.id).output_text == "Hello world"


def test_only_its_principal_sees_or_cancels_a_response(served: _Server) -> None:
    alice, bob = served.client(), served.client("bob-key")
    mine = alice.responses.create(model="hookstream", input="hi", background=True)
    unknown = "resp_" + "0" * 32

    def refused(call: Any, response_id: str) -> str:
        with pytest.raises(openai.NotFoundError) as caught:
            got = call(response_id)
            list(got) if isinstance(got, openai.Stream) else None
        return str(caught.value.message).replace(response_id, "ID")

    for call in (bob.responses.retrieve, lambda i: bob.responses.retrieve(i, stream=True, starting_after=0),
                 bob.responses.cancel):
        assert refused(call, mine.id) == refused(call, unknown)  # as for an id that never was
    assert refused(bob.responses.retrieve, "not-an-id") == refused(bob.responses.retrieve, unknown)
    served.gate.set()
    _until(lambda: alice.responses.retrieve(mine.id).status == "completed")
    assert refused(bob.responses.retrieve, mine.id) == refused(bob.responses.retrieve, unknown)


def test_background_runs_count_toward_the_principals_run_limits(served: _Server) -> None:
    alice, bob = served.client(), served.client("bob-key")
    held = [alice.responses.create(model="hookstream", input="hi", background=True) for _ in range(2)]
    with pytest.raises(openai.RateLimitError):  # max_concurrent_runs=2: both still run
        alice.responses.create(model="hookstream", input="hi", background=True)
    assert bob.responses.create(model="hookstream", input="hi", background=True).status == "queued"
    served.gate.set()
    for response in held:
        _until(lambda r=response: alice.responses.retrieve(r.id).status == "completed")
    _until(lambda: alice.responses.create(model="hookstream", input="hi", background=True).status == "queued")


def test_a_cancelled_background_response_says_so(served: _Server) -> None:
    client = served.client()
    queued = client.responses.create(model="hookstream", input="hi", background=True)
    cancelled = client.responses.cancel(queued.id)
    assert cancelled.status == "cancelled" and cancelled.output_text == "Hello "
    assert client.responses.retrieve(queued.id).status == "cancelled"
    assert client.responses.cancel(queued.id).status == "cancelled"  # once ended, as it ended


def test_without_background_nothing_is_kept(served: _Server) -> None:
    client = served.client()
    served.gate.set()
    whole = client.responses.create(model="hookstream", input="hi")
    assert whole.status == "completed" and whole.background is False and whole.output_text == "Hello world"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(whole.id)


def test_a_server_without_a_run_log_refuses_background() -> None:
    server = _Server(resumable=False)
    try:
        with pytest.raises(openai.BadRequestError) as caught:
            server.client().responses.create(model="hookstream", input="hi", background=True)
        assert caught.value.code == "background_unavailable" and caught.value.param == "background"
        assert server.runs == []  # refused before any run started
    finally:
        server.close()


def test_a_response_run_again_that_says_something_else_leaves_one_readable_stream(tmp_path: Any) -> None:
    """A run recovered after a crash whose model call in flight answers otherwise the second time
    (``resume._GRAMMARS["responses"]``): the output item the first attempt began is ended ``incomplete``,
    the second attempt's item follows it under an index and id of its own, and every event's
    ``sequence_number`` is its frame's number in the log, so the SDK's own accumulator reads it whole."""
    from hookstream.stores import open_store
    from hookstream_server.openai_compat import answer_hex, responses_framing
    from hookstream_server.resume import Recorder
    from hookstream_server.runlog import run_log_of

    url = f"sqlite:///{tmp_path / 'log.db'}"
    server = _Server(store=open_store(url))
    try:
        log = run_log_of(open_store(url))
        assert log is not None
        hexa = answer_hex()
        run = RunInput(f"thread_{hexa}", f"run_{hexa}", [], [])
        first = [RunStarted(run.thread_id, run.run_id), TextMessageStart("m1"), TextMessageContent("m1", "Hel")]
        rec = Recorder(log, ServerLimits(), run.thread_id, run.run_id, None, "responses")
        frames = responses_framing(run)(iter(first))
        for _ in range(6):  # created, queued, in_progress, the item and its part added, "Hel": then the crash
            rec.frame(next(frames))
        assert log.flush()  # written, as a worker's log-then-send has it before the worker dies
        again = [*first[:2], TextMessageContent("m1", "Hi there"), TextMessageEnd("m1"),
                 RunFinished(run.thread_id, run.run_id)]
        rec = Recorder(log, ServerLimits(), run.thread_id, run.run_id, None, "responses", continuing=True)
        for frame in responses_framing(run)(iter(again)):
            rec.frame(frame)
        rec.end()
        assert log.flush()
        client = server.client()
        events = list(client.responses.retrieve(f"resp_{hexa}", stream=True))
        with client.responses.stream(response_id=f"resp_{hexa}") as stream:  # the SDK's accumulator
            final = stream.get_final_response()
        assert [e.sequence_number for e in events] == list(range(len(events)))
        items = [(e.output_index, e.item.id, e.item.status) for e in events if e.type == "response.output_item.done"]
        assert items == [(0, f"msg_{hexa}_0", "incomplete"), (1, f"msg_{hexa}_0-6", "completed")], items
        deltas = [(e.item_id, e.delta) for e in events if e.type == "response.output_text.delta"]
        assert deltas == [(f"msg_{hexa}_0", "Hel"), (f"msg_{hexa}_0-6", "Hi there")]
        assert final.status == "completed" and final.output_text == "Hi there"
    finally:
        server.close()


def _get(served: _Server, path: str, key: str | None = "alice-key", **params: str) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.get(served.url + path, params=params, headers=headers, timeout=BOUND)


@pytest.mark.parametrize("after", ["-1", "1.5", "true", "1e3", "0x10", " 1", "9" * 13, "\uff11"])
def test_starting_after_that_is_no_sequence_number_is_refused(served: _Server, after: str) -> None:
    queued = served.client().responses.create(model="hookstream", input="hi", background=True)
    for stream in ("true", "false"):
        got = _get(served, f"/v1/responses/{queued.id}", stream=stream, starting_after=after)
        assert got.status_code == 400, (after, got.text)
        assert got.json()["error"]["param"] == "starting_after"


def test_a_starting_after_past_the_end_reads_nothing_once_the_response_ended(served: _Server) -> None:
    client = served.client()
    served.gate.set()
    queued = client.responses.create(model="hookstream", input="hi", background=True)
    _until(lambda: client.responses.retrieve(queued.id).status == "completed")
    assert list(client.responses.retrieve(queued.id, stream=True, starting_after=10**11)) == []


@pytest.mark.parametrize("response_id", ["resp_..%2F..%2Fagui", "resp_" + "0" * 32 + "%2F..", "..",
                                         "resp_" + "a" * 5000, "RESP_" + "0" * 32, "resp_" + "0" * 32 + "%00",
                                         "resp_" + "G" * 32])
def test_a_forged_response_id_is_an_unknown_one(served: _Server, response_id: str) -> None:
    got = _get(served, f"/v1/responses/{response_id}")
    assert got.status_code == 404 and got.json()["error"]["type"] == "invalid_request_error", got.text
    assert len(got.content) < 600  # the id is not echoed whole


def test_no_principal_no_response(served: _Server) -> None:
    queued = served.client().responses.create(model="hookstream", input="hi", background=True)
    assert _get(served, f"/v1/responses/{queued.id}", key=None).status_code == 401
    assert _get(served, f"/v1/responses/{queued.id}", key="mallory-key").status_code == 401
    cancel = requests.post(f"{served.url}/v1/responses/{queued.id}/cancel", timeout=BOUND)
    assert cancel.status_code == 401
    assert len(served.runs) == 1 and not served.runs[0].cancelled.is_set()


def test_an_agui_run_under_a_response_like_id_is_no_response(served: _Server) -> None:
    """An AG-UI run its principal named ``thread_<hex>``/``run_<hex>`` is logged under the same ids a
    background response's would be: the responses routes see only runs logged as responses."""
    hexa = "0" * 8 + "1" * 24
    served.gate.set()
    body = {"threadId": f"thread_{hexa}", "runId": f"run_{hexa}", "messages": [], "tools": [], "context": [],
            "state": {}, "forwardedProps": {}}
    got = requests.post(served.url + "/agui", json=body, headers={"Authorization": "Bearer alice-key"},
                        timeout=BOUND)
    assert got.status_code == 200 and b"RUN_FINISHED" in got.content
    client = served.client()
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(f"resp_{hexa}")
    with pytest.raises(openai.NotFoundError):
        list(client.responses.retrieve(f"resp_{hexa}", stream=True))
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel(f"resp_{hexa}")


def test_waiting_cancels_count_toward_the_principals_resumed_streams() -> None:
    """A cancel waits for its run's end, holding a server thread: counted as a resumed stream (``429``
    past ``max_resume_streams``), given back when it answers."""
    server = _Server(authenticate=TokenAuthenticator(KEYS),
                     limits=ServerLimits(ping_seconds=0.05, max_resume_streams=1, resume_wait_seconds=BOUND))
    try:
        _Held.stubborn = True
        client = server.client()
        queued = client.responses.create(model="hookstream", input="hi", background=True)
        _until(lambda: server.runs)
        waiting: list[Any] = []
        first = threading.Thread(target=lambda: waiting.append(client.responses.cancel(queued.id)), daemon=True)
        first.start()
        assert server.runs[0].asked.wait(BOUND)  # the first cancel waits for the run's end
        with pytest.raises(openai.RateLimitError):  # so the next is refused
            client.responses.cancel(queued.id)
        with pytest.raises(openai.RateLimitError):  # so is a resumed stream
            list(client.responses.retrieve(queued.id, stream=True))
        server.gate.set()
        first.join(BOUND)
        assert waiting and waiting[0].status == "completed"
        assert list(client.responses.retrieve(queued.id, stream=True, starting_after=0))  # given back
    finally:
        _Held.stubborn = False
        server.close()
