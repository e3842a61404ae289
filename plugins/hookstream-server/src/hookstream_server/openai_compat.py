"""OpenAI Chat Completions over HTTP: a hookstream agent served as a "model" any OpenAI client can call
(the ``openai`` SDKs, simonw/llm, LiteLLM, Open WebUI, editors).

Routes (mounted by :func:`hookstream.server.make_app` under :data:`OPENAI_PREFIX`; docs/openai-endpoint.md):

* ``GET /v1/models``: ``{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}``,
  the served agent as model :data:`MODEL_ID`; ``GET /v1/models/{id}`` one of them (``404`` otherwise).
* ``POST /v1/chat/completions``: the Chat Completions request (OpenAI API reference, "Create chat
  completion")::

      {"model": "hookstream", "messages": [...], "stream"?: bool, "stream_options"?: {"include_usage"},
       "tools"?: [{"type": "function", "function": {"name", "description"?, "parameters"?}}],
       "metadata"?: {"thread_id": str}, ...}

  ``messages``: ``system``/``developer``/``user`` (text, or parts ``text``, ``image_url``,
  ``input_audio``), ``assistant`` (``content``, ``tool_calls``), ``tool`` (``tool_call_id``,
  ``content``). Sampling fields (``temperature``, ``max_tokens``...) are the agent's to decide and are
  ignored; ``n`` other than 1 is ``400``. The answer is a ``chat.completion`` object, or with
  ``"stream": true`` ``text/event-stream`` of ``chat.completion.chunk`` objects (``data: {json}``
  frames, the first delta carrying ``role``), ending with ``data: [DONE]``; with
  ``stream_options.include_usage`` the last chunk before it has ``choices: []`` and ``usage``.
* ``POST /v1/responses``: the Responses API (OpenAI API reference, "Create a model response"):
  ``{"model", "input": str | [item...], "instructions"?, "tools"?: [{"type": "function", "name", ...}],
  "stream"?}``, items ``message`` (``input_text``, ``output_text``, ``input_image`` parts),
  ``function_call`` and ``function_call_output``; the answer is a ``response`` object (``output``:
  ``message`` and ``function_call`` items; ``status`` ``completed``, ``incomplete``), or with ``"stream":
  true`` its events (``event: TYPE`` + ``data``: ``response.created``, ``response.output_item.added``,
  ``response.output_text.delta``, ``response.function_call_arguments.delta``, ... ``response.completed``,
  or ``response.failed`` for a run that fails). ``previous_response_id`` is refused (``400``): the server
  keeps no conversation under a response id, the client sends the whole input.
* Background responses (OpenAI API reference, "Background mode"; docs/openai-endpoint.md, "Background
  responses"): ``"background": true`` makes the run go on without its client, its events (each an SSE
  frame whose ``sequence_number``, from 0 as OpenAI's, is its number in the server's run event log less
  one, protocol :data:`PROTOCOL`)
  logged; the answer is the response with ``status: "queued"``, or with ``"stream": true`` its events.
  ``GET /v1/responses/{id}`` ("Retrieve a model response") is the response as it is now (``queued``,
  ``in_progress``, ``completed``, ``incomplete``, ``failed``, ``cancelled``); with ``?stream=true`` its
  events after ``starting_after`` (a sequence number), each once, until it ends. ``POST
  /v1/responses/{id}/cancel`` ("Cancel a response") cancels it (in the process that runs it; ``409``
  ``response_elsewhere`` from another). Only the principal that created a response reads or cancels it:
  anyone else gets the ``404`` of an unknown id. ``400`` ``background_unavailable`` on a server without
  the run event log; ``metadata.thread_id`` with ``background`` is ``400``.

The agent's own tools run on the server and are not shown. The request's ``tools`` are the client's
(frontend) tools: when the agent's model calls one the answer carries it in ``tool_calls`` with
``finish_reason: "tool_calls"``, and the client's next request carries the assistant message with those
calls and a ``tool`` message per result. What the server believes is the AG-UI route's trust rule
(:mod:`hookstream_server.trust`): a server tool runs only for a call this server's model made.

Conversations: by default each request is stateless (the client sends the whole conversation, as
every OpenAI client does). ``metadata.thread_id`` names a thread: on a server with a store the stored
thread is the conversation and the request's messages after its last ``assistant`` message are the new
turn (the thread belongs to the principal that created it, ``404`` for anyone else, as on the AG-UI
route); without a store it only names the run's thread.

Errors (OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``): ``400``
``invalid_request_error`` (bad JSON, a malformed request, an untrusted tool call:
``code: "untrusted_tool_call"``), ``401`` (``code: "invalid_api_key"``, with ``WWW-Authenticate``),
``404`` for an unknown model (``code: "model_not_found"``, ``param: "model"``), ``413``, ``429`` with
``Retry-After`` (whole seconds) for a principal over its run limits, ``503`` when the store fails. A run
that fails answers ``502`` (``504`` past ``max_run_seconds``, ``code: "run_timeout"``) when not
streaming; a streaming one sends ``data: {"error": {...}}`` and then ``data: [DONE]``, which the
``openai`` SDK raises as ``APIError``. A run that stops for a server tool's approval cannot be answered
over this API: it ends with the error ``code: "approval_required"`` (use the AG-UI route for approvals).

Thread safety: pure functions and per-request objects; :func:`serve_openai` shares only the host
application, which serves concurrent requests.
"""

from __future__ import annotations

import functools
import json
import re
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import parse_qsl

import attrs
from hookstream.errors import AGUIInputError
from hookstream.events import (
    BaseEvent,
    RunError,
    RunFinished,
    TextMessageChunk,
    TextMessageContent,
    TextMessageStart,
    ToolCallArgs,
    ToolCallChunk,
    ToolCallStart,
    Usage,
)

from .auth import Principal
from .limits import PrincipalLimits, ServerLimits, retry_after
from .resume import Recorder, Released, tail
from .runlog import RunLog
from .trust import check_ids

__all__ = ["MODEL_ID", "OPENAI_PREFIX", "PROTOCOL", "CompletionRequest", "answer_hex", "completion_chunks",
           "created_at", "openai_error", "parse_completion_request", "parse_responses_request", "responses_framing",
           "serve_openai"]

OPENAI_PREFIX = "/v1/"
"""The path prefix of the OpenAI-compatible routes (an OpenAI client's ``base_url`` is ``http://host/v1``)."""

