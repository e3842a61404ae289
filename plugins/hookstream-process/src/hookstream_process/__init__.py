"""``hookstream process EVENTS.jsonl``: an AG-UI event log replayed through the stream processor. The command
is in :mod:`hookstream_process.process`, loaded when it runs."""

__all__: list[str] = []
