"""One durable run of the scripted three-step tool loop, in a process of its own (the crash tests
SIGKILL it): ``python durable_child.py SERVER_URL RUN_ID DB_URL DIR [hold]``.

``tool_a`` and ``tool_b`` append their name and :func:`hookstream_dbos.attempt` to ``DIR/tools.log``;
with ``hold``, ``tool_b`` creates ``DIR/b-running`` (the barrier the test waits for) and then waits to
be killed; with ``refuse``, ``tool_b`` raises :class:`RerunRefused` when it ran before. The run's
final text goes to ``DIR/answer-N.txt``, its events (AG-UI JSON lines, as they stream) to
``DIR/events-N.jsonl`` (N: the attempt); ``tool_a`` streams two progress events (``CUSTOM`` ``progress``) while it runs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from durable_kit import log_attempt
from hookstream import LoopSettings, ToolContext, chat, get_model, tool
from hookstream.events import Custom, to_json
from hookstream_dbos import Durable, RerunRefused, attempt

url, run_id, db, folder = sys.argv[1:5]
hold = "hold" in sys.argv[5:]
refuse = "refuse" in sys.argv[5:]
out = Path(folder)


def _log(name: str) -> None:
    log_attempt(out, name)


@tool
def tool_a(n: int, ctx: ToolContext) -> str:
    """First tool (streams two progress events while it runs)."""
    _log("tool_a")
    for done in (1, 2):
        ctx.emit(Custom("progress", {"done": done, "of": 2}))
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
# The run's AG-UI ids of its own, the same in every attempt: its events can be compared byte for byte.
stream = chat(model, "Run a then b.", tools=[tool_a, tool_b], plugins=[Durable(run_id, db)],
              thread_id=f"thread-{run_id}", loop=LoopSettings(run_id=run_id))
with open(out / f"events-{len(list(out.glob('events-*.jsonl')))}.jsonl", "w", encoding="utf-8") as events:
    for ev in stream:  # each event as the run streams it (a kill keeps what came before it)
        events.write(to_json(ev) + "\n")
        events.flush()
result = stream.result()
n = len(list(out.glob("answer-*.txt")))
(out / f"answer-{n}.txt").write_text(f"{result.outcome}\n{result.text}\n{result.error!r}", "utf-8")
print(result.outcome, result.text)
