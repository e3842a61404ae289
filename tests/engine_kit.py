"""Helpers for the engine tests: OpenAI Chat Completions SSE bodies written by hand, and a run helper.

The bodies follow the OpenAI API reference ("The chat completion chunk object"): ``data: {chunk}``
events, a final usage chunk with ``choices: []`` (``stream_options.include_usage``) and ``data: [DONE]``.
Every test plays them from a real :class:`~hookstream.testing.LoopbackServer` through the real
``openai`` adapter.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("hookstream_openai", reason="engine tests speak OpenAI Chat Completions: install the plugin")

from hookstream import Callbacks, ChatStream, LoopSettings, chat, get_model
from hookstream.testing import CapturedRequest, check_events

MODEL = "openai:gpt-4o-mini"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, Any] | None = None,
          ) -> dict[str, Any]:
    """One ``chat.completion.chunk``; without ``delta`` and with ``usage`` it is the final usage chunk."""
    doc: dict[str, Any] = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1,
                           "model": "gpt-4o-mini"}
    if delta is None and usage is not None:
        doc["choices"] = []
    else:
        doc["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    doc["usage"] = usage
    return doc


def frame(doc: dict[str, Any] | str) -> bytes:
    return b"data: " + (doc if isinstance(doc, str) else json.dumps(doc)).encode() + b"\n\n"


def usage(inp: int = 10, out: int = 5, reasoning: int | None = None, cached: int | None = None) -> dict[str, Any]:
    u: dict[str, Any] = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
    if reasoning is not None:
        u["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cached is not None:
        u["prompt_tokens_details"] = {"cached_tokens": cached}
    return u


def text_pieces(*deltas: str, u: dict[str, Any] | None = None) -> list[bytes]:
    """A text answer as one SSE event per piece (for ``Response(pieces=...)``)."""
    out = [frame(chunk({"role": "assistant", "content": ""}))]
    out += [frame(chunk({"content": d})) for d in deltas]
    out += [frame(chunk({}, finish="stop")), frame(chunk(usage=u or usage())), frame("[DONE]")]
    return out


def text_body(*deltas: str, u: dict[str, Any] | None = None) -> bytes:
    return b"".join(text_pieces(*deltas, u=u))


def tool_pieces(*calls: tuple[str, str, dict[str, Any] | str], text: str | None = None,
                u: dict[str, Any] | None = None, finish: str = "tool_calls") -> list[bytes]:
    """Tool calls ``(id, name, arguments)``; arguments are streamed in two halves to exercise merging."""
    out = [frame(chunk({"role": "assistant", "content": None}))]
    if text:
        out.append(frame(chunk({"content": text})))
    for index, (cid, name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        half = len(raw) // 2
        out.append(frame(chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                                "function": {"name": name, "arguments": raw[:half]}}]})))
        out.append(frame(chunk({"tool_calls": [{"index": index, "function": {"arguments": raw[half:]}}]})))
    out += [frame(chunk({}, finish=finish)), frame(chunk(usage=u or usage())), frame("[DONE]")]
    return out


def tool_body(*calls: tuple[str, str, dict[str, Any] | str], **kw: Any) -> bytes:
    return b"".join(tool_pieces(*calls, **kw))


def body_messages(req: CapturedRequest) -> list[dict[str, Any]]:
    doc = req.json()
    return list(doc["messages"])


def tool_names(req: CapturedRequest) -> list[str]:
    return [t["function"]["name"] for t in req.json().get("tools", [])]


_CALLBACKS = ("on_chunk", "on_step_start", "on_step_finish", "on_finish", "on_error", "on_abort")
_LOOP = ("prepare_step", "repair_tool_call", "stream_tool_call_responses", "max_retries", "max_event_bytes", "run_id")


def group_options(kw: dict[str, Any]) -> dict[str, Any]:
    """Tests name callbacks and loop settings flat (``on_chunk=...``); chat() takes them grouped in
    :class:`Callbacks` and :class:`LoopSettings`."""
    out = {k: v for k, v in kw.items() if k not in _CALLBACKS and k not in _LOOP}
    cbs = {k: kw[k] for k in _CALLBACKS if k in kw}
    loop = {k: kw[k] for k in _LOOP if k in kw}
    if cbs:
        out["callbacks"] = Callbacks(**cbs)
    if loop:
        out["loop"] = LoopSettings(**loop)
    return out


def run(url: str, prompt: str = "hi", **kw: Any) -> tuple[list[Any], ChatStream]:
    """Run a chat against the loopback server at ``url``; check the run grammar; return (events, stream)."""
    stream = chat(get_model(MODEL, base_url=url + "/v1", api_key="sk-test"), prompt, **group_options(kw))
    events = list(stream)
    check_events(events, form="run")
    return events, stream


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def customs(events: list[Any], name: str) -> list[Any]:
    return [e.value for e in events if e.type == "CUSTOM" and e.name == name]
