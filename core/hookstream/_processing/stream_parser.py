"""Raw streams: the ``StreamParser`` extension point for streams that are not AG-UI events.

From the older TanStack AI StreamProcessor document ("Custom stream parsers"): a parser turns a custom
raw stream (a proprietary SSE feed, a log, a test fixture) into simple :class:`RawChunk` objects — text
deltas and tool-call deltas addressed by ``index`` as in OpenAI-style streams — and
:func:`raw_chunks_to_events` turns those into AG-UI events the :class:`~hookstream.StreamProcessor`
consumes. A raw tool call has no end marker, so its completion is detected when the
next index starts, when a text chunk arrives, or when the stream ends (``TOOL_CALL_END`` is emitted
then). The block grammar (opening and closing text messages and tool calls) is the adapters' own
:class:`~hookstream.plugin.StreamBuilder`; this module only maps raw chunks onto it.

Use::

    p = StreamProcessor()
    result = p.process(parse_raw(MyParser(), raw_lines))

Thread safety: generators; consume each from one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from .._events import BaseEvent
from .._ids import new_id
from .._stream.builder import StreamBuilder
from .._stream.provider import CallContext

__all__ = ["RawChunk", "StreamParser", "parse_raw", "raw_chunks_to_events"]


@attrs.define(slots=True, frozen=True)
class RawChunk:
    """One piece of a raw stream.

    ``kind``: ``text`` (``content`` is a text delta), ``tool-call`` (``index`` addresses the call;
    ``tool_call_id``/``name`` arrive with its first chunk, ``arguments`` is an arguments-text delta),
    ``done`` (``finish_reason``), or ``error`` (``content`` is the message).
    """

    kind: Literal["text", "tool-call", "done", "error"]
    content: str | None = None
    index: int | None = None
    tool_call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    finish_reason: str | None = None


@runtime_checkable
class StreamParser(Protocol):
    """Turns a raw stream into :class:`RawChunk` objects. ``parse`` may raise
    :class:`~hookstream.errors.MalformedChunkError` for input it cannot read; :func:`parse_raw` then
    ends the run with ``RUN_ERROR`` and keeps what arrived."""

    def parse(self, raw: Iterable[Any]) -> Iterator[RawChunk]: ...


def parse_raw(parser: StreamParser, raw: Iterable[Any]) -> Iterator[BaseEvent]:
    """``raw_chunks_to_events(parser.parse(raw))``."""
    return raw_chunks_to_events(parser.parse(raw))


def raw_chunks_to_events(chunks: Iterable[RawChunk], thread_id: str = "raw", run_id: str | None = None
                         ) -> Iterator[BaseEvent]:
    """AG-UI events for ``chunks``: one run, text blocks and tool calls, ``RUN_FINISHED`` at the end
    (or ``RUN_ERROR`` for an ``error`` chunk or a parser exception, open blocks left as they are)."""
    run = run_id or new_id("run")
    b = StreamBuilder(CallContext(thread_id, run))
    yield from b.start()
    open_call: str | None = None  # id of the tool call still receiving arguments
    open_index: int | None = None
    ids: dict[int, str] = {}
    finish: str | None = None
    try:
        for chunk in chunks:
            if chunk.kind == "text":
                if open_call is not None:  # a text chunk completes the tool call before it
                    yield from b.tool_end(open_call)
                    open_call = open_index = None
                if chunk.content:
                    yield from b.text(chunk.content)
            elif chunk.kind == "tool-call":
                index = chunk.index if chunk.index is not None else 0
                yield from b.end_text()
                if index != open_index:
                    if open_call is not None:  # the next index starts: the previous call is complete
                        yield from b.tool_end(open_call)
                        open_call = open_index = None
                    if index in ids:
                        continue  # a late delta for a call already ended: dropped, as the document says
                    call_id = ids[index] = chunk.tool_call_id or f"{run}-call-{index}"
                    yield from b.tool_start(call_id, chunk.name or "")
                    open_call, open_index = call_id, index
                if chunk.arguments:
                    yield from b.tool_args(ids[index], chunk.arguments)
            elif chunk.kind == "done":
                finish = chunk.finish_reason or finish
            elif chunk.kind == "error":
                yield from b.error(chunk.content or "raw stream error", code="stream_error")
                return
    except Exception as exc:  # the parser failed: end the run, keep what arrived
        code = getattr(exc, "code", "malformed_chunk")
        yield from b.error(f"{type(exc).__name__}: {exc}", code=code if isinstance(code, str) else "malformed_chunk")
        return
    # The stream ends: open text and an open tool call are complete.
    yield from b.finish(finish or ("tool_calls" if ids else "stop"), None, None)
