"""The ``openai-responses`` provider: the OpenAI Responses API (``POST {base_url}/responses``), streamed.

Source: OpenAI API reference, "Responses" (create; input items ``message``, ``function_call``,
``function_call_output``, ``reasoning``) and "Streaming events" (``response.*`` SSE events, ``error``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from hookstream.plugin import (
    BaseEvent,
    CallContext,
    Custom,
    HTTPRequest,
    MalformedChunkError,
    Message,
    ModelRequest,
    Provider,
    ReasoningEncryptedValue,
    ReasoningPart,
    ReasoningStart,
    RunError,
    StreamBuilder,
    TextPart,
    ToolCallArgs,
    ToolCallPart,
    ToolResultPart,
    Usage,
    json_loads,
    new_id,
    parse_arguments,
)

from .common import arguments_text, auth_headers, output_text, tool_choice

__all__ = ["KEY", "OpenAIResponsesProvider", "responses_body", "responses_input", "responses_usage"]

log = logging.getLogger("hookstream_openai.responses")

# Events that carry nothing the adapter needs (their content also arrives in the mapped events).
_IGNORED = frozenset({
    "response.created", "response.in_progress", "response.queued",
    "response.content_part.added", "response.content_part.done",
    "response.output_text.done", "response.output_text.annotation.added", "response.refusal.done",
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done", "response.reasoning_text.done",
})

KEY = "openai-responses"
"""Provider-metadata key of this provider (reasoning item ids / encrypted content, function item ids)."""


def responses_usage(raw: dict[str, Any]) -> Usage:
    """A Responses ``usage`` object: ``input_tokens``, ``output_tokens`` (reasoning included),
    ``total_tokens``, ``output_tokens_details.reasoning_tokens``, ``input_tokens_details.cached_tokens``."""
    out = raw.get("output_tokens_details")
    inp = raw.get("input_tokens_details")
    return Usage(
        input_tokens=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        total_tokens=raw.get("total_tokens"),
        reasoning_tokens=out.get("reasoning_tokens") if isinstance(out, dict) else None,
        cached_input_tokens=inp.get("cached_tokens") if isinstance(inp, dict) else None,
    )


# -- request ----------------------------------------------------------------------------------------


def _text_of(m: Message) -> str:
    texts = []
    for p in m.parts:
        if not isinstance(p, TextPart):
            raise ValueError(f"a {m.role} message holds text parts only, not {p.kind}")
        texts.append(p.text)
    return "".join(texts)


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    """An assistant message as input items, in part order (consecutive text parts form one message)."""
    items: list[dict[str, Any]] = []
    text: list[str] = []
    for p in [*m.parts, None]:
        if isinstance(p, TextPart):
            text.append(p.text)
            continue
        if text:
            items.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": "".join(text)}]})
            text = []
        if p is None:
            break
        if isinstance(p, ToolCallPart):
            item = {"type": "function_call", "call_id": p.id, "name": p.name, "arguments": arguments_text(p)}
            meta = (p.provider_metadata or {}).get(KEY)
            if meta and meta.get("item_id"):
                item["id"] = meta["item_id"]
            items.append(item)
        elif isinstance(p, ReasoningPart):
            meta = (p.provider_metadata or {}).get(KEY)
            if not meta or not meta.get("item_id"):
                continue  # another provider's thinking: Responses cannot take it
            # The summary is informational (the encrypted content carries the state): one part is enough.
            summary = [{"type": "summary_text", "text": p.text}] if p.text else []
            reasoning: dict[str, Any] = {"type": "reasoning", "id": meta["item_id"], "summary": summary}
            if meta.get("encrypted_content"):
                reasoning["encrypted_content"] = meta["encrypted_content"]
            items.append(reasoning)
        else:
            raise ValueError(f"an assistant message cannot hold a {p.kind} part")
    return items


def responses_input(messages: Iterable[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(``instructions``, ``input`` items) for a conversation.

    Leading system messages become ``instructions`` (joined with a blank line); a later system
    message is a ``{"type": "message", "role": "system"}`` item. ``user`` -> message item with
    ``input_text``; assistant text -> message item with ``output_text``; tool calls ->
    ``{"type": "function_call", "call_id", "name", "arguments"}`` (plus ``id`` when this provider
    made it); tool results -> ``{"type": "function_call_output", "call_id", "output"}``. Reasoning
    parts go back as ``{"type": "reasoning", "id", "summary", "encrypted_content"}`` only when their
    provider metadata has the ``openai-responses`` key; others are dropped.
    Raises :class:`ValueError` for a part the role cannot carry.
    """
    msgs = list(messages)
    instructions: list[str] = []
    k = 0
    while k < len(msgs) and msgs[k].role == "system":
        instructions.append(_text_of(msgs[k]))
        k += 1
    items: list[dict[str, Any]] = []
    for m in msgs[k:]:
        if m.role in ("system", "user"):
            items.append({"type": "message", "role": m.role,
                          "content": [{"type": "input_text", "text": _text_of(m)}]})
        elif m.role == "assistant":
            items.extend(_assistant_items(m))
        elif m.role == "tool":
            for p in m.parts:
                if not isinstance(p, ToolResultPart):
                    raise ValueError(f"a tool message holds tool results only, not {p.kind}")
                items.append({"type": "function_call_output", "call_id": p.tool_call_id,
                              "output": output_text(p.output, p.tool_call_id)})
        else:
            raise ValueError(f"unknown message role {m.role!r}")
    return ("\n\n".join(instructions) if instructions else None), items


