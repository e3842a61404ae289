"""Small hand-written streaming bodies in each provider's wire format, for fault and load tests.

:func:`provider_stream` builds one model call that streams reasoning, then text, then one tool call
with its arguments split into deltas, in the format of ``openai`` (Chat Completions chunks, OpenAI API
reference "The chat completion chunk object"), ``openai-responses`` (Responses API streaming events),
``anthropic`` (Messages API streaming, "Streaming Messages") or ``gemini`` (``streamGenerateContent``
``GenerateContentResponse`` chunks). :func:`final_stream` builds a text-only answer for the next step.

A :class:`StreamScript` keeps each SSE event as its own bytes, plus what had been streamed after every
event (text, reasoning, whether the tool call was complete), so a fault test can cut the stream
anywhere and know exactly what the result must still hold.

These bodies are written from the providers' documentation; nothing is copied from recordings.
Thread safety: scripts are plain values; share them freely once built.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

__all__ = ["PROVIDERS", "StreamScript", "error_body", "final_stream", "provider_stream", "split_text"]

PROVIDERS: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "gemini")
"""The providers these builders know, by registry name."""

BASE_PATH: dict[str, str] = {"openai": "/v1", "openai-responses": "/v1", "anthropic": "", "gemini": ""}
"""API root path per provider under a loopback server's URL (what ``base_url`` must end with)."""


@attrs.define(slots=True)
class StreamScript:
    """One streamed model call as a list of SSE events (each ``bytes`` ending in a blank line).

    ``text_after[i]`` / ``reasoning_after[i]`` are the text / reasoning streamed by ``events[:i]``;
    ``tool_complete_after[i]`` tells whether the tool call had fully arrived by then. ``marks`` name
    cut points: ``mid_text`` (some text deltas sent), ``after_text`` (all text, no tool call yet),
    ``mid_args`` (tool arguments partly sent; for Gemini, whose calls arrive whole, this is the index of
    the event holding the call, to be cut inside its frame). ``keepalive`` is the provider's idle
    signal (an SSE comment, or Anthropic's ``ping`` event); ``unknown`` an event of a type no adapter
    knows; ``error`` an in-stream provider error event; ``invalid_json`` an event whose data is not JSON.
    """

    provider: str
    events: list[bytes]
    text: str
    reasoning: str
    tool_name: str | None
    tool_args: dict[str, Any] | None
    text_after: list[str]
    reasoning_after: list[str]
    tool_complete_after: list[bool]
    marks: dict[str, int]
    keepalive: bytes
    unknown: bytes
    error: bytes
    error_code: str
    invalid_json: bytes

    @property
    def body(self) -> bytes:
        return b"".join(self.events)


def split_text(text: str, n: int) -> list[str]:
    """``text`` in ``n`` roughly equal non-empty pieces (fewer when it is shorter than ``n``)."""
    n = max(1, min(n, len(text)))
    step, extra = divmod(len(text), n)
    out, k = [], 0
    for i in range(n):
        m = step + (1 if i < extra else 0)
        out.append(text[k : k + m])
        k += m
    return out


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _Recorder:
    """Collects events and the running text / reasoning / tool state after each one."""

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.text = ""
        self.reasoning = ""
        self.tool_done = False
        self.text_after = [""]
        self.reasoning_after = [""]
        self.tool_after = [False]
        self.marks: dict[str, int] = {}

    def add(self, event: bytes, *, text: str = "", reasoning: str = "", tool_done: bool = False) -> None:
        self.events.append(event)
        self.text += text
        self.reasoning += reasoning
        self.tool_done = self.tool_done or tool_done
        self.text_after.append(self.text)
        self.reasoning_after.append(self.reasoning)
        self.tool_after.append(self.tool_done)

    def mark(self, name: str) -> None:
        self.marks[name] = len(self.events)


def provider_stream(
    provider: str,
    *,
    text: str = "Checking the weather for you — un instant. ",
    reasoning: str = "The user wants the weather; call the tool.",
    tool_name: str | None = "get_weather",
    tool_args: dict[str, Any] | None = None,
    text_deltas: int = 4,
    arg_deltas: int = 5,
) -> StreamScript:
    """A stream of reasoning, text, then (when ``tool_name`` is set) one tool call, in ``provider``'s
    format. Raises :class:`ValueError` for a provider not in :data:`PROVIDERS`."""
    if tool_name is not None and tool_args is None:
        tool_args = {"city": "Paris", "unit": "celsius", "note": "café ☕"}
    builder = _BUILDERS.get(provider)
    if builder is None:
        raise ValueError(f"no body builder for provider {provider!r}; known: {', '.join(PROVIDERS)}")
    rec = _Recorder()
    extras = builder(rec, text, reasoning, tool_name, tool_args, text_deltas, arg_deltas)
    rec.marks.setdefault("mid_args", rec.marks.get("after_text", len(rec.events)))
    return StreamScript(
        provider, rec.events, text, reasoning, tool_name, tool_args, rec.text_after, rec.reasoning_after,
        rec.tool_after, rec.marks, **extras,
    )


