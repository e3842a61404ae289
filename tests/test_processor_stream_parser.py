"""The StreamParser extension point: a custom raw stream to AG-UI events to UI messages."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from hookstream import StreamProcessor
from hookstream._processing.stream_parser import RawChunk, StreamParser, parse_raw
from hookstream.errors import MalformedChunkError
from hookstream.testing.grammar import check_events


class PipeParser:
    """A toy line protocol: ``T|text``, ``C|index|id|name|args``, ``D|reason``."""

    def parse(self, raw: Iterable[Any]) -> Iterator[RawChunk]:
        for line in raw:
            kind, _, rest = line.partition("|")
            if kind == "T":
                yield RawChunk("text", content=rest)
            elif kind == "C":
                index, tid, name, args = rest.split("|", 3)
                yield RawChunk("tool-call", index=int(index), tool_call_id=tid or None, name=name or None,
                               arguments=args)
            elif kind == "D":
                yield RawChunk("done", finish_reason=rest)
            else:
                raise MalformedChunkError(f"unknown line kind {kind!r}", line)


def test_tool_call_completion_detected_by_next_index_text_and_end() -> None:
    assert isinstance(PipeParser(), StreamParser)
    raw = ["T|Let me look.", 'C|0|a|f|{"x":', "C|0|||1}", 'C|1|b|g|{"y": 2}', "T|and ", "C|2|c|h|{}", "D|tool_calls"]
    events = list(parse_raw(PipeParser(), raw))
    check_events(events, form="call")
    types = [e.type for e in events]
    # a ends when index 1 starts, b when text arrives, c when the stream ends
    assert types.count("TOOL_CALL_END") == 3
    assert types.index("TOOL_CALL_END") < types.index("TOOL_CALL_START", types.index("TOOL_CALL_START") + 1)
    p = StreamProcessor()
    r = p.process(events)
    assert [(c.id, c.arguments) for c in r.tool_calls] == [("a", {"x": 1}), ("b", {"y": 2}), ("c", {})]
    assert [part.type for part in p.messages[0].parts] == ["text", "tool-call", "tool-call", "text", "tool-call"]
    assert r.finish_reason == "tool_calls"


def test_parser_failure_ends_with_run_error_keeping_text() -> None:
    events = list(parse_raw(PipeParser(), ["T|so far", "X|garbage"]))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "malformed_chunk"  # type: ignore[attr-defined]
    r = StreamProcessor().process(events)
    assert r.content == "so far" and r.finish_reason == "error"
    json.dumps([e.type for e in events])
