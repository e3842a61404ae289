"""Which part of a durable run a new run of its id drives (``hookstream_dbos.waits.decide``), from journal
rows alone: the rules behind the approval tests, one by one."""

from __future__ import annotations

from typing import Any

import pytest
from hookstream import Resume
from hookstream_dbos import AnswerRefused, NotWaitingError
from hookstream_dbos.waits import canonical_answer, decide, message_key, read_history

YES = canonical_answer(Resume(approvals={"approval_call_1": True}))
NO = canonical_answer(Resume(approvals={"call_1": False}))


def _wait(n: int, deadline: float = 1e12) -> tuple[str, Any]:
    return f"wait:{n}", {"wait": n, "pending": ["call_1"], "deadline": deadline, "prefix": "", "summary": {}}


def _answer(n: int, answer: Any, prefix: str) -> tuple[str, Any]:
    return "DBOS.recv", {"kind": "answer", "wait": n, "answers": answer, "prefix": prefix}


FIRST = [("model_call:1", {}), ("tool_call:1:a", {}), ("model_call:2", {})]


def test_canonical_answers_name_calls_either_way() -> None:
    assert YES == {"approvals": {"call_1": True}, "tool_outputs": {}}
    assert canonical_answer(Resume()) is None and canonical_answer(None) is None
    assert message_key("r", 0, YES) == message_key("r", 0, NO) == "hookstream:r:wait:0:call_1"


def test_a_waiting_run() -> None:
    history = read_history(None, [*FIRST, _wait(0), ("DBOS.sleep", 1.0), ("DBOS.recv", None)])  # resumed, no answer
    assert history.waiting and len(history.segments) == 1
    assert decide("r", history, None, finished=False).kind == "inline"  # the first run again: replays
    plan = decide("r", history, YES, finished=False)
    assert (plan.kind, plan.prefix, plan.wait) == ("answer", "s1:", 0)
    with pytest.raises(AnswerRefused, match="expired"):
        decide("r", history, YES, finished=False, expired=True)
    assert decide("r", history, None, finished=False, expired=True).kind == "replay"


def test_an_answered_run() -> None:
    history = read_history(None, [*FIRST, _wait(0), _answer(0, YES, "s1:"), ("s1:tool_call:0:call_1", {})])
    assert not history.waiting and [s.prefix for s in history.segments] == ["", "s1:"]
    assert decide("r", history, YES, finished=False).kind == "live"  # the answering run after a crash
    assert decide("r", history, YES, finished=True).kind == "replay"  # ... once finished
    assert decide("r", history, None, finished=False).kind == "replay"  # the first run again
    with pytest.raises(AnswerRefused, match="already answered"):
        decide("r", history, NO, finished=False)
    with pytest.raises(AnswerRefused, match="finished"):
        decide("r", history, NO, finished=True)


def test_a_run_that_never_waited() -> None:
    history = read_history(None, FIRST)
    assert decide("r", history, None, finished=False).kind == "live"
    with pytest.raises(NotWaitingError):
        decide("r", history, YES, finished=False)
    started_with_an_answer = read_history(YES, FIRST)
    assert decide("r", started_with_an_answer, YES, finished=False).kind == "live"


def test_a_past_deadline_counts_as_expired() -> None:
    history = read_history(None, [*FIRST, _wait(0, deadline=100.0)])
    assert history.expired(100.0) and not history.expired(99.0)