MODEL_ID = "hookstream"
"""The model id the served agent answers to (``GET /v1/models``; the request's ``model``)."""

SSE_HEADERS = [
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
]
_DONE = b"data: [DONE]\n\n"
_SEQ = re.compile(r"[0-9]{1,12}")
_FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter", "tool_calls": "stop"}
_RUN_ERROR_STATUS = {"run_timeout": "504 Gateway Timeout", "approval_required": "409 Conflict"}
# OpenAI's error "type" by HTTP status (its API answers these types for these statuses).
_ERROR_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 404: "invalid_request_error",
                408: "invalid_request_error", 409: "invalid_request_error", 413: "invalid_request_error",
                429: "requests"}
_ERROR_CODES = {401: "invalid_api_key", 413: "request_too_large", 429: "rate_limit_exceeded", 408: "timeout"}


# -- errors -------------------------------------------------------------------------------------------


class _Refused(Exception):
    """A request answered with an OpenAI error before any run starts; never leaves this module
    (:func:`serve_openai` answers it)."""

    def __init__(self, status: str, message: str, *headers: tuple[str, str], code: str | None = None,
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers, self.code, self.param = status, message, headers, code, param


def _error_body(status: int, message: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code or _ERROR_CODES.get(status)}}


def openai_error(start_response: Callable[..., Any], status: str, message: str,
                 headers: Sequence[tuple[str, str]] = (), code: str | None = None,
                 param: str | None = None) -> list[bytes]:
    """Answer ``status`` (an HTTP status line) with OpenAI's error object,
    ``{"error": {"message", "type", "param", "code"}}`` (``type`` and a default ``code`` from the status)."""
    body = json.dumps(_error_body(int(status.split()[0]), message, code, param)).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers])
    return [body]


# -- the request --------------------------------------------------------------------------------------


@attrs.define(slots=True)
class CompletionRequest:
    """A decoded Chat Completions request: ``messages`` as AG-UI messages (camelCase JSON objects, what
    :func:`hookstream.server.messages_from_agui` reads), ``tools`` the client's tools as AG-UI tools
    (``{"name", "description", "parameters"}``), ``thread_id`` from ``metadata.thread_id``."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stream: bool = False
    include_usage: bool = False
    thread_id: str | None = None
    background: bool = False
    """The Responses API's ``background``: the run goes on without its client, resumed by
    ``GET /v1/responses/{id}``."""


def _content_part(part: Any, where: str) -> dict[str, Any]:
    """An OpenAI content part as an AG-UI one (text, image, audio)."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str):
            source = "data" if url.startswith("data:") else "url"
            return {"type": "image", "source": {"type": source, "value": url}}
    if kind == "input_audio":
        audio = part.get("input_audio")
        if isinstance(audio, dict) and isinstance(audio.get("data"), str):
            return {"type": "audio", "source": {"type": "data", "value": audio["data"],
                                                "mimeType": f"audio/{audio.get('format') or 'wav'}"}}
    raise AGUIInputError(f"{where}: a content part must be text, image_url or input_audio, got {part!r:.200}")


def _content(content: Any, where: str) -> Any:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return [_content_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)]
    raise AGUIInputError(f"{where}: content must be a string or a list of parts")


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(call.get("id"), str) or not isinstance(fn.get("name"), str):
        raise AGUIInputError(f"{where}: a tool call needs id and function.name, got {call!r:.200}")
    return {"id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": fn.get("arguments")}}


def _message(m: Any, where: str) -> dict[str, Any]:
    """An OpenAI chat message as an AG-UI message. Raises AGUIInputError."""
    if not isinstance(m, dict):
        raise AGUIInputError(f"{where} must be an object")
    role = m.get("role")
    if role in ("system", "developer", "user"):
        return {"role": role, "content": _content(m.get("content"), where)}
    if role == "assistant":
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise AGUIInputError(f"{where}: tool_calls must be a list")
        out: dict[str, Any] = {"role": "assistant", "content": _content(m.get("content"), where)}
        if calls:
            out["toolCalls"] = [_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)]
        return out
    if role == "tool":
        return {"role": "tool", "toolCallId": m.get("tool_call_id"), "content": _content(m.get("content"), where)}
    raise AGUIInputError(f"{where}: unknown role {role!r} (system, developer, user, assistant or tool)")


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise AGUIInputError("tools must be a list")
    out = []
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) and t.get("type", "function") == "function" else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise AGUIInputError(f"tools[{i}] must be {{'type': 'function', 'function': {{'name', ...}}}}")
        out.append({"name": fn["name"], "description": fn.get("description") or "",
                    "parameters": fn.get("parameters") or {"type": "object", "properties": {}}})
    return out


def parse_completion_request(doc: Any) -> CompletionRequest:
    """Read a decoded Chat Completions request body (see the module docstring). Raises
    :class:`~hookstream.errors.AGUIInputError` naming the bad field."""
    if not isinstance(doc, dict):
        raise AGUIInputError("the body must be a JSON object (a Chat Completions request)")
    model, messages = doc.get("model"), doc.get("messages")
    if not isinstance(model, str) or not model:
        raise AGUIInputError("model must be a non-empty string")
    if not isinstance(messages, list) or not messages:
        raise AGUIInputError("messages must be a non-empty list")
    if doc.get("n", 1) not in (1, None):
        raise AGUIInputError("n: only one choice is served")
    options = doc.get("stream_options")
    metadata = doc.get("metadata")
    thread = metadata.get("thread_id") if isinstance(metadata, dict) else None
    if thread is not None and (not isinstance(thread, str) or not thread):
        raise AGUIInputError("metadata.thread_id must be a non-empty string")
    return CompletionRequest(model, [_message(m, f"messages[{i}]") for i, m in enumerate(messages)],
                             _tools(doc.get("tools")), bool(doc.get("stream")),
                             isinstance(options, dict) and bool(options.get("include_usage")), thread)


# -- the answer ---------------------------------------------------------------------------------------


def _usage(usage: Usage | None) -> dict[str, Any]:
    """OpenAI's ``usage`` object (``prompt_tokens``, ``completion_tokens``, ``total_tokens``, details
    when known)."""
    u = usage or Usage()
    prompt, completion = u.input_tokens or 0, u.output_tokens or 0
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": u.total_tokens if u.total_tokens is not None else prompt + completion}
    if u.cached_input_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": u.cached_input_tokens}
    if u.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return out


