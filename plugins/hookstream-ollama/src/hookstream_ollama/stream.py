"""Map Ollama's ``/api/chat`` NDJSON stream to AG-UI events.

Each line is a ``ChatResponse`` (Ollama API reference, ``docs/api.md``, "Generate a chat
completion", streamed responses)::

    {"model", "created_at", "message": {"role": "assistant", "content": str, "thinking": str,
     "tool_calls": [{"id"?, "function": {"index"?, "name", "arguments": {...}}}], "images"?},
     "done": false}
    ...
    {"model", "created_at", "message": {...}, "done": true, "done_reason": "stop" | "length" | "load"
     | "unload", "total_duration": ns, "load_duration": ns, "prompt_eval_count": tokens,
     "prompt_eval_duration": ns, "eval_count": tokens, "eval_duration": ns}

or, when the model fails mid-answer, ``{"error": str}``.

* ``message.thinking`` -> ``REASONING_*``; ``message.content`` -> text.
* ``message.tool_calls`` arrive whole, one or more per line: each becomes ``TOOL_CALL_START``, one
  ``TOOL_CALL_ARGS`` with the arguments as JSON text, and ``TOOL_CALL_END`` with the parsed ``input``.
  Ollama gives ids only in recent versions; a call without one gets ``call_{run_id}_{n}``.
* The ``done: true`` line ends the call: ``done_reason`` raw; normalised ``stop`` (``tool_calls`` when
  the model called tools), ``length``; ``prompt_eval_count`` / ``eval_count`` -> usage input / output
  tokens; the durations (nanoseconds) ride on ``RUN_FINISHED`` metadata ``{"ollama": {...}}``.
* ``{"error": ...}`` -> ``RUN_ERROR`` code ``ollama_error`` after what arrived. A line that is not a
  JSON object raises :class:`~hookstream.errors.MalformedChunkError`. A stream that ends without the
  ``done`` line ends in ``RUN_ERROR connection_closed`` (the core's rule).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Usage
from hookstream.plugin import CallContext, StreamBuilder

__all__ = ["FINISH_REASONS", "parse_stream"]

_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


FINISH_REASONS: dict[str, str] = {"stop": "stop", "length": "length", "load": "stop", "unload": "stop"}
"""Ollama ``done_reason`` -> normalised finish reason, under the builder's one policy
(:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`): ``stop`` (and ``load`` / ``unload``,
a model loaded or unloaded without generating, or a missing or unknown value) is ``tool_calls`` when
the model called tools."""


def parse_stream(values: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
    """AG-UI events (adapter grammar) for the parsed NDJSON ``values`` of one ``/api/chat`` stream."""
    b = StreamBuilder(context, FINISH_REASONS)
    yield from b.start()
    calls = 0
    for value in values:
        if type(value) is not dict:
            raise MalformedChunkError(f"NDJSON line is not a JSON object: {str(value)[:80]!r}", str(value))
        if "error" in value:
            yield from b.error(str(value["error"]), code="ollama_error")
            return
        message = value.get("message")
        if type(message) is dict:
            thinking = message.get("thinking")
            if thinking and type(thinking) is str:
                yield from b.reasoning(thinking)
            content = message.get("content")
            if content and type(content) is str:
                yield from b.text(content)
            for call in message.get("tool_calls") or ():
                yield from _tool_call(b, call, f"call_{context.run_id}_{calls}")
                calls += 1
        if value.get("done"):
            yield from _finish(b, value)
            return


def _tool_call(b: StreamBuilder, call: Any, fallback_id: str) -> Iterator[BaseEvent]:
    """One whole tool call (``{"id"?, "function": {"name", "arguments"}}``) as START, one ARGS, END;
    ``fallback_id`` when Ollama gave none."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise MalformedChunkError(f"tool call without a function name: {call!r}"[:200], json.dumps(call))
    arguments = function.get("arguments")
    if isinstance(arguments, str):  # some OpenAI-minded proxies send JSON text
        text = arguments
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = None
    else:
        arguments = arguments if isinstance(arguments, dict) else {}
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    call_id = call.get("id") or fallback_id
    yield from b.tool_start(call_id, function["name"])
    if text.strip():  # whitespace is no arguments: the builder then sends ``input`` itself
        yield from b.tool_args(call_id, text)
    yield from b.tool_end(call_id, input=arguments)


def _finish(b: StreamBuilder, value: dict[str, Any]) -> list[BaseEvent]:
    """``RUN_FINISHED`` from the ``done`` line."""
    raw = value.get("done_reason")
    usage = Usage(input_tokens=value.get("prompt_eval_count"), output_tokens=value.get("eval_count"))
    times = {k: value[k] for k in _DURATIONS if k in value}
    model = value.get("model")
    return b.finish(b.finish_reason(raw), raw, usage,
                    {"ollama": times} if times else None, model=model if isinstance(model, str) else None)
