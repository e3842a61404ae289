"""The agent loop: the engine (``engine``) and the values it hands out and takes back (``values``),
tools (``tools``, ``tool_schema``, ``tool_args``), their executors and the tool phase, stop
conditions, time limits, structured output, run observers, and agents as tools (``agent``)."""