class _Writer:
    """The state of one answer's translation: AG-UI events to Chat Completions deltas, and the whole
    message they add up to (for a non-streaming answer)."""

    def __init__(self, frontend: frozenset[str]) -> None:
        self.frontend = frontend
        self.text: list[str] = []
        self.message_id: str | None = None  # the assistant text message being streamed
        self.user_texts: set[str] = set()
        self.calls: dict[str, int] = {}  # frontend tool call id -> its index in tool_calls
        self.tool_calls: list[dict[str, Any]] = []
        self.chunk_call: str | None = None  # the open TOOL_CALL_CHUNK call
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.error: tuple[str, str | None] | None = None
        self.cancelled = False

    def _text(self, message_id: str | None, delta: str) -> list[dict[str, Any]]:
        if not delta:
            return []
        if message_id != self.message_id:
            # A later step's text: apart from the earlier one's, as a reader expects paragraphs.
            if self.text:
                delta = "\n\n" + delta
            self.message_id = message_id
        self.text.append(delta)
        return [{"content": delta}]

    def text_start(self, ev: TextMessageStart) -> list[dict[str, Any]]:
        if ev.role != "assistant":
            self.user_texts.add(ev.message_id)
        return []

    def text_content(self, ev: TextMessageContent) -> list[dict[str, Any]]:
        return [] if ev.message_id in self.user_texts else self._text(ev.message_id, ev.delta)

    def text_chunk(self, ev: TextMessageChunk) -> list[dict[str, Any]]:
        if ev.role not in (None, "assistant"):
            return []
        return self._text(ev.message_id or self.message_id, ev.delta or "")

    def _call(self, call_id: str, name: str) -> list[dict[str, Any]]:
        index = self.calls[call_id] = len(self.tool_calls)
        self.tool_calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}})
        return [{"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                 "function": {"name": name, "arguments": ""}}]}]

    def _args(self, call_id: str | None, delta: str | None) -> list[dict[str, Any]]:
        index = self.calls.get(call_id or "")
        if index is None or not delta:
            return []  # a server tool's call: it runs here, the client does not see it
        self.tool_calls[index]["function"]["arguments"] += delta
        return [{"tool_calls": [{"index": index, "function": {"arguments": delta}}]}]

    def call_start(self, ev: ToolCallStart) -> list[dict[str, Any]]:
        return self._call(ev.tool_call_id, ev.tool_call_name) if ev.tool_call_name in self.frontend else []

    def call_args(self, ev: ToolCallArgs) -> list[dict[str, Any]]:
        return self._args(ev.tool_call_id, ev.delta)

    def call_chunk(self, ev: ToolCallChunk) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if ev.tool_call_id and ev.tool_call_id != self.chunk_call:
            self.chunk_call = ev.tool_call_id
            if ev.tool_call_name in self.frontend:
                out = self._call(ev.tool_call_id, ev.tool_call_name or "")
        return out + self._args(self.chunk_call, ev.delta)

    def finished(self, ev: RunFinished) -> list[dict[str, Any]]:
        self.usage = ev.usage
        outcome = ev.outcome
        if outcome is not None and outcome.type == "interrupt" and outcome.interrupts:
            self.error = ("the run stopped for an approval of a server tool, which the OpenAI API cannot carry: "
                          "use the AG-UI route (docs/agui-server.md) for tools that need approval",
                          "approval_required")
            return []
        self.cancelled = outcome is not None and outcome.type == "cancelled"
        self.finish_reason = "tool_calls" if self.tool_calls else _FINISH.get(ev.finish_reason or "stop", "stop")
        return []

    def run_error(self, ev: RunError) -> list[dict[str, Any]]:
        self.usage = ev.usage
        self.error = (ev.message, ev.code)
        return []

    def deltas(self, ev: BaseEvent) -> list[dict[str, Any]]:
        handler = _HANDLERS.get(type(ev))
        return handler(self, ev) if handler is not None else []

    def message(self) -> dict[str, Any]:
        """The assistant message the deltas add up to."""
        out: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None, "refusal": None}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        return out


_HANDLERS: dict[type[BaseEvent], Callable[[_Writer, Any], list[dict[str, Any]]]] = {
    TextMessageStart: _Writer.text_start,
    TextMessageContent: _Writer.text_content,
    TextMessageChunk: _Writer.text_chunk,
    ToolCallStart: _Writer.call_start,
    ToolCallArgs: _Writer.call_args,
    ToolCallChunk: _Writer.call_chunk,
    RunFinished: _Writer.finished,
    RunError: _Writer.run_error,
}


def _frame(doc: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def completion_chunks(events: Iterable[BaseEvent], *, completion_id: str, model: str,
                      frontend_tools: Iterable[str] = (), include_usage: bool = False) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a run's ``events`` (module docstring): a first chunk with
    ``delta.role``, a chunk per text delta and per frontend tool call piece (calls of other tools are
    the server's and are not sent), a last chunk with ``finish_reason``, then, with ``include_usage``,
    one with ``choices: []`` and ``usage``. A run that fails (or stops for an approval) ends with an
    ``{"error": {...}}`` object in place of the last chunks."""
    writer = _Writer(frozenset(frontend_tools))
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for ev in events:
        for delta in writer.deltas(ev):
            yield chunk(delta)
        if writer.error is not None or writer.finish_reason is not None:
            break
    if writer.error is not None:
        message, code = writer.error
        yield {"error": _error_body(500, message, code)["error"]}
        return
    yield chunk({}, writer.finish_reason or "stop")
    if include_usage:
        yield {**base, "choices": [], "usage": _usage(writer.usage)}


def _stream_frames(request: CompletionRequest, completion_id: str) -> Callable[[Any], Generator[bytes, None, None]]:
    def frames(stream: Any) -> Generator[bytes, None, None]:
        for doc in completion_chunks(stream, completion_id=completion_id, model=request.model,
                                     frontend_tools=[t["name"] for t in request.tools],
                                     include_usage=request.include_usage):
            yield _frame(doc)
        yield _DONE

    return frames


@attrs.define(slots=True)
class _Whole:
    """A non-streaming answer, filled in as the run's events are read."""

    status: str = "200 OK"
    body: dict[str, Any] = attrs.Factory(dict)


def _whole_frames(request: CompletionRequest, completion_id: str, whole: _Whole
                  ) -> Callable[[Any], Generator[bytes, None, None]]:
    def frames(stream: Any) -> Generator[bytes, None, None]:
        writer = _Writer(frozenset(t["name"] for t in request.tools))
        for ev in stream:
            writer.deltas(ev)
            if writer.error is not None or writer.finish_reason is not None:
                break
        if writer.error is not None:
            message, code = writer.error
            whole.status = _RUN_ERROR_STATUS.get(code or "", "502 Bad Gateway")
            whole.body = _error_body(int(whole.status.split()[0]), message, code)
        else:
            whole.body = {"id": completion_id, "object": "chat.completion", "created": int(time.time()),
                          "model": request.model, "system_fingerprint": None,
                          "choices": [{"index": 0, "message": writer.message(), "logprobs": None,
                                       "finish_reason": writer.finish_reason or "stop"}],
                          "usage": _usage(writer.usage)}
        yield b""

    return frames


# -- the Responses API ---------------------------------------------------------------------------------


def _response_content(content: Any, where: str) -> Any:
    """A Responses message's content as AG-UI content (``input_text``/``output_text`` -> text,
    ``input_image`` -> image)."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise AGUIInputError(f"{where}: content must be a string or a list of parts")
    parts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            url = part["image_url"]
            parts.append({"type": "image", "source": {"type": "data" if url.startswith("data:") else "url",
                                                      "value": url}})
        elif kind != "refusal":
            raise AGUIInputError(f"{where}.content[{j}]: a part must be input_text, output_text or input_image "
                                 f"(with an image_url), got {part!r:.200}")
    return parts


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict) and isinstance(p.get("text"), str))
    return json.dumps(output)


def _input_item(item: Any, where: str, out: list[dict[str, Any]]) -> None:
    """Append one Responses input item to ``out`` as AG-UI messages. Raises AGUIInputError."""
    if not isinstance(item, dict):
        raise AGUIInputError(f"{where} must be an object")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise AGUIInputError(f"{where}: unknown role {role!r}")
        out.append({"role": role, "content": _response_content(item.get("content"), where)})
    elif kind == "function_call":
        if not isinstance(item.get("call_id"), str) or not isinstance(item.get("name"), str):
            raise AGUIInputError(f"{where}: a function_call needs call_id and name")
        call = {"id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments")}}
        if out and out[-1]["role"] == "assistant":
            out[-1].setdefault("toolCalls", []).append(call)  # parallel calls: one assistant message
        else:
            out.append({"role": "assistant", "content": None, "toolCalls": [call]})
    elif kind == "function_call_output":
        out.append({"role": "tool", "toolCallId": item.get("call_id"), "content": _output_text(item.get("output"))})
    elif kind != "reasoning":  # reasoning items are the model's own; nothing to send back to it here
        raise AGUIInputError(f"{where}: an item must be a message, function_call or function_call_output, "
                             f"got type {kind!r}")


def parse_responses_request(doc: Any) -> CompletionRequest:
    """Read a decoded Responses API request body (``POST /v1/responses``: ``{"model", "input": str |
    [item...], "instructions"?, "tools"?: [{"type": "function", "name", "description"?, "parameters"?}],
    "stream"?, "metadata"?: {"thread_id"}}``) as a :class:`CompletionRequest`. ``previous_response_id``
    is refused: the server keeps no responses, send the whole input. Raises
    :class:`~hookstream.errors.AGUIInputError` naming the bad field."""
    if not isinstance(doc, dict):
        raise AGUIInputError("the body must be a JSON object (a Responses API request)")
    model, value = doc.get("model"), doc.get("input")
    if not isinstance(model, str) or not model:
        raise AGUIInputError("model must be a non-empty string")
    if doc.get("previous_response_id") is not None:
        raise AGUIInputError("previous_response_id: this server keeps no responses; send the whole input")
    messages: list[dict[str, Any]] = []
    if isinstance(doc.get("instructions"), str) and doc["instructions"]:
        messages.append({"role": "system", "content": doc["instructions"]})
    if isinstance(value, str) and value:
        messages.append({"role": "user", "content": value})
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            _input_item(item, f"input[{i}]", messages)
    else:
        raise AGUIInputError("input must be a non-empty string or list of items")
    tools = doc.get("tools") or []
    if not isinstance(tools, list) or any(not isinstance(t, dict) or t.get("type") != "function" for t in tools):
        raise AGUIInputError("tools: only function tools ({'type': 'function', 'name', ...}) are served")
    metadata = doc.get("metadata")
    thread = metadata.get("thread_id") if isinstance(metadata, dict) else None
    if thread is not None and (not isinstance(thread, str) or not thread):
        raise AGUIInputError("metadata.thread_id must be a non-empty string")
    background = doc.get("background")
    if background not in (None, True, False):
        raise AGUIInputError("background must be a boolean")
    if background and thread is not None:
        raise AGUIInputError("metadata.thread_id: a background response is a thread of its own; send the whole "
                             "input instead")
    return CompletionRequest(model, messages, _tools([{"type": "function", "function": t} for t in tools]),
                             bool(doc.get("stream")), False, thread, bool(background))


def answer_hex() -> str:
    """The hex of a new answer's ids (``run_<hex>``, ``resp_<hex>``...): 32 digits, the first 8 the Unix
    time in seconds (:func:`created_at`), the rest random (96 bits)."""
    return f"{int(time.time()) & 0xFFFFFFFF:08x}{uuid.uuid4().hex[:24]}"


def created_at(answer_id: str) -> int:
    """The Unix time (seconds) an answer id of :func:`answer_hex` was made at; now for another id."""
    hexa = answer_id.rpartition("_")[2]
    try:
        return int(hexa[:8], 16) if len(hexa) == 32 else int(time.time())
    except ValueError:
        return int(time.time())


def _response_usage(usage: Usage | None) -> dict[str, Any]:
    u = _usage(usage)
    return {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"],
            "total_tokens": u["total_tokens"],
            "input_tokens_details": {"cached_tokens": (usage.cached_input_tokens if usage else None) or 0},
            "output_tokens_details": {"reasoning_tokens": (usage.reasoning_tokens if usage else None) or 0}}


_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


class _ResponseBuilder:
    """A Responses API ``response`` built from a run's Chat Completions deltas (:class:`_Writer`), with the
    streaming events that build it (OpenAI API reference, "Responses streaming events")."""

    def __init__(self, request: CompletionRequest, response_id: str) -> None:
        self.writer = _Writer(frozenset(t["name"] for t in request.tools))
        self.items: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None  # the output item being streamed
        self.calls: dict[int, dict[str, Any]] = {}  # tool call index -> its function_call item
        self.seq = 0
        # Every id and time is the response id's: a run started again (serve --durable) sends the same bytes.
        self._hex = response_id.removeprefix("resp_")
        self.response: dict[str, Any] = {
            "id": response_id, "object": "response", "created_at": created_at(response_id), "status": "in_progress",
            "model": request.model, "output": self.items, "error": None, "incomplete_details": None,
            "instructions": None, "metadata": {}, "parallel_tool_calls": True, "temperature": None,
            "tool_choice": "auto", "tools": [], "top_p": None, "usage": None, "background": request.background}

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        # OpenAI numbers a response's events from 0 (response.created); starting_after=0 is after it.
        ev = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return ev

    def snapshot(self) -> dict[str, Any]:
        """A copy of the response as it is now (an event carries it as it was when sent)."""
        copy: dict[str, Any] = json.loads(json.dumps(self.response))
        return copy

    def _close(self) -> list[dict[str, Any]]:
        item, self.open = self.open, None
        if item is None:
            return []
        index = self.items.index(item)
        item["status"] = "completed"
        if item["type"] == "message":
            part = item["content"][0]
            done = [self.event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                               text=part["text"], logprobs=[]),
                    self.event("response.content_part.done", item_id=item["id"], output_index=index,
                               content_index=0, part=part)]
        else:
            done = [self.event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                               arguments=item["arguments"])]
        return [*done, self.event("response.output_item.done", output_index=index, item=item)]

    def _open(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        out = self._close()
        self.open = item
        self.items.append(item)
        return [*out, self.event("response.output_item.added", output_index=len(self.items) - 1,
                                 item={**item, "content": []} if item["type"] == "message" else dict(item))]

    def _text(self, delta: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.open is None or self.open["type"] != "message":
            part = {"type": "output_text", "text": "", "annotations": []}
            item = {"type": "message", "id": f"msg_{self._hex}_{len(self.items)}", "status": "in_progress",
                    "role": "assistant",
                    "content": [part]}
            out = self._open(item)
            out.append(self.event("response.content_part.added", item_id=item["id"], output_index=len(self.items) - 1,
                                  content_index=0, part=dict(part)))
        assert self.open is not None
        self.open["content"][0]["text"] += delta
        return [*out, self.event("response.output_text.delta", item_id=self.open["id"],
                                 output_index=len(self.items) - 1, content_index=0, delta=delta, logprobs=[])]

    def _call(self, piece: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if "id" in piece:
            item = {"type": "function_call", "id": f"fc_{self._hex}_{len(self.items)}", "call_id": piece["id"],
                    "name": piece["function"]["name"], "arguments": "", "status": "in_progress"}
            self.calls[piece["index"]] = item
            out = self._open(item)
        item = self.calls[piece["index"]]
        delta = piece.get("function", {}).get("arguments") or ""
        if delta:
            item["arguments"] += delta
            out.append(self.event("response.function_call_arguments.delta", item_id=item["id"],
                                  output_index=self.items.index(item), delta=delta))
        return out

    def start(self) -> list[dict[str, Any]]:
        """The first events: ``response.created`` and ``response.in_progress``; for a background response,
        as OpenAI's background stream has them, ``response.created`` and ``response.queued`` with
        ``status: "queued"`` before."""
        out: list[dict[str, Any]] = []
        if self.response["background"]:
            self.response["status"] = "queued"
            out = [self.event("response.created", response=self.snapshot()),
                   self.event("response.queued", response=self.snapshot())]
            self.response["status"] = "in_progress"
        else:
            out = [self.event("response.created", response=self.snapshot())]
        return [*out, self.event("response.in_progress", response=self.snapshot())]

    def feed(self, ev: BaseEvent) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for delta in self.writer.deltas(ev):
            if "content" in delta:
                out += self._text(delta["content"])
            for piece in delta.get("tool_calls", ()):
                out += self._call(piece)
        return out

    def done(self) -> bool:
        return self.writer.error is not None or self.writer.finish_reason is not None

    def end(self) -> list[dict[str, Any]]:
        """The closing events: the open item's, then ``response.completed`` (``incomplete``, ``failed``)."""
        out = self._close()
        writer = self.writer
        self.response["usage"] = _response_usage(writer.usage)
        if writer.error is not None:
            message, code = writer.error
            self.response.update(status="failed", error={"code": code or "server_error", "message": message})
            return [*out, self.event("response.failed", response=self.snapshot())]
        if writer.cancelled:  # no event of its own in the Responses API: the last says so in its status
            self.response["status"] = "cancelled"
            return [*out, self.event("response.incomplete", response=self.snapshot())]
        reason = _INCOMPLETE.get(writer.finish_reason or "")
        if reason is not None:
            self.response.update(status="incomplete", incomplete_details={"reason": reason})
            return [*out, self.event("response.incomplete", response=self.snapshot())]
        self.response["status"] = "completed"
        return [*out, self.event("response.completed", response=self.snapshot())]


def _sse_event(doc: dict[str, Any]) -> bytes:
    return f"event: {doc['type']}\n".encode() + _frame(doc)


def _responses_stream(request: CompletionRequest, response_id: str) -> Callable[[Any], Generator[bytes, None, None]]:
    def frames(stream: Any) -> Generator[bytes, None, None]:
        builder = _ResponseBuilder(request, response_id)
        for doc in builder.start():
            yield _sse_event(doc)
        for ev in stream:
            for doc in builder.feed(ev):
                yield _sse_event(doc)
            if builder.done():
                break
        for doc in builder.end():
            yield _sse_event(doc)

    return frames


def _responses_whole(request: CompletionRequest, response_id: str, whole: _Whole
                     ) -> Callable[[Any], Generator[bytes, None, None]]:
    def frames(stream: Any) -> Generator[bytes, None, None]:
        builder = _ResponseBuilder(request, response_id)
        for ev in stream:
            builder.feed(ev)
            if builder.done():
                break
        builder.end()
        if builder.writer.error is not None:
            message, code = builder.writer.error
            whole.status = _RUN_ERROR_STATUS.get(code or "", "502 Bad Gateway")
            whole.body = _error_body(int(whole.status.split()[0]), message, code)
        else:
            whole.body = builder.response
        yield b""

    return frames


# -- the routes ---------------------------------------------------------------------------------------


class _Stream(Protocol):
    def __iter__(self) -> Iterator[BaseEvent]: ...

    def cancel(self) -> None: ...


class OpenAIHost(Protocol):
    """What the OpenAI routes use of the application that mounts them (``hookstream_server.agui._App``):
    its authentication, body reading, limits and run start, so they are the AG-UI route's own."""

    @property
    def limits(self) -> ServerLimits: ...

    @property
    def counts(self) -> PrincipalLimits: ...

    @property
    def keeper(self) -> Any: ...

    @property
    def log(self) -> RunLog | None: ...

    @property
    def options(self) -> Any: ...

    @property
    def running(self) -> Any: ...

    def _taken_over(self, run: Any, protocol: str, stream: Any, who: str | None) -> Iterable[bytes] | None: ...

    def _drop(self, stream: Any, who: str | None) -> None: ...

    def _principal(self, environ: Mapping[str, Any]) -> Principal | None: ...

    def _body(self, environ: Mapping[str, Any]) -> tuple[Any, bytes]: ...

    def _check_messages(self, doc: Any, raw: bytes) -> None: ...

    def _run_stream(self, doc: Any, principal: Principal | None, ui: bool, who: str | None) -> tuple[Any, Any, Any]: ...


RunBody = Callable[..., Iterable[bytes]]
"""Builds a run's response body: ``(stream, release, max_seconds, frames[, recorder, detached_seconds,
ping_seconds]) -> iterable of bytes`` that cancels the run when closed early (with a recorder: leaves it
going, logged) and calls ``release`` once (``hookstream_server.agui._RunBody``)."""


def _models(model_id: str | None, start_response: Callable[..., Any], cors: Sequence[tuple[str, str]]
            ) -> list[bytes]:
    entry = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "hookstream"}
    if model_id is not None and model_id != MODEL_ID:
        raise _Refused("404 Not Found", f"The model {model_id!r} does not exist", code="model_not_found",
                            param="model")
    doc = entry if model_id is not None else {"object": "list", "data": [entry]}
    body = json.dumps(doc).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *cors])
    return [body]


