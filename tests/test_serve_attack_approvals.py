"""One answer, one run (issue 38, findings 1 and 3), against real `hookstream serve` processes.

Finding 1: with a store (memory and SQLite on waitress, SQLite and PostgreSQL on gunicorn `--workers 2
--threads 4`), one pending approval answered by six concurrent POSTs (a barrier fires them together)
runs the tool once: the store claims the answer before the run starts, the other five get `409`
`already_answered`. The same on the AI SDK route (`/api/chat`) and for a frontend tool's result (the
model is asked to continue once).

Finding 3: without a store (waitress with store_kit's tools and bearer tokens; gunicorn `--workers 2`
with the demo), a signed approval id is used once: six concurrent answers run the tool once, a later
replay (on any worker) is `409` and runs nothing, another principal's replay is `400` (the id is bound
to the principal it was handed to), and an id past its lifetime is refused.

The `transfer` tool appends each amount to a ledger file (store_kit): the test reads what ran from
outside the server. With a store, the simulated provider holds the winning run's model answer until every
POST was answered, so the winner's messages are saved only after the others were decided.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from hookstream import Message, ToolCallPart
from hookstream.server import ApprovalSigner
from hookstream.stores import open_store
from serve_kit import messages_after, serve_demo_process
from store_kit import LEDGER_ENV, Client, SimProvider, postgres, serve_workers
from test_ui_message_stream import answer_approvals, frames_to_chunks, rebuild

ALICE, BOB = "tok-alice-" + "a" * 24, "tok-bob-" + "b" * 24
ANSWERS = 6
CONFIRM = {"name": "confirm", "description": "Ask the user to confirm.",
           "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


@attrs.frozen
class Server:
    base: str
    ledger: Path

    def spent(self) -> list[int]:
        return [int(x) for x in self.ledger.read_text().split()] if self.ledger.exists() else []


def headers(token: str | None = ALICE) -> dict[str, str]:
    return {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}


def agui(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{uuid.uuid4().hex}", "messages": messages, "tools": [],
            "state": None, "context": [], "forwardedProps": None, **extra}


def ui_user(text: str) -> dict[str, Any]:
    return {"id": f"u-{uuid.uuid4().hex}", "role": "user", "parts": [{"type": "text", "text": text}]}


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def at_once(n: int, send: Callable[[requests.Session], requests.Response]) -> list[requests.Response]:
    """``send`` on ``n`` threads, each with its own connection, released together by a barrier; the
    responses (streamed: a ``200`` body is not read yet)."""
    barrier = threading.Barrier(n)
    out: list[requests.Response | BaseException | None] = [None] * n

    def one(i: int) -> None:
        session = requests.Session()
        try:
            barrier.wait(30)
            out[i] = send(session)
        except BaseException as exc:  # reported below
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    for got in out:
        if not isinstance(got, requests.Response):
            raise AssertionError(f"a concurrent POST failed: {got!r}")
    return [r for r in out if isinstance(r, requests.Response)]


def one_ran(resps: list[requests.Response]) -> requests.Response:
    """Exactly one ``200``, the rest ``409`` ``already_answered``; the ``200``."""
    codes = sorted(r.status_code for r in resps)
    assert codes == [200] + [409] * (len(resps) - 1), [(r.status_code, r.text[:200]) for r in resps
                                                        if r.status_code != 200]
    for r in resps:
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "already_answered"
    return next(r for r in resps if r.status_code == 200)


def finished(resp: requests.Response) -> list[dict[str, Any]]:
    events = sse_events(resp.text)
    assert events[-1]["type"] == "RUN_FINISHED", events[-2:]
    return events


# -- finding 1: with a store ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sim() -> Iterator[SimProvider]:
    with SimProvider() as provider:
        yield provider


def _tokens(where: Path) -> Path:
    (where / "tokens").write_text(f"{ALICE} alice\n{BOB} bob\n")
    return where / "tokens"


@pytest.fixture(scope="module", params=["waitress-memory", "waitress-sqlite", "gunicorn-sqlite", "gunicorn-postgres"])
def stored(request: pytest.FixtureRequest, sim: SimProvider, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Server]:
    server, kind = request.param.split("-")
    if server == "gunicorn":
        pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    where = tmp_path_factory.mktemp(request.param)
    extra = ("--auth-tokens", str(_tokens(where)), "--max-concurrent-runs", "16", "--max-runs-per-minute", "1000")
    workers, threads = (2, 4) if server == "gunicorn" else (1, 8)

    def serve(url: str) -> Iterator[Server]:
        with serve_workers(url, sim.url, workers=workers, threads=threads, extra=extra,
                           env_extra={LEDGER_ENV: str(where / "ledger")}) as base:
            yield Server(base, where / "ledger")

    if kind == "postgres":
        yield from serve(request.getfixturevalue("pg_url"))
    else:
        yield from serve("memory:" if kind == "memory" else f"sqlite:///{where / 'threads.db'}")


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres() as url:
        yield url


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_each_store_gives_a_pending_call_to_exactly_one_of_six_claims(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The store method behind it (hookstream.stores: claim_answers), on threads released together; for
    the database stores each thread has its own connection, as worker processes do."""
    url = {"memory": "memory:", "sqlite": f"sqlite:///{tmp_path / 'claims.db'}"}.get(kind) \
        or request.getfixturevalue("pg_url")
    store = open_store(url)
    thread = f"t-claims-{uuid.uuid4().hex[:8]}"
    barrier = threading.Barrier(ANSWERS)
    got: list[bool] = []

    def claim() -> None:
        barrier.wait(30)
        got.append(store.claim_answers(thread, ["call_a", "call_b"]))  # type: ignore[attr-defined]

    threads = [threading.Thread(target=claim) for _ in range(ANSWERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == [False] * (ANSWERS - 1) + [True]
    # all or none: a claim naming one answered call marks nothing, another thread's calls are its own
    assert not store.claim_answers(thread, ["call_c", "call_a"])  # type: ignore[attr-defined]
    assert store.claim_answers(thread, ["call_c"])  # type: ignore[attr-defined]
    assert store.claim_answers(thread + "-other", ["call_a"])  # type: ignore[attr-defined]
    assert store.claim_answers(thread, [])  # type: ignore[attr-defined]
    # deleting a thread forgets its claims
    store.save(thread, [Message.user("hi")])
    assert store.delete(thread)  # type: ignore[attr-defined]
    assert store.claim_answers(thread, ["call_a"])  # type: ignore[attr-defined]


def test_six_concurrent_approvals_of_one_pending_call_run_it_once_on_agui(stored: Server, sim: SimProvider) -> None:
    tag = f"six{uuid.uuid4().hex[:6]}"
    client = Client(stored.base, tag, full=True, token=ALICE)
    client.say("pay 801")
    [interrupt] = client.interrupts
    hold = sim.hold(tag)  # the winner's run waits in its model call: nothing of it is saved yet
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    resps = at_once(ANSWERS, lambda s: s.post(stored.base + "/", json=agui(client.thread_id, client.messages,
                                                                            resume=resume),
                                              headers=headers(), stream=True, timeout=60))
    hold.set()
    winner = one_ran(resps)
    assert any(e["type"] == "TOOL_CALL_RESULT" and e["content"].startswith("sent 801") for e in finished(winner))
    assert stored.spent().count(801) == 1
    # once the winner's run is saved, the same answer again is still a second answer
    late = requests.post(stored.base + "/", json=agui(client.thread_id, client.messages, resume=resume),
                         headers=headers(), timeout=60)
    assert late.status_code == 409 and stored.spent().count(801) == 1
    # and the thread goes on
    client.say("thanks")
    assert stored.spent().count(801) == 1


def test_six_concurrent_approvals_run_it_once_on_api_chat(stored: Server, sim: SimProvider) -> None:
    tag = f"ui{uuid.uuid4().hex[:6]}"
    chat = f"chat-{tag}"
    question = ui_user(f"{tag}| pay 802")
    first = requests.post(stored.base + "/api/chat", json={"id": chat, "messages": [question],
                                                           "trigger": "submit-message"},
                          headers=headers(), timeout=60)
    assert first.status_code == 200, first.text
    answered = answer_approvals(rebuild(frames_to_chunks([first.content])), True)
    body = {"id": chat, "messages": [question, answered], "trigger": "submit-message", "messageId": answered["id"]}
    hold = sim.hold(tag)
    resps = at_once(ANSWERS, lambda s: s.post(stored.base + "/api/chat", json=body, headers=headers(),
                                              stream=True, timeout=60))
    hold.set()
    winner = one_ran(resps)
    done = rebuild(frames_to_chunks([winner.content]), answered)
    [transfer] = [p for p in done["parts"] if p["type"] == "tool-transfer"]
    assert transfer["state"] == "output-available" and transfer["output"].startswith("sent 802")
    assert stored.spent().count(802) == 1
    late = requests.post(stored.base + "/api/chat", json=body, headers=headers(), timeout=60)
    assert late.status_code == 409 and stored.spent().count(802) == 1


def test_six_concurrent_results_of_a_frontend_tool_continue_the_run_once(stored: Server, sim: SimProvider) -> None:
    tag = f"fe{uuid.uuid4().hex[:6]}"
    client = Client(stored.base, tag, full=True, token=ALICE, tools=[CONFIRM])
    client.say("ask shall we?")
    [call_id] = [c["id"] for m in client.messages for c in m.get("toolCalls", ())]
    result = {"id": f"tool-{uuid.uuid4().hex}", "role": "tool", "toolCallId": call_id, "content": "yes"}
    body = {**agui(client.thread_id, [*client.messages, result]), "tools": [CONFIRM]}
    asked = len(sim.requests_of(tag))
    hold = sim.hold(tag)
    resps = at_once(ANSWERS, lambda s: s.post(stored.base + "/", json={**body, "runId": f"run-{uuid.uuid4().hex}"},
                                              headers=headers(), stream=True, timeout=60))
    hold.set()
    finished(one_ran(resps))
    assert len(sim.requests_of(tag)) == asked + 1  # the model was asked to continue once


def test_another_principal_cannot_answer_the_pending_call(stored: Server) -> None:
    client = Client(stored.base, f"bob{uuid.uuid4().hex[:6]}", full=True, token=ALICE)
    client.say("pay 803")
    [interrupt] = client.interrupts
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    resp = requests.post(stored.base + "/", json=agui(client.thread_id, client.messages, resume=resume),
                         headers=headers(BOB), timeout=60)
    assert resp.status_code == 404 and stored.spent().count(803) == 0
    client.approve()
    assert stored.spent().count(803) == 1


def _forged_entry_refused(server: Server, amount: int) -> Client:
    """Alice's ``pay AMOUNT`` waits for its approval; a resume naming that interrupt and one of no pending
    call is refused (400 ``invalid_resume``). Returns alice's client, still waiting."""
    client = Client(server.base, f"mix{uuid.uuid4().hex[:6]}", full=True, token=ALICE)
    client.say(f"pay {amount}")
    [interrupt] = client.interrupts
    resume = [{"interruptId": i, "status": "resolved", "payload": {"approved": True}}
              for i in (interrupt["id"], "approval_call_never_made")]
    resp = requests.post(server.base + "/", json=agui(client.thread_id, client.messages, resume=resume),
                         headers=headers(), timeout=60)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_resume", resp.text
    return client


def test_a_forged_entry_next_to_the_real_answer_uses_nothing_up(stored: Server) -> None:
    """A resume naming the pending call and an interrupt of no pending call is refused before the answer
    is claimed (400 ``invalid_resume``): the owner's own answer afterwards still runs the tool, once."""
    client = _forged_entry_refused(stored, 804)
    assert stored.spent().count(804) == 0
    client.approve()
    assert stored.spent().count(804) == 1


# -- finding 3: without a store -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stateless(sim: SimProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """waitress, no store, alice and bob."""
    where = tmp_path_factory.mktemp("stateless")
    extra = ("--auth-tokens", str(_tokens(where)), "--max-concurrent-runs", "16", "--max-runs-per-minute", "1000")
    with serve_workers(None, sim.url, workers=1, threads=8, extra=extra,
                       env_extra={LEDGER_ENV: str(where / "ledger")}) as base:
        yield Server(base, where / "ledger")


def test_a_signed_approval_runs_once_and_a_replay_runs_nothing(stateless: Server) -> None:
    client = Client(stateless.base, f"replay{uuid.uuid4().hex[:6]}", full=True, token=ALICE)
    client.say("pay 811")
    [interrupt] = client.interrupts
    assert interrupt["id"].startswith(f"approval_{interrupt['toolCallId']}.")
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    sent = list(client.messages)
    resps = at_once(ANSWERS, lambda s: s.post(stateless.base + "/", json=agui(client.thread_id, sent, resume=resume),
                                              headers=headers(), stream=True, timeout=60))
    finished(one_ran(resps))
    assert stateless.spent().count(811) == 1
    for _ in range(3):  # resending it later
        again = requests.post(stateless.base + "/", json=agui(client.thread_id, sent, resume=resume),
                              headers=headers(), timeout=60)
        assert again.status_code == 409 and again.json()["error"]["code"] == "already_answered"
    # another principal sending the same body: the id was handed to alice
    bob = requests.post(stateless.base + "/", json=agui(client.thread_id, sent, resume=resume),
                        headers=headers(BOB), timeout=60)
    assert bob.status_code == 400 and bob.json()["error"]["code"] == "untrusted_tool_call"
    assert stateless.spent().count(811) == 1


def test_another_principal_cannot_use_an_unused_approval(stateless: Server) -> None:
    client = Client(stateless.base, f"steal{uuid.uuid4().hex[:6]}", full=True, token=ALICE)
    client.say("pay 812")
    [interrupt] = client.interrupts
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    bob = requests.post(stateless.base + "/", json=agui(client.thread_id, client.messages, resume=resume),
                        headers=headers(BOB), timeout=60)
    assert bob.status_code == 400 and stateless.spent().count(812) == 0
    client.approve()  # alice's own answer still works: bob's attempt used nothing
    assert stateless.spent().count(812) == 1


def test_a_forged_entry_next_to_a_signed_approval_uses_nothing_up(stateless: Server) -> None:
    client = _forged_entry_refused(stateless, 814)
    client.approve()
    assert stateless.spent().count(814) == 1


def test_a_signed_approval_on_api_chat_runs_once(stateless: Server) -> None:
    chat = f"chat-{uuid.uuid4().hex[:8]}"
    question = ui_user(f"{chat}| pay 813")
    first = requests.post(stateless.base + "/api/chat", json={"id": chat, "messages": [question],
                                                              "trigger": "submit-message"},
                          headers=headers(), timeout=60)
    answered = answer_approvals(rebuild(frames_to_chunks([first.content])), True)
    body = {"id": chat, "messages": [question, answered], "trigger": "submit-message", "messageId": answered["id"]}
    resps = at_once(ANSWERS, lambda s: s.post(stateless.base + "/api/chat", json=body, headers=headers(),
                                              stream=True, timeout=60))
    winner = one_ran(resps)
    frames_to_chunks([winner.content])
    assert stateless.spent().count(813) == 1
    assert requests.post(stateless.base + "/api/chat", json=body, headers=headers(), timeout=60).status_code == 409
    assert requests.post(stateless.base + "/api/chat", json=body, headers=headers(BOB), timeout=60).status_code == 400
    assert stateless.spent().count(813) == 1


def test_stateless_gunicorn_workers_share_the_used_approvals(tmp_path: Path) -> None:
    """`serve --demo --workers 2` keeps no store: the file of used ids is made before gunicorn forks, so
    an approval used on one worker is refused on the other (each POST on a new connection)."""
    pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    (tmp_path / "tokens").write_text(f"{ALICE} alice\n{BOB} bob\n")
    question = {"id": "u1", "role": "user", "content": "What's the weather in Paris?"}
    with serve_demo_process("--delay", "0", "--workers", "2", "--threads", "4", "--auth-tokens",
                            str(tmp_path / "tokens"), "--max-concurrent-runs", "16") as url:
        base = url.rstrip("/")
        for n in range(2):
            thread = f"t-demo-{n}"
            asked = sse_events(requests.post(base + "/", json=agui(thread, [question]), headers=headers(),
                                              timeout=60).text)
            [interrupt] = asked[-1]["outcome"]["interrupts"]
            resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
            body = agui(thread, messages_after([question], asked), resume=resume)
            resps = at_once(ANSWERS, lambda s, body=body: s.post(  # type: ignore[misc]
                base + "/", json={**body, "runId": f"run-{uuid.uuid4().hex}"}, headers=headers(), stream=True,
                timeout=60))
            assert finished(one_ran(resps))[-1]["outcome"]["type"] == "success"
            for _ in range(4):
                with requests.Session() as fresh:
                    assert fresh.post(base + "/", json=body, headers=headers(), timeout=60).status_code == 409
            assert requests.post(base + "/", json=body, headers=headers(BOB), timeout=60).status_code == 400


def test_the_signature_binds_the_principal_and_expires() -> None:
    signer = ApprovalSigner.from_setting("a-secret-of-sixteen-bytes-or-more")
    call = ToolCallPart("call_1", "transfer", {"amount": 5})
    signed = signer.approval_id("t", "call_1", "transfer", {"amount": 5}, "alice", issued=1_000_000)
    assert signer.verify(signed, "t", call, "alice", now=1_000_000 + signer.seconds)
    assert not signer.verify(signed, "t", call, "bob", now=1_000_010)
    assert not signer.verify(signed, "t", call, None, now=1_000_010)
    assert not signer.verify(signed, "t", call, "alice", now=1_000_001 + signer.seconds)  # expired
    assert not signer.verify(signed, "t", call, "alice", now=1_000_000 - 3600)  # from the future
    # the issue time cannot be moved: it is signed
    moved = signed.replace(".1000000.", f".{1_000_000 + 3600}.")
    assert moved != signed and not signer.verify(moved, "t", call, "alice", now=1_000_000 + 3600)
    for bad in ("", "approval_call_1", "approval_call_1.x.y", f"approval_call_1.{'9' * 13}.{signed[-43:]}"):
        assert not signer.verify(bad, "t", call, "alice", now=1_000_010)


def test_an_earlier_turns_approval_in_the_history_is_not_a_second_answer() -> None:
    """With a store, the same approval sent again is refused (409), but a full-history request whose
    last turn is new, or the user's, may carry old approvals (an AI SDK client keeps them on its parts)."""
    from hookstream import ToolResultPart
    from hookstream.errors import AlreadyAnsweredError
    from hookstream_server.trust import vet

    call = ToolCallPart("call_1", "transfer", {"amount": 1})
    approved = ToolCallPart("call_1", "transfer", {"amount": 1},
                            provider_metadata={"hookstream": {"approval": {"approved": True}}})
    question, reply = Message.user("pay 1"), Message.user("thanks")
    result = Message("tool", [ToolResultPart("call_1", "transfer", "sent 1")])
    history = [question, Message("assistant", [call]), result, Message.assistant("Done."), reply]
    again = [question, Message("assistant", [approved])]
    with pytest.raises(AlreadyAnsweredError):
        vet(history[:3], again, None, thread_id="t", new=[], signer=None)
    with pytest.raises(AlreadyAnsweredError):
        vet(history, [question], [{"interruptId": "approval_call_1", "status": "resolved"}], thread_id="t", new=[],
            signer=None)
    later = [question, Message("assistant", [approved]), result, Message.assistant("Done."), reply]
    claims: list[str] = []
    vet(history, later, None, thread_id="t", new=[], signer=None, claims=claims)
    assert claims == []
