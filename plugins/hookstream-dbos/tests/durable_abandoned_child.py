"""A process that leaves a durable run open at exit: ``python durable_abandoned_child.py RUN_ID DB_URL``.
Its consumer reads the run up to its first tool result and stops there, the stream still referenced by
a module global (never closed before the interpreter exits), so the run's workflow waits on a DBOS
thread for steps that never come. The process must exit all the same (the workflow detaches)."""

from __future__ import annotations

import sys

from hookstream import chat, get_model, tool
from hookstream.events import ToolCallResult
from hookstream.testing import ToolCall
from hookstream_dbos import Durable


@tool
def look(n: int) -> str:
    """Look something up."""
    return f"found {n}"


model = get_model("test", replies=[ToolCall("look", {"n": 1}, id="call_1"), "Found 1."])
stream = chat(model, "Look up 1.", tools=[look], plugins=[Durable(sys.argv[1], sys.argv[2])])
events = iter(stream)
for event in events:
    if isinstance(event, ToolCallResult):
        break
print("left open", flush=True)