def _agui_doc(host: OpenAIHost, request: CompletionRequest, hexa: str) -> dict[str, Any]:
    """The request as an AG-UI ``RunAgentInput`` for the host's run start (``run_<hexa>``; a thread of
    its own ``thread_<hexa>`` unless ``metadata.thread_id`` names one)."""
    messages = request.messages
    if request.thread_id is not None and host.keeper is not None:
        # The stored thread is the conversation: what follows the client's last assistant message is new.
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        messages = messages[last + 1:]
    thread_id = request.thread_id or f"thread_{hexa}"
    return {"threadId": thread_id, "runId": f"run_{hexa}", "messages": messages, "tools": request.tools}


@attrs.define(slots=True)
class _Started:
    """A run started for an OpenAI request: its stream, what releases its principal's count, its ids,
    its input (``hookstream.server.RunInput``) and its principal's id."""

    stream: Any
    release: Callable[[], None]
    run_id: str
    thread_id: str
    run: Any = None
    who: str | None = None


def _start(host: OpenAIHost, environ: Mapping[str, Any], parse: Callable[[Any], CompletionRequest]
           ) -> tuple[CompletionRequest, _Started]:
    """Read, check and start a run as the host's AG-UI route does (principal, body, model, sizes, ids, run
    limits, the trust rule and the store). Raises :class:`_Refused` or the host's refusal."""
    principal = host._principal(environ)
    doc, raw = host._body(environ)
    try:
        request = parse(doc)
    except AGUIInputError as exc:
        raise _Refused("400 Bad Request", str(exc), code=exc.code) from exc
    if request.model != MODEL_ID:
        raise _Refused("404 Not Found", f"The model {request.model!r} does not exist (this server serves "
                       f"{MODEL_ID!r})", code="model_not_found", param="model")
    if request.background and host.log is None:
        raise _Refused("400 Bad Request", "background: this server keeps no run event log (make_app(resumable="
                       "False), serve --no-resume), so a background response could not be retrieved",
                       code="background_unavailable", param="background")
    host._check_messages({"messages": request.messages}, raw)
    agui = _agui_doc(host, request, answer_hex())
    try:
        check_ids(agui, False)
    except AGUIInputError as exc:
        raise _Refused("400 Bad Request", str(exc), code=exc.code) from exc
    who = principal.id if principal is not None else None
    wait = host.counts.start(who) if who is not None else None  # per authenticated principal, as AG-UI runs
    if wait is not None:
        raise _Refused("429 Too Many Requests", "too many runs: try again later", ("Retry-After", retry_after(wait)))
    try:
        stream, _, run = host._run_stream(agui, principal, False, who)
    except BaseException:
        if who is not None:
            host.counts.finish(who)
        raise
    counts = host.counts

    def release() -> None:
        if who is not None:
            counts.finish(who)

    return request, _Started(stream, release, agui["runId"], agui["threadId"], run, who)


