"""Conversations that last (issue 25): listing and deleting threads in every store (SQLite, a real
PostgreSQL, memory), the migration of a store made by the previous release, history windows that never
split a tool call from its result, summaries, and a restarted process resuming an approval from the
thread and the store alone."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_kit import text_body
from hookstream import Message, ToolCallPart, ToolResultPart, chat, get_model
from hookstream.stores import History, InMemoryStore, open_store
from hookstream.testing import LoopbackServer, Response
from store_kit import postgres

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory:"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'c.db'}"
    else:
        with postgres() as url:
            yield url


def test_list_and_delete_threads(store_url: str) -> None:
    store = open_store(store_url)
    store.save("a", [Message.user("first question"), Message("assistant", [])])
    store.save("b", [Message.system("sys"), Message.user("second\nquestion " + "x" * 200)])
    store.save("a", [Message.user("a follow-up")])  # a is now the most recently updated
    listed = store.list_threads()  # type: ignore[attr-defined]
    assert [t.id for t in listed] == ["a", "b"]
    assert listed[0].title == "first question" and listed[0].message_count == 3
    assert listed[1].title.startswith("second question x") and len(listed[1].title) == 80
    assert listed[0].created is not None and listed[0].updated >= listed[0].created
    assert [t.id for t in store.list_threads(limit=1)] == ["a"]  # type: ignore[attr-defined]
    assert [t.id for t in store.list_threads(before=listed[0].updated)] == ["b"]  # type: ignore[attr-defined]
    assert store.delete("a") is True and store.delete("a") is False  # type: ignore[attr-defined]
    assert [t.id for t in store.list_threads()] == ["b"] and store.load("a") == []  # type: ignore[attr-defined]


def test_a_store_made_by_the_previous_release_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the previous release's schema, with one thread in it
        conn.execute("CREATE TABLE hookstream_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT "
                     "NULL, message_key TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (thread_id, message_key))")
    InMemoryStore()  # nothing shared
    # Message.user("from before") as that release stored it.
    body = '{"role":"user","parts":[{"text":"from before","provider_metadata":null,"kind":"text"}],"id":null}'
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO hookstream_messages (thread_id, message_key, body) VALUES (?, ?, ?)",
                     ("old", "m1", body))
    store = open_store(f"sqlite:///{path}")
    (info,) = store.list_threads()  # type: ignore[attr-defined]
    assert (info.id, info.title, info.created, info.message_count) == ("old", "from before", None, 1)
    store.save("old", [Message.user("after the upgrade")])
    assert [m.text for m in store.load("old")] == ["from before", "after the upgrade"]


def _turns() -> list[Message]:
    out: list[Message] = []
    for i in range(4):
        out += [Message.user(f"question {i} " + "w" * 40),
                Message("assistant", [ToolCallPart(f"c{i}", "look", {"q": i})]),
                Message("tool", [ToolResultPart(f"c{i}", "look", "r" * 40)]),
                Message.assistant(f"answer {i}") if hasattr(Message, "assistant") else
                Message("assistant", [__import__("hookstream").TextPart(f"answer {i}")])]
    return out


@pytest.mark.parametrize("policy", [History.last_messages(3), History.last_messages(6), History.last_tokens(30),
                                    History.last_tokens(1)])
def test_windows_never_split_a_tool_call_from_its_result(policy: History) -> None:
    sent, summary = policy.apply(_turns())
    assert summary is None and sent and sent[0].role == "user"
    calls = {c.id for m in sent for c in m.tool_calls}
    results = {r.tool_call_id for m in sent for r in m.tool_results}
    assert calls == results
    assert sent[-1].text == "answer 3"


def test_chat_sends_the_window_and_keeps_every_message(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    store.save("t", _turns())
    with LoopbackServer([Response(text_body("fine"))]) as srv:
        chat(get_model("openai:m", base_url=srv.url + "/v1", api_key="k"), "and now?", memory=store, thread_id="t",
             history=History.last_messages(4)).result()
        sent = srv.requests[0].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert len(store.load("t")) == 16 + 2  # the originals stay, plus this turn


def test_summarize_older_turns_with_a_named_model(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    store.save("t", _turns())
    with LoopbackServer([Response(text_body("They asked four questions."))]) as summarizer, \
            LoopbackServer([Response(text_body("ok")), Response(text_body("ok again"))]) as main:
        summary_model = get_model("openai:small", base_url=summarizer.url + "/v1", api_key="k")
        model = get_model("openai:m", base_url=main.url + "/v1", api_key="k")
        policy = History.summarize(summary_model, keep_last=4)
        chat(model, "next", memory=store, thread_id="t", history=policy).result()
        chat(model, "next again", memory=store, thread_id="t", history=policy).result()
        first, second = (r.json()["messages"] for r in main.requests)
        asks = [r.json()["messages"] for r in summarizer.requests]
    assert first[0]["role"] == "system" and "They asked four questions." in first[0]["content"]
    assert [m["role"] for m in first[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    # The second run drops a turn the first summary does not cover: a new summary is written from the
    # old one and that turn (not from all the originals again).
    assert len(asks) == 2 and "Summary so far: Summary of the earlier conversation" in asks[1][1]["content"]
    assert "question 0" not in asks[1][1]["content"] and "question 3" in asks[1][1]["content"]
    assert second[0]["role"] == "system" and [m["role"] for m in second[1:]] == ["user", "assistant", "user"]
    stored = store.load("t")
    assert sum(1 for m in stored if m.role == "system") == 2 and len([m for m in stored if m.role == "user"]) == 6
    # With nothing more to drop, the stored summary is reused.
    sent, new = History.summarize(summary_model, keep_last=4).apply(stored)
    summary_of = (sent[0].parts[0].provider_metadata or {})["hookstream"]["summary_of"]  # what the summary marks
    assert new is None and summary_of == 16 and [m.role for m in sent[1:]] == ["user", "assistant"] * 2


def test_a_restarted_process_resumes_an_approval_from_the_thread_and_store_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'approve.db'}"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from hookstream import chat, get_model, tool
        from hookstream.stores import open_store
        from hookstream.testing import LoopbackServer, Response
        from engine_kit import text_body, tool_body

        @tool(needs_approval=True)
        def transfer(amount: int) -> str:
            '''Send money.

            Args:
                amount: how much
            '''
            return f"sent {{amount}}"

        store = open_store({url!r})
        step = sys.argv[1]
        if step == "ask":
            with LoopbackServer([Response(tool_body(("call_9", "transfer", {{"amount": 9}})))]) as srv:
                r = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key="k"), "pay 9", tools=[transfer],
                         memory=store, thread_id="T").result()
            print(r.outcome)
        else:
            with LoopbackServer([Response(text_body("Paid."))]) as srv:
                model = get_model("openai:m", base_url=srv.url + "/v1", api_key="k")
                pending = chat(model, None, tools=[transfer], memory=store, thread_id="T").result()
                ids = [p.approval_id for p in pending.pending_approvals]
                done = chat(model, None, tools=[transfer], memory=store, thread_id="T",
                            resume={{"approvals": {{i: True for i in ids}}}}).result()
                print(pending.outcome, ids, done.outcome, done.text, len(srv.requests))
    """)
    first = subprocess.run([sys.executable, "-c", script, "ask"], capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and first.stdout.strip() == "interrupt", first.stderr
    second = subprocess.run([sys.executable, "-c", script, "resume"], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "interrupt ['approval_call_9'] success Paid. 1"
    roles = [m.role for m in open_store(url).load("T")]
    assert roles == ["user", "assistant", "tool", "assistant"]