def final_stream(provider: str, text: str = "It is 18 °C in Paris.") -> StreamScript:
    """A text-only answer (the step after the tools ran)."""
    return provider_stream(provider, text=text, reasoning="", tool_name=None, text_deltas=2)


def error_body(provider: str, status: int, message: str = "fault injected") -> bytes:
    """The JSON body ``provider`` answers a non-2xx status with."""
    if provider == "anthropic":
        kinds = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
                 529: "overloaded_error"}
        doc: dict[str, Any] = {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
    elif provider == "gemini":
        statuses = {401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
        doc = {"error": {"code": status, "message": message, "status": statuses.get(status, "INTERNAL")}}
    else:
        kinds = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}
        doc = {"error": {"message": message, "type": kinds.get(status, "server_error"), "param": None,
                         "code": None}}
    return json.dumps(doc).encode()


# -- OpenAI Chat Completions --------------------------------------------------------------------------

def _openai(rec: _Recorder, text: str, reasoning: str, tool: str | None, args: dict[str, Any] | None,
            nt: int, na: int) -> dict[str, Any]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({"id": "chatcmpl-fault1", "object": "chat.completion.chunk", "created": 1767225600,
                     "model": "fault-model", "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                          "finish_reason": finish}], "usage": None})

    rec.add(chunk({"role": "assistant", "content": ""}))
    for piece in split_text(reasoning, 2) if reasoning else []:
        rec.add(chunk({"reasoning_content": piece}), reasoning=piece)
    for i, piece in enumerate(split_text(text, nt)):
        rec.add(chunk({"content": piece}), text=piece)
        if i == 0:
            rec.mark("mid_text")
    rec.mark("after_text")
    if tool is not None:
        rec.add(chunk({"tool_calls": [{"index": 0, "id": "call_fault1", "type": "function",
                                       "function": {"name": tool, "arguments": ""}}]}))
        pieces = split_text(json.dumps(args, ensure_ascii=False), na)
        for i, piece in enumerate(pieces):
            rec.add(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
            if i == len(pieces) // 2:
                rec.mark("mid_args")
    rec.add(chunk({}, "tool_calls" if tool else "stop"), tool_done=tool is not None)
    rec.add(_sse({"id": "chatcmpl-fault1", "object": "chat.completion.chunk", "created": 1767225600,
                  "model": "fault-model", "choices": [],
                  "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}))
    rec.add(b"data: [DONE]\n\n")
    return {
        "keepalive": b": keepalive\n\n",
        "unknown": _sse({"id": "evt_fault", "object": "chat.completion.fault_unknown", "detail": 1},
                        event="fault.unknown"),
        "error": _sse({"error": {"message": "The server had an error while processing your request.",
                                 "type": "server_error", "param": None, "code": None}}),
        "error_code": "server_error",
        "invalid_json": b'data: {"id":"chatcmpl-fault1","choices":[{"delta":{"content":"x"\n\n',
    }


# -- OpenAI Responses -------------------------------------------------------------------------------

def _responses(rec: _Recorder, text: str, reasoning: str, tool: str | None, args: dict[str, Any] | None,
               nt: int, na: int) -> dict[str, Any]:
    seq = iter(range(10_000))

    def ev(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

    response = {"id": "resp_fault1", "object": "response", "status": "in_progress", "model": "fault-model",
                "output": []}
    rec.add(ev("response.created", response=response))
    out_index = 0
    if reasoning:
        item = {"id": "rs_fault1", "type": "reasoning", "summary": []}
        rec.add(ev("response.output_item.added", output_index=out_index, item=item))
        for piece in split_text(reasoning, 2):
            rec.add(ev("response.reasoning_summary_text.delta", item_id="rs_fault1", output_index=out_index,
                       summary_index=0, delta=piece), reasoning=piece)
        done = {**item, "summary": [{"type": "summary_text", "text": reasoning}]}
        rec.add(ev("response.output_item.done", output_index=out_index, item=done))
        out_index += 1
    msg = {"id": "msg_fault1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    rec.add(ev("response.output_item.added", output_index=out_index, item=msg))
    rec.add(ev("response.content_part.added", item_id="msg_fault1", output_index=out_index, content_index=0,
               part={"type": "output_text", "text": "", "annotations": []}))
    for i, piece in enumerate(split_text(text, nt)):
        rec.add(ev("response.output_text.delta", item_id="msg_fault1", output_index=out_index, content_index=0,
                   delta=piece), text=piece)
        if i == 0:
            rec.mark("mid_text")
    rec.add(ev("response.output_text.done", item_id="msg_fault1", output_index=out_index, content_index=0,
               text=text))
    rec.add(ev("response.output_item.done", output_index=out_index,
               item={**msg, "status": "completed",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}))
    rec.mark("after_text")
    out_index += 1
    if tool is not None:
        arguments = json.dumps(args, ensure_ascii=False)
        call = {"id": "fc_fault1", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_fault1", "name": tool}
        rec.add(ev("response.output_item.added", output_index=out_index, item=call))
        pieces = split_text(arguments, na)
        for i, piece in enumerate(pieces):
            rec.add(ev("response.function_call_arguments.delta", item_id="fc_fault1", output_index=out_index,
                       delta=piece))
            if i == len(pieces) // 2:
                rec.mark("mid_args")
        rec.add(ev("response.function_call_arguments.done", item_id="fc_fault1", output_index=out_index,
                   arguments=arguments))
        rec.add(ev("response.output_item.done", output_index=out_index,
                   item={**call, "status": "completed", "arguments": arguments}), tool_done=True)
    rec.add(ev("response.completed", response={**response, "status": "completed",
                                                "usage": {"input_tokens": 12, "output_tokens": 9,
                                                          "total_tokens": 21}}))
    return {
        "keepalive": b": keepalive\n\n",
        "unknown": ev("response.fault_unknown", detail=1),
        "error": _sse({"type": "error", "code": "server_error", "message": "The server had an error.",
                       "param": None, "sequence_number": 999}, event="error"),
        "error_code": "server_error",
        "invalid_json": b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\n\n',
    }


# -- Anthropic Messages --------------------------------------------------------------------------------

def _anthropic(rec: _Recorder, text: str, reasoning: str, tool: str | None, args: dict[str, Any] | None,
               nt: int, na: int) -> dict[str, Any]:
    def ev(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, **fields}, event=kind)

    rec.add(ev("message_start", message={
        "id": "msg_fault1", "type": "message", "role": "assistant", "model": "fault-model", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}))
    index = 0
    if reasoning:
        rec.add(ev("content_block_start", index=index,
                   content_block={"type": "thinking", "thinking": "", "signature": ""}))
        for piece in split_text(reasoning, 2):
            rec.add(ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece}),
                    reasoning=piece)
        rec.add(ev("content_block_delta", index=index,
                   delta={"type": "signature_delta", "signature": "c2lnbmF0dXJlLWZhdWx0"}))
        rec.add(ev("content_block_stop", index=index))
        index += 1
    rec.add(ev("content_block_start", index=index, content_block={"type": "text", "text": ""}))
    rec.add(ev("ping"))
    for i, piece in enumerate(split_text(text, nt)):
        rec.add(ev("content_block_delta", index=index, delta={"type": "text_delta", "text": piece}), text=piece)
        if i == 0:
            rec.mark("mid_text")
    rec.add(ev("content_block_stop", index=index))
    rec.mark("after_text")
    index += 1
    if tool is not None:
        rec.add(ev("content_block_start", index=index,
                   content_block={"type": "tool_use", "id": "toolu_fault1", "name": tool, "input": {}}))
        pieces = split_text(json.dumps(args, ensure_ascii=False), na)
        for i, piece in enumerate(pieces):
            rec.add(ev("content_block_delta", index=index,
                       delta={"type": "input_json_delta", "partial_json": piece}))
            if i == len(pieces) // 2:
                rec.mark("mid_args")
        rec.add(ev("content_block_stop", index=index), tool_done=True)
    rec.add(ev("message_delta", delta={"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
               usage={"output_tokens": 9}))
    rec.add(ev("message_stop"))
    return {
        "keepalive": b'event: ping\ndata: {"type": "ping"}\n\n',
        "unknown": ev("fault_unknown", detail=1),
        "error": ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        "error_code": "overloaded_error",
        "invalid_json": b'event: content_block_delta\ndata: {"type":"content_block_delta","index":\n\n',
    }


# -- Gemini ------------------------------------------------------------------------------------------

def _gemini(rec: _Recorder, text: str, reasoning: str, tool: str | None, args: dict[str, Any] | None,
            nt: int, na: int) -> dict[str, Any]:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None, usage: bool = False) -> bytes:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        doc: dict[str, Any] = {"candidates": [cand], "modelVersion": "fault-model", "responseId": "resp-fault1"}
        if usage:
            doc["usageMetadata"] = {"promptTokenCount": 12, "candidatesTokenCount": 9, "totalTokenCount": 21}
        return _sse(doc)

    for piece in split_text(reasoning, 2) if reasoning else []:
        rec.add(chunk([{"text": piece, "thought": True}]), reasoning=piece)
    pieces = split_text(text, nt)
    for i, piece in enumerate(pieces):
        last = tool is None and i == len(pieces) - 1
        rec.add(chunk([{"text": piece}], "STOP" if last else None, usage=last), text=piece)
        if i == 0:
            rec.mark("mid_text")
    if tool is not None:
        rec.mark("after_text")
        rec.mark("mid_args")  # Gemini sends a call whole: cut inside this event's frame
        rec.add(chunk([{"functionCall": {"name": tool, "args": args}}], "STOP", usage=True), tool_done=True)
    else:
        rec.marks["after_text"] = len(rec.events) - 1
    return {
        "keepalive": b": keepalive\n\n",
        "unknown": _sse({"faultUnknown": {"detail": 1}, "modelVersion": "fault-model"}, event="fault_unknown"),
        "error": _sse({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        "error_code": "UNAVAILABLE",
        "invalid_json": b'data: {"candidates": [{"content": {"parts": [{"text": "x"\n\n',
    }


_BUILDERS = {"openai": _openai, "openai-responses": _responses, "anthropic": _anthropic, "gemini": _gemini}