def _answer(host: OpenAIHost, started: _Started, start_response: Callable[..., Any], cors: Sequence[tuple[str, str]],
            run_body: RunBody, streaming: bool, frames: Callable[[Any], Generator[bytes, None, None]],
            whole: _Whole) -> Iterable[bytes]:
    """Send the run: SSE frames as they come (``streaming``), or the whole JSON answer ``frames`` fills in."""
    thread_header = ("X-Hookstream-Thread-Id", started.thread_id)
    body = run_body(started.stream, started.release, host.limits.max_run_seconds, frames)
    if streaming:
        start_response("200 OK", [*SSE_HEADERS, thread_header, *cors])
        return body
    try:
        for _ in body:
            pass
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    data = json.dumps(whole.body, ensure_ascii=False).encode()
    start_response(whole.status, [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                                  thread_header, *cors])
    return [data]


_Framing = Callable[[Any], Generator[bytes, None, None]]


def _route(parse: Callable[[Any], CompletionRequest], id_prefix: str,
           streamed: Callable[[CompletionRequest, str], _Framing],
           whole_frames: Callable[[CompletionRequest, str, _Whole], _Framing]) -> Callable[..., Iterable[bytes]]:
    """A route that reads its request with ``parse``, names its answer ``<id_prefix><run id's hex>`` and
    frames the run with ``streamed`` (``"stream": true``) or ``whole_frames`` (one JSON answer)."""

    def route(host: OpenAIHost, environ: Mapping[str, Any], start_response: Callable[..., Any],
              cors: Sequence[tuple[str, str]], run_body: RunBody) -> Iterable[bytes]:
        request, started = _start(host, environ, parse)
        answer_id = id_prefix + started.run_id[len("run_"):]
        if request.background:
            return _background(host, request, started, start_response, cors, run_body)
        whole = _Whole()
        frames = streamed(request, answer_id) if request.stream else whole_frames(request, answer_id, whole)
        return _answer(host, started, start_response, cors, run_body, request.stream, frames, whole)

    return route