def responses_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a streamed ``/responses`` call; ``request.options`` are merged last.

    To get reasoning back with stateless calls pass ``options={"store": False, "include":
    ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}}``.
    """
    instructions, items = responses_input(request.messages)
    body: dict[str, Any] = {"model": request.model, "input": items, "stream": True}
    if instructions is not None:
        body["instructions"] = instructions
    if request.tools:
        tools = []
        for t in request.tools:
            tool: dict[str, Any] = {"type": "function", "name": t.name, "parameters": t.parameters}
            if t.description:
                tool["description"] = t.description
            tools.append(tool)
        body["tools"] = tools
    if request.tool_choice is not None:
        body["tool_choice"] = tool_choice(request.tool_choice, lambda name: {"type": "function", "name": name})
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body.update(request.options)
    return body


# -- stream -----------------------------------------------------------------------------------------


class _Call:
    __slots__ = ("call_id", "streamed", "streamed_len")

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.streamed: list[str] = []
        self.streamed_len = 0


def _finish_reason(status: str | None, response: dict[str, Any], tool_calls: bool) -> str:
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "content_filter" if reason == "content_filter" else "length"
    if status == "failed":
        return "error"
    return "tool_calls" if tool_calls else "stop"


class _ResponsesParse:
    """Per-call state: function calls by item id, reasoning summaries, the pending error."""

    __slots__ = ("b", "calls", "error", "reasoning_ids", "refusal", "summary_index")

    def __init__(self, b: StreamBuilder) -> None:
        self.b = b
        self.calls: dict[str, _Call] = {}  # item id (fc_...) -> call
        self.reasoning_ids: dict[str, str] = {}  # reasoning item id -> REASONING message id
        self.summary_index: dict[str, int] = {}
        self.error: tuple[str, str] | None = None
        self.refusal: list[str] = []

    def item_added(self, item: dict[str, Any]) -> list[BaseEvent]:
        kind = item.get("type")
        if kind == "function_call":
            item_id = item.get("id") or new_id("fc")
            call_id = item.get("call_id") or item_id
            name = item.get("name")
            if not name:
                raise MalformedChunkError(f"function_call item {item_id!r} without a name")
            self.calls[item_id] = _Call(call_id)
            out = self.b.tool_start(call_id, name, metadata={KEY: {"item_id": item_id}})
            args = item.get("arguments")
            if args:
                out.extend(self.args(item_id, args))
            return out
        return []

    def args(self, item_id: str, delta: str) -> list[BaseEvent]:
        call = self.calls.get(item_id)
        if call is None or not delta:
            return []
        call.streamed.append(delta)
        call.streamed_len += len(delta)
        return [ToolCallArgs(call.call_id, delta)]

    def call_done(self, item_id: str, arguments: Any) -> list[BaseEvent]:
        """End a function call; the complete ``arguments`` of the done event win over the deltas
        (a recording whose deltas were cut still yields the full arguments)."""
        call = self.calls.pop(item_id, None)
        if call is None:
            return []
        out: list[BaseEvent] = []
        parsed: dict[str, Any] | None = None
        if isinstance(arguments, str):
            streamed = "".join(call.streamed)
            if arguments != streamed:
                if arguments.startswith(streamed):
                    out.append(ToolCallArgs(call.call_id, arguments[len(streamed):]))
                else:
                    parsed = parse_arguments(arguments)
        out.extend(self.b.tool_end(call.call_id, input=parsed))
        return out

    def summary_delta(self, ev: dict[str, Any]) -> list[BaseEvent]:
        delta = ev.get("delta")
        if not delta:
            return []
        item_id = ev.get("item_id") or ""
        index = ev.get("summary_index", 0)
        out: list[BaseEvent] = []
        last = self.summary_index.get(item_id)
        if last is not None and index != last:
            out.extend(self.b.reasoning("\n\n"))  # summary parts are separate paragraphs
        self.summary_index[item_id] = index
        opened = not self.b.reasoning_open
        events = self.b.reasoning(delta)
        if opened:
            for e in events:
                if isinstance(e, ReasoningStart):
                    self.reasoning_ids[item_id] = e.message_id
        out.extend(events)
        return out

    def reasoning_done(self, item: dict[str, Any]) -> list[BaseEvent]:
        """Keep the reasoning item id and encrypted content as ``openai-responses`` metadata on the
        reasoning part, so the item can be sent back."""
        item_id = item.get("id") or ""
        meta: dict[str, Any] = {"item_id": item_id}
        enc = item.get("encrypted_content")
        if enc:
            meta["encrypted_content"] = enc
        rid = self.reasoning_ids.get(item_id)
        if rid is not None and self.b.reasoning_open:
            return self.b.end_reasoning(metadata={KEY: meta})
        return [ReasoningEncryptedValue("message", rid or item_id, enc or "", metadata={KEY: meta})]


def _error_fields(err: dict[str, Any]) -> tuple[str, str]:
    """(message, code) from an ``error`` event or ``response.error``: the documented event has
    top-level ``code``/``message``; recorded ones nest an ``error`` object with ``type``/``code``."""
    inner = err.get("error")
    src = inner if isinstance(inner, dict) else err
    message = src.get("message") or "provider error"
    code = src.get("type") if src is inner and src.get("type") else src.get("code")
    return str(message), str(code or "provider_error")


class OpenAIResponsesProvider(Provider):
    """OpenAI Responses API, streamed (no ``[DONE]``: the stream ends with ``response.completed``,
    ``response.incomplete`` or ``response.failed``).

    Stream mapping ("Streaming events" reference):

    * ``response.output_text.delta`` -> text; ``response.refusal.delta`` is collected and sent as a
      ``CUSTOM`` ``refusal`` event before the end (finish reason ``content_filter``), like the Chat
      provider.
    * ``response.reasoning_summary_text.delta`` -> ``REASONING_*`` (summary parts joined with a blank
      line); so is ``response.reasoning_text.delta`` (raw reasoning of open-weight models). The
      reasoning item's id and ``encrypted_content`` (``response.output_item.done``) become
      ``{"openai-responses": {"item_id", "encrypted_content"}}`` metadata on ``REASONING_MESSAGE_END``,
      or a ``REASONING_ENCRYPTED_VALUE`` when the item had no summary text.
    * ``function_call`` output items -> tool calls with ``call_id`` as the tool call id (the ``fc_``
      item id rides as metadata); ``response.function_call_arguments.delta`` -> ``TOOL_CALL_ARGS``;
      ``.done`` / ``output_item.done`` carry the complete arguments, which win over the deltas.
    * ``response.completed`` -> ``RUN_FINISHED`` (``stop``, or ``tool_calls`` when the model called
      functions); ``response.incomplete`` -> ``length`` (``content_filter`` when
      ``incomplete_details.reason`` says so); raw finish reason = ``response.status``; usage from
      ``response.usage`` (:func:`responses_usage`).
    * ``error`` and ``response.failed`` -> ``RUN_ERROR`` with the provider's error type as code and its
      message, ``raw_finish_reason="failed"``; text and tool calls that arrived are kept.

    Thread safety: instances hold configuration only and may be shared.
    """

    name: ClassVar[str] = "openai-responses"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/responses`` with :func:`responses_body`. Raises :class:`ValueError`."""
        return HTTPRequest(self.base_url + "/responses", responses_body(request), auth_headers(self.api_key))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context)
        st = _ResponsesParse(b)
        loads = json_loads
        yield from b.start()
        for sse in events:
            data = sse.data
            if not data:
                continue
            try:
                ev = loads(data)
            except ValueError:
                raise MalformedChunkError(f"event is not JSON: {data[:80]!r}", data) from None
            if type(ev) is not dict:
                raise MalformedChunkError(f"event is not a JSON object: {data[:80]!r}", data)
            kind = ev.get("type") or sse.event
            if kind == "response.output_text.delta":
                delta = ev.get("delta")
                if delta:
                    yield from b.text(delta)
            elif kind == "response.function_call_arguments.delta":
                yield from st.args(ev.get("item_id") or "", ev.get("delta") or "")
            elif kind == "response.reasoning_summary_text.delta" or kind == "response.reasoning_text.delta":
                yield from st.summary_delta(ev)
            elif kind == "response.output_item.added":
                item = ev.get("item")
                if isinstance(item, dict):
                    yield from st.item_added(item)
            elif kind == "response.function_call_arguments.done":
                yield from st.call_done(ev.get("item_id") or "", ev.get("arguments"))
            elif kind == "response.output_item.done":
                item = ev.get("item")
                if isinstance(item, dict):
                    if item.get("type") == "function_call":
                        yield from st.call_done(item.get("id") or "", item.get("arguments"))
                    elif item.get("type") == "reasoning":
                        yield from st.reasoning_done(item)
            elif kind == "response.refusal.delta":
                if ev.get("delta"):
                    st.refusal.append(ev["delta"])
            elif kind == "error":
                st.error = _error_fields(ev)
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                yield from self._end(st, ev.get("response") or {}, kind)
                return
            elif kind not in _IGNORED:
                log.debug("skipping a Responses event of unknown type %r", kind)
        if st.error is not None:
            # ``error`` without a closing ``response.failed``: still the provider's own error.
            message, code = st.error
            b.closed = True
            yield RunError(message, code=code)

    def _end(self, st: _ResponsesParse, response: dict[str, Any], kind: str) -> Iterator[BaseEvent]:
        b = st.b
        status = response.get("status") or kind.rsplit(".", 1)[1]
        raw_usage = response.get("usage")
        usage = responses_usage(raw_usage) if isinstance(raw_usage, dict) else None
        metadata = {KEY: {"response_id": response["id"]}} if response.get("id") else None
        if st.refusal:
            text = "".join(st.refusal)
            yield Custom("refusal", {"text": text})
            metadata = {KEY: {**(metadata or {}).get(KEY, {}), "refusal": text}}
        if kind == "response.failed" or st.error is not None:
            err = response.get("error")
            message, code = st.error or (_error_fields(err) if isinstance(err, dict) else
                                         ("response failed", "provider_error"))
            b.closed = True
            yield RunError(message, code=code, usage=usage, raw_finish_reason=status, metadata=metadata)
            return
        finish = _finish_reason(status, response, bool(b.started_tools))
        if st.refusal and finish == "stop":
            finish = "content_filter"
        yield from b.finish(finish, status, usage, metadata=metadata)
