"""One durable run of the scripted three-step tool loop, in a process of its own (the crash tests
SIGKILL it): ``python durable_child.py SERVER_URL RUN_ID DB_URL DIR [hold]``.

``tool_a`` and ``tool_b`` append their name and :func:`hookstream_dbos.attempt` to ``DIR/tools.log``;
with ``hold``, ``tool_b`` creates ``DIR/b-running`` (the barrier the test waits for) and then waits to
be killed; with ``refuse``, ``tool_b`` raises :class:`RerunRefused` when it ran before. The run's
final text goes to ``DIR/answer-N.txt``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from durable_kit import log_attempt
from hookstream import chat, get_model, tool
from hookstream_dbos import Durable, RerunRefused, attempt

url, run_id, db, folder = sys.argv[1:5]
hold = "hold" in sys.argv[5:]
refuse = "refuse" in sys.argv[5:]
out = Path(folder)


def _log(name: str) -> None:
    log_attempt(out, name)


@tool
def tool_a(n: int) -> str:
    """First tool."""
    _log("tool_a")
    return f"a{n}"


@tool
def tool_b(n: int) -> str:
    """Second tool."""
    _log("tool_b")
    if refuse and attempt() > 1:
        raise RerunRefused("tool_b may already have run before the crash; check before trying again")
    if hold:
        (out / "b-running").touch()
        time.sleep(600)  # killed here
    return f"b{n}"


model = get_model("openai:gpt-4o-mini", base_url=url + "/v1", api_key="test-key")
result = chat(model, "Run a then b.", tools=[tool_a, tool_b], plugins=[Durable(run_id, db)]).result()
n = len(list(out.glob("answer-*.txt")))
(out / f"answer-{n}.txt").write_text(f"{result.outcome}\n{result.text}\n{result.error!r}", "utf-8")
print(result.outcome, result.text)