# -- background responses -----------------------------------------------------------------------------

PROTOCOL = "responses"
"""The run event log's ``protocol`` (and ``hookstream_serve_run``'s) of a background response."""


def responses_framing(run: Any) -> Callable[[Any], Generator[bytes, None, None]]:
    """The framing of a background response's run (a :class:`hookstream.server.RunInput`), made from the
    run alone, so that a run started again in another process sends the same bytes: the Responses API
    events of ``resp_<hex>`` (``run_<hex>``), each an SSE frame whose ``sequence_number`` (from 0) is its
    frame's number in the run event log (from 1) less one."""
    tools = [t for t in run.tools if isinstance(t, dict)]
    request = CompletionRequest(MODEL_ID, [], tools, True, background=True)
    return _responses_stream(request, "resp_" + run.run_id.removeprefix("run_"))


def _background(host: OpenAIHost, request: CompletionRequest, started: _Started, start_response: Callable[..., Any],
                cors: Sequence[tuple[str, str]], run_body: RunBody) -> Iterable[bytes]:
    """A background response: its run goes on without its client, each event logged (the host's run event
    log, protocol :data:`PROTOCOL`) for ``GET /v1/responses/{id}``. Streamed, the events as they come
    (the client may leave: the run goes on); else the response object at once, ``status: "queued"``."""
    run, who = started.run, started.who
    assert host.log is not None  # _start refused a background request without one
    response_id = "resp_" + run.run_id.removeprefix("run_")
    try:
        recorder = Recorder(host.log, host.limits, run.thread_id, run.run_id, who, PROTOCOL,
                            log_then_send=request.stream and host.options.log_then_send)
    except BaseException:  # the log failed: the run never starts, its count is given back
        host._drop(started.stream, who)
        raise
    if not recorder.opened:  # ids of the server's own making: another run's only by a bug
        host._drop(started.stream, who)
        raise _Refused("409 Conflict", f"response {response_id!r} cannot be started: its id is in use")
    thread_header = ("X-Hookstream-Thread-Id", started.thread_id)
    taken = host._taken_over(run, PROTOCOL, started.stream, who)  # serve --durable keeps its input here
    if taken is not None:  # runs elsewhere: its log is the answer
        if request.stream:
            start_response("200 OK", [*SSE_HEADERS, thread_header, *cors])
            return taken
        getattr(taken, "close", lambda: None)()
    else:
        forget = host.running.add(run.thread_id, who, started.stream, None)

        def release() -> None:
            forget()
            started.release()

        body = run_body(started.stream, release, host.limits.max_run_seconds, responses_framing(run), recorder,
                        None, host.limits.ping_seconds)
        if request.stream:
            start_response("200 OK", [*SSE_HEADERS, thread_header, *cors])
            return body
        getattr(body, "close", lambda: None)()  # no client: the run goes on detached until it ends
    queued = _ResponseBuilder(request, response_id).start()[0]["response"]  # response.created's
    data = json.dumps(queued).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                              thread_header, *cors])
    return [data]


