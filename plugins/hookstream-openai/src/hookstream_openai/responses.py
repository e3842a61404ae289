"""The ``openai-responses`` provider: the OpenAI Responses API (``POST {base_url}/responses``), streamed.

Source: OpenAI API reference, "Responses" (create; input items ``message``, ``function_call``,
``function_call_output``, ``reasoning``) and "Streaming events" (``response.*`` SSE events, ``error``).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from hookstream import FilePart, Message, ReasoningPart, SourcePart, TextPart, ToolCallPart, ToolResultPart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Custom, ReasoningEncryptedValue, ReasoningStart, RunError, Usage
from hookstream.plugin import (
    CallContext,
    HTTPRequest,
    ModelRequest,
    OutputFormat,
    Provider,
    StreamBuilder,
    json_loads,
    new_id,
    parse_arguments,
)

from .common import arguments_text, auth_headers, output_text, tool_choice

__all__ = [
    "FINISH_REASONS",
    "KEY",
    "OpenAIResponsesProvider",
    "responses_body",
    "responses_file_part",
    "responses_input",
    "responses_text_format",
    "responses_usage",
]

log = logging.getLogger("hookstream_openai.responses")

# Events that carry nothing the adapter needs (their content also arrives in the mapped events).
_IGNORED = frozenset({
    "response.created", "response.in_progress", "response.queued",
    "response.content_part.added", "response.content_part.done",
    "response.output_text.done", "response.refusal.done",
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done", "response.reasoning_text.done",
})

# Progress events of provider-executed tools; the finished item (``response.output_item.done``) holds
# everything they announce, and is kept.
_TOOL_PROGRESS = ("response.web_search_call.", "response.file_search_call.", "response.code_interpreter_call",
                  "response.image_generation_call.", "response.mcp_", "response.computer_call",
                  "response.custom_tool_call_input.")

_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

# Output items this adapter maps itself; every other item is provider-executed and kept for the next turn.
_MAPPED_ITEMS = frozenset({"function_call", "reasoning", "message", "image_generation_call"})

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


def responses_file_part(f: FilePart) -> dict[str, Any]:
    """One file as a Responses input content part (API reference, "Responses" create, input message
    content ``input_image`` / ``input_file``; guides "Images and vision", "File inputs"):

    * image -> ``{"type": "input_image", "image_url": https URL or data URL, "detail": "auto"}``;
    * PDF -> ``{"type": "input_file", "filename", "file_data": "data:application/pdf;base64,..."}``, or
      ``{"type": "input_file", "file_url": URL}`` for a URL;
    * ``text/*`` bytes -> ``{"type": "input_text", "text": the decoded text}``.

    Audio raises :class:`ValueError`: the Responses API takes text, image and file inputs; audio input
    is a Chat Completions feature (guide "Audio and speech": "use Chat Completions" for audio in). So
    does any other document type, before the request is sent.
    """
    category = f.category
    if category == "image":
        return {"type": "input_image", "image_url": f.data_url(), "detail": "auto"}
    if category == "audio":
        raise ValueError(f"the Responses API takes no audio input ({f!r}); use the openai (Chat Completions) "
                         "provider with an audio model")
    if f.media_type == "application/pdf":
        if f.url is not None:
            return {"type": "input_file", "file_url": f.url}
        return {"type": "input_file", "filename": f.filename or "document.pdf", "file_data": f.data_url()}
    if f.media_type.startswith("text/") and f.data is not None:
        try:
            return {"type": "input_text", "text": f.data.decode("utf-8")}
        except UnicodeDecodeError:
            raise ValueError(f"{f!r} is not UTF-8 text") from None
    raise ValueError(f"the Responses API cannot take {f!r}: documents must be PDF or text")


def _input_content(m: Message) -> list[dict[str, Any]]:
    """A user/system message's content list: ``input_text`` and file parts, in part order."""
    content: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, TextPart):
            content.append({"type": "input_text", "text": p.text})
        elif isinstance(p, FilePart) and m.role == "user":
            content.append(responses_file_part(p))
        else:
            raise ValueError(f"a {m.role} message cannot hold a {p.kind} part")
    return content


def _tool_output(p: ToolResultPart) -> str | list[dict[str, Any]]:
    """A ``function_call_output``'s ``output``: the text, or with files the documented content list
    (``input_text`` then ``input_image`` / ``input_file``; API reference, function call output
    ``output``: "string or array of input_text, input_image, input_file")."""
    text = output_text(p.output, p.tool_call_id)
    if not p.files:
        return text
    return [{"type": "input_text", "text": text}, *(responses_file_part(f) for f in p.files)]


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    """An assistant message as input items, in part order (consecutive text parts form one message).

    Provider-executed items this provider streamed (``web_search_call``, ``code_interpreter_call``,
    ``mcp_call``...) ride in the ``items_before`` metadata of the part that followed them and go back
    whole, just before it. A generated image goes back as its ``image_generation_call`` item. Sources
    are not sent (their text is in the message)."""
    items: list[dict[str, Any]] = []
    text: list[str] = []
    for p in [*m.parts, None]:
        meta = (p.provider_metadata or {}).get(KEY) if p is not None else None
        before = meta.get("items_before") if meta else None
        if isinstance(p, TextPart) and not before:
            text.append(p.text)
            continue
        joined = "".join(text)
        if joined:
            items.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": joined}]})
        text = []
        if p is None:
            break
        if before:
            items.extend(before)
        if isinstance(p, TextPart):
            text.append(p.text)
        elif isinstance(p, ToolCallPart):
            item = {"type": "function_call", "call_id": p.id, "name": p.name, "arguments": arguments_text(p)}
            if meta and meta.get("item_id"):
                item["id"] = meta["item_id"]
            items.append(item)
        elif isinstance(p, ReasoningPart):
            if not meta or not meta.get("item_id"):
                # Another provider's thinking (Responses cannot take it), or the part that only
                # carries trailing provider-executed items (sent just above).
                continue
            # The summary is informational (the encrypted content carries the state): one part is enough.
            summary = [{"type": "summary_text", "text": p.text}] if p.text else []
            reasoning: dict[str, Any] = {"type": "reasoning", "id": meta["item_id"], "summary": summary}
            if meta.get("encrypted_content"):
                reasoning["encrypted_content"] = meta["encrypted_content"]
            items.append(reasoning)
        elif isinstance(p, FilePart):
            if meta and meta.get("item_id") and p.data is not None:
                items.append({"type": "image_generation_call", "id": meta["item_id"], "status": "completed",
                              "result": p.base64()})
            # A file another provider generated has no Responses input form in an assistant turn.
        elif not isinstance(p, SourcePart):
            raise ValueError(f"an assistant message cannot hold a {p.kind} part")
    return items


def responses_input(messages: Iterable[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(``instructions``, ``input`` items) for a conversation.

    Leading system messages become ``instructions`` (joined with a blank line); a later system
    message is a ``{"type": "message", "role": "system"}`` item. ``user`` -> message item with
    ``input_text`` and file parts (:func:`responses_file_part`); assistant text -> message item with
    ``output_text``; tool calls ->
    ``{"type": "function_call", "call_id", "name", "arguments"}`` (plus ``id`` when this provider
    made it); tool results -> ``{"type": "function_call_output", "call_id", "output"}`` (``output`` a
    content list when the tool returned files); provider-executed items go back whole (see
    ``_assistant_items``). Reasoning
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
            items.append({"type": "message", "role": m.role, "content": _input_content(m)})
        elif m.role == "assistant":
            items.extend(_assistant_items(m))
        elif m.role == "tool":
            for p in m.parts:
                if not isinstance(p, ToolResultPart):
                    raise ValueError(f"a tool message holds tool results only, not {p.kind}")
                items.append({"type": "function_call_output", "call_id": p.tool_call_id,
                              "output": _tool_output(p)})
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
    if request.output is not None:
        # After the options, beside any ``text`` settings they carry (``verbosity``).
        text = body.get("text")
        body["text"] = {**(text if isinstance(text, dict) else {}), "format": responses_text_format(request.output)}
    return body


def responses_text_format(output: OutputFormat) -> dict[str, Any]:
    """Structured output as Responses ``text.format`` (API reference, "Create a model response" >
    ``text.format``; guide "Structured Outputs"): ``{"type": "json_schema", "name", "schema",
    "strict"}``, strict only where the schema allows it (:attr:`OutputFormat.strict`). The answer
    streams as ``response.output_text.delta`` events like any text."""
    return {"type": "json_schema", "name": output.name, "schema": output.schema, "strict": output.strict}


# -- stream -----------------------------------------------------------------------------------------


FINISH_REASONS: dict[str, str] = {
    "completed": "stop",
    "incomplete": "length",
    "incomplete:max_output_tokens": "length",
    "incomplete:content_filter": "content_filter",
    "failed": "error",
}
"""Responses ``response.status`` -> normalised finish reason, under the builder's one policy
(:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`: ``completed`` with function calls is
``tool_calls``, with only a refusal ``content_filter``). An ``incomplete`` response is looked up as
``incomplete:REASON`` (``incomplete_details.reason``) first; the raw finish reason stays the status."""


def _finish_key(status: str, response: dict[str, Any]) -> str:
    """The :data:`FINISH_REASONS` key of a response: ``incomplete:REASON`` when the table knows that
    reason, else the status."""
    if status == "incomplete":
        details = response.get("incomplete_details")
        key = f"incomplete:{details.get('reason')}" if isinstance(details, dict) else status
        return key if key in FINISH_REASONS else status
    return status


class _ResponsesParse:
    """Per-call state: function calls by item id, reasoning summaries, the pending error."""

    __slots__ = ("b", "calls", "cited", "error", "items", "reasoning_ids", "refusal", "summary_index")

    def __init__(self, b: StreamBuilder) -> None:
        self.b = b
        self.calls: dict[str, str] = {}  # item id (fc_...) -> call id
        self.reasoning_ids: dict[str, str] = {}  # reasoning item id -> REASONING message id
        self.summary_index: dict[str, int] = {}
        self.error: tuple[str, str] | None = None
        self.refusal: list[str] = []
        self.items: list[dict[str, Any]] = []  # provider-executed items not yet attached to a part
        self.cited: set[tuple[Any, ...]] = set()

    def event(self, kind: str, ev: dict[str, Any], name: str) -> list[BaseEvent]:
        """Events of one Responses event of type ``kind`` other than text and argument deltas and the
        terminal ones (the generator maps those); an unknown type is passed on as ``RAW`` from ``name``."""
        if kind in _REASONING_DELTAS:
            return self.summary_delta(ev)
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = ev.get("item")
            if not isinstance(item, dict):
                return []
            return self.item_added(item) if kind == "response.output_item.added" else self.output_item_done(item)
        if kind == "response.function_call_arguments.done":
            return self.call_done(ev.get("item_id") or "", ev.get("arguments"))
        if kind == "response.output_text.annotation.added":
            return self.annotation(ev.get("annotation"))
        if kind == "response.refusal.delta":
            if ev.get("delta"):
                self.refusal.append(ev["delta"])
            return []
        if kind == "error":
            self.error = _error_fields(ev)
            return []
        if kind in _IGNORED or kind.startswith(_TOOL_PROGRESS):
            return []
        log.debug("passing on a Responses event of unknown type %r", kind)
        return self.b.raw(ev, name)

    def output_item_done(self, item: dict[str, Any]) -> list[BaseEvent]:
        """A finished output item: a function call's complete arguments, a reasoning item's id and
        encrypted content, or any other item (:meth:`item_done`)."""
        if item.get("type") == "function_call":
            return self.call_done(item.get("id") or "", item.get("arguments"))
        if item.get("type") == "reasoning":
            return self.reasoning_done(item)
        return self.item_done(item)

    def take_items(self, meta: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """``meta`` (this provider's metadata of the part about to open) plus ``items_before``: the
        provider-executed items that came before it, so the history keeps them in order."""
        if not self.items:
            return {KEY: meta} if meta else None
        items, self.items = self.items, []
        return {KEY: {**(meta or {}), "items_before": items}}

    def trailing_items(self) -> list[BaseEvent]:
        """Provider-executed items after the last part (a web search with no message after it): one
        ``REASONING_ENCRYPTED_VALUE`` (the last item's id as the value) whose ``items_before`` metadata
        makes it a part of the assistant message, so the items go back on the next turn. Not an empty
        text message: AG-UI clients reject an empty ``TEXT_MESSAGE_CONTENT``, and a message with no text
        would show as one. Open text and reasoning are closed first, so the part comes last."""
        b = self.b
        out = b.end_text()
        out.extend(b.end_reasoning())
        last = self.items[-1].get("id")
        value = last if isinstance(last, str) else ""
        out.append(ReasoningEncryptedValue("message", new_id("srv"), value, metadata=self.take_items()))
        return out

    def text(self, delta: str) -> list[BaseEvent]:
        b = self.b
        if b.text_open or not self.items:
            return b.text(delta)
        return b.text(delta, metadata=self.take_items())

    def annotation(self, a: Any) -> list[BaseEvent]:
        """A ``url_citation`` (``url``, ``title``, ``start_index``, ``end_index``), ``file_citation``
        (``file_id``, ``filename``, ``index``) or ``container_file_citation`` annotation as a source,
        once (the done message item repeats them)."""
        if not isinstance(a, dict):
            return []
        kind = a.get("type")
        key = (kind, a.get("url"), a.get("file_id"), a.get("start_index"), a.get("index"))
        if key in self.cited:
            return []
        self.cited.add(key)
        meta = {KEY: {"annotation": a}}
        if kind == "url_citation" and isinstance(a.get("url"), str):
            return self.b.source(SourcePart(new_id("src"), "url", url=a["url"], title=a.get("title") or None,
                                            start_index=_int(a.get("start_index")),
                                            end_index=_int(a.get("end_index")), provider_metadata=meta))
        if kind in ("file_citation", "container_file_citation"):
            return self.b.source(SourcePart(new_id("src"), "document", title=a.get("filename") or a.get("file_id"),
                                            start_index=_int(a.get("start_index", a.get("index"))),
                                            end_index=_int(a.get("end_index")), provider_metadata=meta))
        return self.b.raw(a, KEY)

    def item_done(self, item: dict[str, Any]) -> list[BaseEvent]:
        """A finished output item that is not a function call or reasoning: message annotations not
        yet seen become sources, a generated image a file, a provider-executed item is kept."""
        kind = item.get("type")
        out: list[BaseEvent] = []
        if kind == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict):
                    for a in part.get("annotations") or []:
                        out.extend(self.annotation(a))
        elif kind == "image_generation_call":
            result = item.get("result")
            if isinstance(result, str) and result:
                try:
                    data = base64.b64decode(result, validate=True)
                except (binascii.Error, ValueError):
                    raise MalformedChunkError("image_generation_call result is not base64") from None
                fmt = item.get("output_format") or "png"
                meta: dict[str, Any] = {"item_id": item.get("id")}
                if item.get("revised_prompt"):
                    meta["revised_prompt"] = item["revised_prompt"]
                out.extend(self.b.file(FilePart(f"image/{fmt}", data=data, provider_metadata={KEY: meta})))
        elif kind not in _MAPPED_ITEMS:
            self.items.append(item)
        return out

    def item_added(self, item: dict[str, Any]) -> list[BaseEvent]:
        kind = item.get("type")
        if kind == "function_call":
            item_id = item.get("id") or new_id("fc")
            call_id = item.get("call_id") or item_id
            name = item.get("name")
            if not name:
                raise MalformedChunkError(f"function_call item {item_id!r} without a name")
            self.calls[item_id] = call_id
            out = self.b.tool_start(call_id, name, metadata=self.take_items({"item_id": item_id}))
            args = item.get("arguments")
            if args:
                out.extend(self.args(item_id, args))
            return out
        return []

    def args(self, item_id: str, delta: str) -> list[BaseEvent]:
        call_id = self.calls.get(item_id)
        if call_id is None:
            return []
        return self.b.tool_args(call_id, delta)

    def call_done(self, item_id: str, arguments: Any) -> list[BaseEvent]:
        """End a function call. The done event's ``arguments`` are the deltas joined
        (``response.function_call_arguments.done``); when they are longer than what streamed (a
        recording whose deltas were cut), the missing tail is streamed first, and when they are shorter
        they win as ``input``. A call with no argument text at all ends with ``input={}`` (sent as its
        one ``TOOL_CALL_ARGS`` by the builder)."""
        call_id = self.calls.pop(item_id, None)
        if call_id is None:
            return []
        out: list[BaseEvent] = []
        given = None
        if isinstance(arguments, str):
            # Compared by length: the deltas' text is not kept here (the engine joins it once for all).
            sent = self.b.tool_args_length(call_id)
            if len(arguments) > sent:
                out.extend(self.b.tool_args(call_id, arguments[sent:]))
            elif len(arguments) < sent:
                given = parse_arguments(arguments)
        if given is None and not self.b.tool_args_length(call_id):
            given = {}  # empty arguments, as the engine reads them
        out.extend(self.b.tool_end(call_id, input=given))
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
        events = self.b.reasoning(delta, metadata=self.take_items() if opened else None)
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
        # A reasoning item without summary text is a part of its own here: the provider-executed items
        # that came before it go back before it.
        metadata = {KEY: meta} if rid is not None else self.take_items(meta)
        return [ReasoningEncryptedValue("message", rid or item_id, enc or "", metadata=metadata)]


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _error_fields(err: dict[str, Any]) -> tuple[str, str]:
    """(message, code) from an ``error`` event or ``response.error``: the documented event has
    top-level ``code``/``message``; recorded ones nest an ``error`` object with ``type``/``code``."""
    inner = err.get("error")
    src = inner if isinstance(inner, dict) else err
    message = src.get("message") or "provider error"
    code = src.get("type") if src is inner and src.get("type") else src.get("code")
    return str(message), str(code or "provider_error")


# The body fields POST /responses/input_tokens takes (API reference, "Get input token counts").
_COUNT_FIELDS = frozenset({"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
                           "previous_response_id", "conversation", "reasoning", "text", "truncation"})


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
    * ``url_citation`` / ``file_citation`` annotations (``response.output_text.annotation.added``, and
      those of the done message item not yet seen) -> ``CUSTOM`` ``source`` events.
    * ``image_generation_call`` items -> ``CUSTOM`` ``file`` events (the decoded image; the item id in
      ``openai-responses`` metadata, so the image goes back as that item).
    * Other output items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
      ``mcp_call``, ``mcp_list_tools``...) ran at the provider: each is kept whole in the
      ``items_before`` metadata of the next part (a ``REASONING_ENCRYPTED_VALUE`` part when none
      follows, never an empty text message) and sent back before that part on the next turn. Their
      progress events are not mapped; any other event type -> ``RAW`` (counted; streamed with
      ``include_raw``).
    * Every ``TOOL_CALL_END`` carries ``input`` (the parsed arguments).
    * ``response.completed`` -> ``RUN_FINISHED`` (with ``response.id`` and ``response.model`` as
      ``response_id`` / ``model``) (``stop``, or ``tool_calls`` when the model called
      functions); ``response.incomplete`` -> ``length`` (``content_filter`` when
      ``incomplete_details.reason`` says so); raw finish reason = ``response.status``; usage from
      ``response.usage`` (:func:`responses_usage`).
    * ``error`` and ``response.failed`` -> ``RUN_ERROR`` with the provider's error type as code and its
      message, ``raw_finish_reason="failed"``; text and tool calls that arrived are kept.

    Thread safety: instances hold configuration only and may be shared.
    """

    name: ClassVar[str] = "openai-responses"
    finish_reasons: ClassVar[Mapping[str, str]] = FINISH_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = "stop"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    key_name: ClassVar[str] = "openai"  # hookstream keys set openai: one key for both OpenAI APIs

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/responses`` with :func:`responses_body`. Raises :class:`ValueError`."""
        return HTTPRequest(self.base_url + "/responses", responses_body(request), auth_headers(self.api_key))

    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """``POST {base_url}/responses/input_tokens`` (API reference, "Responses" > "Input tokens"): the
        URL of :meth:`build_request` with ``/input_tokens`` added to its path, and its body less the
        fields the count endpoint does not take (``stream``, output limits, sampling, ``store``...). The
        answer is ``{"object": "response.input_tokens", "input_tokens": N}``."""
        http = self.build_request(request)
        parts = urlsplit(http.url)
        url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/input_tokens"))
        body = {k: v for k, v in http.json.items() if k in _COUNT_FIELDS}
        return HTTPRequest(url, body, dict(http.headers))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context, FINISH_REASONS)
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
            if kind == "response.output_text.delta":  # most events: straight to the builder
                delta = ev.get("delta")
                if delta:
                    yield from st.text(delta)
            elif kind == "response.function_call_arguments.delta":
                yield from st.args(ev.get("item_id") or "", ev.get("delta") or "")
            elif kind in _TERMINAL:
                yield from self._end(st, ev.get("response") or {}, kind)
                return
            else:
                yield from st.event(kind, ev, self.name)
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
        finish = b.finish_reason(_finish_key(status, response), refusal=bool(st.refusal))
        if st.items:
            yield from st.trailing_items()
        model = response.get("model")
        yield from b.finish(finish, status, usage, metadata=metadata, response_id=response.get("id") or None,
                            model=model if isinstance(model, str) and model else None)
