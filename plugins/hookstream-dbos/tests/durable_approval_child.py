"""One process of the durable-approval tests: ``python durable_approval_child.py SERVER_URL RUN_ID DB_URL DIR
MODE [hold]``. The scripted loop calls ``tool_a``, then ``pay`` (which needs approval), then answers.

* ``start``: run it; it ends waiting for ``pay``'s approval: ``DIR/waiting`` gets the outcome and the
  approval ids; with ``hold`` the process then waits to be killed (its workflow detached: nothing of it waits here).
* ``approve`` / ``deny``: run the same chat again (replayed from the journal, nothing sent: it ends
  waiting again, which gives the messages to resume), then answer with ``chat(..., resume=...)``; the
  answering run's outcome, text and error go to ``DIR/answer-N.txt``. With ``hold``, ``pay`` creates
  ``DIR/pay-running`` and waits to be killed.

Tools append their name and :func:`hookstream_dbos.attempt` to ``DIR/tools.log``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from durable_kit import log_attempt
from hookstream import chat, get_model, tool
from hookstream_dbos import Durable

url, run_id, db, folder, mode = sys.argv[1:6]
hold = "hold" in sys.argv[6:]
out = Path(folder)


def _log(name: str) -> None:
    log_attempt(out, name)


@tool
def tool_a(n: int) -> str:
    """First tool."""
    _log("tool_a")
    return f"a{n}"


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay once, when approved."""
    _log("pay")
    if hold:
        (out / "pay-running").touch()
        threading.Event().wait(600)  # killed here
    return f"paid {amount}"


model = get_model("openai:gpt-4o-mini", base_url=url + "/v1", api_key="test-key")
tools = [tool_a, pay]
first = chat(model, "Run a, then pay 5.", tools=tools, plugins=[Durable(run_id, db)]).result()
if mode == "start":
    ids = " ".join(p.approval_id for p in first.pending_approvals)
    # Written whole, then renamed: the test kills this process as soon as the file exists.
    (out / "waiting.tmp").write_text(f"{first.outcome} {ids}", "utf-8")
    (out / "waiting.tmp").replace(out / "waiting")
    print(first.outcome, ids, flush=True)
    if hold:
        threading.Event().wait(600)  # killed here, long after its workflow detached
    sys.exit(0)
assert first.outcome == "interrupt", (first.outcome, first.error)
answers = {p.approval_id: mode == "approve" for p in first.pending_approvals}
result = chat(model, tools=tools, resume=first.resume(answers), plugins=[Durable(run_id, db)]).result()
n = len(list(out.glob("answer-*.txt")))
(out / f"answer-{n}.txt").write_text(f"{result.outcome}\n{result.text}\n{result.error!r}", "utf-8")
print(result.outcome, result.text, flush=True)