_RESPONSE_PATH = re.compile(r"^/v1/responses/(?P<id>[^/]+)(?P<cancel>/cancel)?$")
_RESPONSE_ID = re.compile(r"resp_(?P<hex>[0-9a-f]{32})")
_TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})


def _frame_event(frame: bytes) -> dict[str, Any]:
    data = b"".join(line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:"))
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _logged_response(host: OpenAIHost, response_id: str, who: str | None) -> tuple[str, str, Any]:
    """``(thread id, run id, LoggedRun)`` of the background response ``response_id`` of ``who``. Raises
    :class:`_Refused` ``404`` for an unknown id and for another principal's response alike (OpenAI's
    answer for an id it does not know), ``410`` for one whose log passed its bounds, ``503``."""
    match = _RESPONSE_ID.fullmatch(response_id)
    logged = None
    if match is not None and host.log is not None:
        thread_id, run_id = f"thread_{match['hex']}", f"run_{match['hex']}"
        try:
            got = host.log.read(thread_id, run_id, 1 << 62)  # the entry only: no frame is after this
        except Exception as exc:
            raise _Refused("503 Service Unavailable", f"run event log unavailable: {type(exc).__name__}") from exc
        logged = got[0] if got is not None else None
    if logged is None or logged.owner != who or logged.protocol != PROTOCOL:
        raise _Refused("404 Not Found", f"Response with id {response_id[:200]!r} not found.", param="response_id")
    if logged.truncated:
        raise _Refused("410 Gone", "the response's event log passed the server's limits: it cannot be retrieved")
    return thread_id, run_id, logged


def _query(environ: Mapping[str, Any]) -> dict[str, str]:
    """The request's query parameters, decoded (a repeated one: its last value)."""
    return dict(parse_qsl(str(environ.get("QUERY_STRING") or ""), keep_blank_values=True))


def _current(host: OpenAIHost, thread_id: str, run_id: str, response_id: str) -> dict[str, Any]:
    """The response as its log has it now: the last event's ``response`` once it ended, else the
    latest one ``in_progress`` with the output items done so far."""
    assert host.log is not None
    got = host.log.read(thread_id, run_id, 0)
    if got is None:
        raise _Refused("404 Not Found", f"Response with id {response_id!r} not found.", param="response_id")
    info, frames = got
    latest: dict[str, Any] | None = None
    done: list[dict[str, Any]] = []
    for _, frame in frames:
        ev = _frame_event(frame)
        if isinstance(ev.get("response"), dict):
            latest = ev["response"]
            if ev.get("type") in _TERMINAL:
                return latest
        elif ev.get("type") == "response.output_item.done" and isinstance(ev.get("item"), dict):
            done.append(ev["item"])
    current = dict(latest or {"id": response_id, "object": "response", "created_at": created_at(response_id),
                              "model": MODEL_ID, "background": True})
    current["output"] = done
    current["status"] = latest.get("status", "in_progress") if latest is not None else "queued"
    if info.ended:  # ended with no answer (its run was stopped before it said so)
        current.update(status="failed", error={"code": "server_error", "message": "the response's run ended "
                                                                                 "without an answer"})
    return current


def _retrieve(host: OpenAIHost, environ: Mapping[str, Any], start_response: Callable[..., Any],
              cors: Sequence[tuple[str, str]], response_id: str) -> Iterable[bytes]:
    """``GET /v1/responses/{id}`` (OpenAI API reference, "Retrieve a model response"): the background
    response as it is now; with ``stream=true`` its events after ``starting_after`` (a
    ``sequence_number``; none: from the first), each once, then the live ones until it ends, ``: ping``
    every ``ping_seconds`` while quiet. Counted toward the principal's ``max_resume_streams`` (``429``)."""
    principal = host._principal(environ)
    who = principal.id if principal is not None else None
    query = _query(environ)
    after = query.get("starting_after") or ""
    if after and not _SEQ.fullmatch(after):
        raise _Refused("400 Bad Request", "starting_after must be a sequence number (an integer, 0 or more)",
                       param="starting_after")
    thread_id, run_id, _ = _logged_response(host, response_id, who)
    assert host.log is not None
    if query.get("stream", "false").lower() != "true":
        data = json.dumps(_current(host, thread_id, run_id, response_id), ensure_ascii=False).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *cors])
        return [data]
    if who is not None and not host.counts.open_stream(who):
        raise _Refused("429 Too Many Requests", "too many resumed streams: try again later", ("Retry-After", "1"))
    limits = host.limits
    # sequence_number N is log frame N + 1: the frames after it are after frame N + 1 (none given: all).
    frames = tail(host.log, thread_id, run_id, int(after) + 1 if after else 0, limits.ping_seconds,
                  limits.resume_wait_seconds)
    start_response("200 OK", [*SSE_HEADERS, *cors])
    return frames if who is None else Released(frames, functools.partial(host.counts.close_stream, who))


def _cancel(host: OpenAIHost, environ: Mapping[str, Any], start_response: Callable[..., Any],
            cors: Sequence[tuple[str, str]], response_id: str) -> Iterable[bytes]:
    """``POST /v1/responses/{id}/cancel`` (OpenAI API reference, "Cancel a response"): the run is cancelled
    and, once its log says it ended, the response answered (``status: "cancelled"``; one that had ended
    already: as it ended). Served by the process that runs it: ``409`` from another (``--workers``: retry
    reaches it, or wait for the end). The wait (``resume_wait_seconds`` at most) counts toward the
    principal's ``max_resume_streams`` (``429``)."""
    principal = host._principal(environ)
    who = principal.id if principal is not None else None
    thread_id, run_id, logged = _logged_response(host, response_id, who)
    assert host.log is not None
    if not logged.ended:
        running = host.running.find(thread_id, who)
        if running is None:
            raise _Refused("409 Conflict", "the response runs in another server process: try again",
                           ("Retry-After", "1"), code="response_elsewhere")
        # The wait for the run's end holds this thread, as a resumed stream does: counted as one.
        if who is not None and not host.counts.open_stream(who):
            raise _Refused("429 Too Many Requests", "too many resumed streams: try again later", ("Retry-After", "1"))
        try:
            running.stream.cancel()
            for _ in tail(host.log, thread_id, run_id, 1 << 62, None, host.limits.resume_wait_seconds):
                pass  # until the log has the run's end (tail reads no frame past this number)
        finally:
            if who is not None:
                host.counts.close_stream(who)
    data = json.dumps(_current(host, thread_id, run_id, response_id), ensure_ascii=False).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *cors])
    return [data]


def _response_route(host: OpenAIHost, environ: Mapping[str, Any], start_response: Callable[..., Any],
                    cors: Sequence[tuple[str, str]], match: re.Match[str]) -> Iterable[bytes]:
    """``/v1/responses/{id}``: ``GET`` retrieves; ``POST .../cancel`` cancels."""
    method = environ.get("REQUEST_METHOD", "GET")
    if match["cancel"]:
        if method != "POST":
            raise _Refused("405 Method Not Allowed", "POST to cancel a response", ("Allow", "POST"))
        return _cancel(host, environ, start_response, cors, match["id"])
    if method not in ("GET", "HEAD"):
        raise _Refused("405 Method Not Allowed", "GET a response", ("Allow", "GET"))
    return _retrieve(host, environ, start_response, cors, match["id"])


_ROUTES: dict[str, Callable[..., Iterable[bytes]]] = {
    "/v1/chat/completions": _route(parse_completion_request, "chatcmpl-", _stream_frames, _whole_frames),
    "/v1/responses": _route(parse_responses_request, "resp_", _responses_stream, _responses_whole),
}


def serve_openai(host: OpenAIHost, environ: Mapping[str, Any], start_response: Callable[..., Any],
                 cors: Sequence[tuple[str, str]], run_body: RunBody) -> Iterable[bytes]:
    """Answer a request under :data:`OPENAI_PREFIX` (module docstring). The host's own refusals
    (authentication, body, limits, store: its exception type) propagate for the host to answer with
    :func:`openai_error`; this module's are answered here."""
    method = environ.get("REQUEST_METHOD", "GET")
    path = environ.get("PATH_INFO") or "/"
    try:
        route = _ROUTES.get(path)
        if route is not None:
            if method != "POST":
                raise _Refused("405 Method Not Allowed", "POST a request", ("Allow", "POST"))
            return route(host, environ, start_response, cors, run_body)
        response = _RESPONSE_PATH.match(path)
        if response is not None:
            return _response_route(host, environ, start_response, cors, response)
        if path == "/v1/models" or path.startswith("/v1/models/"):
            if method not in ("GET", "HEAD"):
                raise _Refused("405 Method Not Allowed", "GET the models", ("Allow", "GET"))
            host._principal(environ)
            return _models(path[len("/v1/models/"):] or None if path != "/v1/models" else None, start_response,
                           cors)
        raise _Refused("404 Not Found", f"no route {path!r}: this server serves /v1/chat/completions, "
                       "/v1/responses and /v1/models", code="unknown_url")
    except _Refused as refused:
        return openai_error(start_response, refused.status, refused.message, [*refused.headers, *cors],
                            refused.code, refused.param)
