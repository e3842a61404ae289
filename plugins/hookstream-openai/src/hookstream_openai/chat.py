"""The ``openai`` provider: OpenAI Chat Completions streaming, for OpenAI and OpenAI-compatible servers.

Request: ``POST {base_url}/chat/completions`` (OpenAI API reference, "Create chat completion") with
``stream: true`` and ``stream_options.include_usage: true``. Response: SSE ``data: <chunk JSON>`` lines
ending with ``data: [DONE]`` (API reference, "The chat completion chunk object"), mapped to AG-UI events.

The same parser reads the OpenAI-compatible dialects recorded in the shared corpus (Azure OpenAI,
DeepSeek, Groq, Mistral, DashScope/Qwen, xAI, vLLM-style servers); see :class:`OpenAIChatProvider`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from hookstream import FilePart, Message, ReasoningPart, SourcePart, TextPart, ToolCallPart, ToolResultPart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Custom, Usage
from hookstream.plugin import (
    CallContext,
    HTTPRequest,
    ModelRequest,
    OutputFormat,
    Provider,
    StreamBuilder,
    json_loads,
    new_id,
)

from .common import arguments_text, auth_headers, output_text, tool_choice

if TYPE_CHECKING:
    from hookstream.plugin import BatchAPI

__all__ = [
    "FINISH_REASONS",
    "OpenAIChatProvider",
    "chat_body",
    "chat_file_part",
    "chat_messages",
    "chat_response_format",
    "chat_usage",
]

log = logging.getLogger("hookstream_openai.chat")

FINISH_REASONS: dict[str, str] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the deprecated ``functions`` API
    # Values some OpenAI-compatible servers send instead of the OpenAI ones.
    "eos": "stop",
    "stop_sequence": "stop",
    "end_turn": "stop",
    "max_tokens": "length",
    "model_length": "length",
    "error": "error",
    "insufficient_system_resource": "error",  # DeepSeek: the server cut the answer off
}
"""Chat Completions ``finish_reason`` (and compatible servers' values) -> normalised finish reason,
under the builder's one policy (:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`):
``stop`` with tool calls is ``tool_calls`` (a forced ``tool_choice`` answers ``stop``), ``stop`` with
only a refusal ``content_filter``, a missing or unknown value ``stop`` (then the same two rules)."""


def _keep_fields(obj: dict[str, Any], fields: tuple[str, ...], kept: dict[str, Any]) -> None:
    """Keep ``fields`` of ``obj`` in ``kept`` (see :attr:`OpenAIChatProvider.kept_fields`): each field's
    last value, and under ``"filtered"`` every value that filtered something, so a long answer keeps
    one value per field plus the few that matter, not one per chunk."""
    for key in fields:
        value = obj.get(key)
        if value:
            kept[key] = value
            if '"filtered": true' in json.dumps(value):
                kept.setdefault("filtered", []).append({key: value})


def chat_usage(raw: dict[str, Any]) -> Usage:
    """A Chat Completions ``usage`` object (tokens) as :class:`Usage`.

    ``prompt_tokens`` -> input, ``completion_tokens`` -> output (reasoning included, as OpenAI counts it),
    ``completion_tokens_details.reasoning_tokens`` -> reasoning, ``prompt_tokens_details.cached_tokens``
    (DeepSeek: ``prompt_cache_hit_tokens``) -> cached input.
    """
    out = raw.get("completion_tokens_details")
    inp = raw.get("prompt_tokens_details")
    cached = inp.get("cached_tokens") if isinstance(inp, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")
    return Usage(
        input_tokens=raw.get("prompt_tokens"),
        output_tokens=raw.get("completion_tokens"),
        total_tokens=raw.get("total_tokens"),
        reasoning_tokens=out.get("reasoning_tokens") if isinstance(out, dict) else None,
        cached_input_tokens=cached,
    )


# -- request ----------------------------------------------------------------------------------------


_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3",
                  "audio/mp3": "mp3"}


def chat_file_part(f: FilePart) -> dict[str, Any]:
    """One file as a Chat Completions user content part (OpenAI API reference, "Create chat completion",
    user message content parts; guides "Images and vision", "Audio", "File inputs"):

    * image -> ``{"type": "image_url", "image_url": {"url": https URL or data URL}}``;
    * audio -> ``{"type": "input_audio", "input_audio": {"data": base64, "format": "wav" | "mp3"}}``
      (bytes only: the API takes no audio URL, and only these two formats);
    * PDF -> ``{"type": "file", "file": {"filename", "file_data": "data:application/pdf;base64,..."}}``
      (bytes only: a URL would need the Files API);
    * ``text/*`` bytes -> a ``text`` part holding the decoded text (the API has no plain-text file part).

    Raises :class:`ValueError` for anything else, before the request is sent.
    """
    category = f.category
    if category == "image":
        return {"type": "image_url", "image_url": {"url": f.data_url()}}
    if category == "audio":
        fmt = _AUDIO_FORMATS.get(f.media_type)
        if fmt is None or f.data is None:
            raise ValueError(f"Chat Completions takes audio as wav or mp3 bytes, not {f!r}")
        return {"type": "input_audio", "input_audio": {"data": f.base64(), "format": fmt}}
    if f.media_type == "application/pdf" and f.data is not None:
        return {"type": "file", "file": {"filename": f.filename or "document.pdf", "file_data": f.data_url()}}
    if f.media_type.startswith("text/") and f.data is not None:
        try:
            return {"type": "text", "text": f.data.decode("utf-8")}
        except UnicodeDecodeError:
            raise ValueError(f"{f!r} is not UTF-8 text") from None
    raise ValueError(f"Chat Completions cannot take {f!r}: documents must be PDF or text bytes")


def _user_content(m: Message) -> str | list[dict[str, Any]]:
    """A user/system message's ``content``: the text as a string when there are no files (what every
    OpenAI-compatible server takes), else a list of content parts in part order."""
    if not any(isinstance(p, FilePart) for p in m.parts):
        texts = []
        for p in m.parts:
            if not isinstance(p, TextPart):
                raise ValueError(f"a {m.role} message holds text and file parts only, not {p.kind}")
            texts.append(p.text)
        return "".join(texts)
    if m.role != "user":
        raise ValueError(f"a {m.role} message cannot hold files")
    content: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, TextPart):
            content.append({"type": "text", "text": p.text})
        elif isinstance(p, FilePart):
            content.append(chat_file_part(p))
        else:
            raise ValueError(f"a user message holds text and file parts only, not {p.kind}")
    return content


def chat_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Model messages as Chat Completions ``messages``.

    ``system``/``user`` -> ``{"role", "content": text}``, or for a user message with files a content
    list (``text`` parts and :func:`chat_file_part` parts, in order); ``assistant`` ->
    ``{"role": "assistant", "content": text (``""`` when there is only tool calls), "tool_calls": [{"id",
    "type": "function", "function": {"name", "arguments": JSON text}}]}``; each tool result ->
    ``{"role": "tool", "tool_call_id", "content"}``.

    Tool results with files (a screenshot tool): a ``tool`` message's ``content`` is text only (API
    reference, "Create chat completion", tool message: "content: string or array of text content
    parts"), so the files follow the tool messages of that turn in one ``user`` message: a ``text`` part
    naming the tool call (``"Files returned by tool call <id> (<name>):"``) then the file parts.
    Reasoning, source and generated-file parts of assistant messages are not sent: Chat Completions
    has no input field for them.
    Raises :class:`ValueError` for a part the role cannot carry, a file kind the API cannot take, or a
    tool output that is not JSON-able.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role in ("system", "user"):
            out.append({"role": m.role, "content": _user_content(m)})
        elif m.role == "assistant":
            text: list[str] = []
            calls: list[dict[str, Any]] = []
            for p in m.parts:
                if isinstance(p, TextPart):
                    text.append(p.text)
                elif isinstance(p, ToolCallPart):
                    calls.append(
                        {"id": p.id, "type": "function",
                         "function": {"name": p.name, "arguments": arguments_text(p)}}
                    )
                elif not isinstance(p, (ReasoningPart, SourcePart, FilePart)):
                    raise ValueError(f"an assistant message cannot hold a {p.kind} part")
            # ``content`` is always a string, ``""`` beside tool calls: OpenAI accepts null or "", but
            # OpenAI-compatible servers do not (llama-cpp-python rejects null, and some chat templates
            # fail when the key is absent), and "" is accepted everywhere we know of.
            msg: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        elif m.role == "tool":
            follow: list[dict[str, Any]] = []
            for p in m.parts:
                if not isinstance(p, ToolResultPart):
                    raise ValueError(f"a tool message holds tool results only, not {p.kind}")
                out.append({"role": "tool", "tool_call_id": p.tool_call_id,
                            "content": output_text(p.output, p.tool_call_id)})
                if p.files:
                    follow.append({"type": "text",
                                   "text": f"Files returned by tool call {p.tool_call_id} ({p.tool_name}):"})
                    follow.extend(chat_file_part(f) for f in p.files)
            if follow:
                out.append({"role": "user", "content": follow})
        else:
            raise ValueError(f"unknown message role {m.role!r}")
    return out


def chat_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a streamed ``/chat/completions`` call; ``request.options`` are merged last.

    For reasoning models that reject ``max_tokens``, pass ``options={"max_completion_tokens": N}``.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        tools = []
        for t in request.tools:
            fn: dict[str, Any] = {"name": t.name, "parameters": t.parameters}
            if t.description:
                fn["description"] = t.description
            tools.append({"type": "function", "function": fn})
        body["tools"] = tools
    if request.tool_choice is not None:
        body["tool_choice"] = tool_choice(
            request.tool_choice, lambda name: {"type": "function", "function": {"name": name}}
        )
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.output is not None:
        body["response_format"] = chat_response_format(request.output)
    body.update(request.options)
    return body


def chat_response_format(output: OutputFormat) -> dict[str, Any]:
    """Structured output as Chat Completions ``response_format`` (API reference, "Create chat
    completion" > ``response_format``; guide "Structured Outputs"): ``{"type": "json_schema",
    "json_schema": {"name", "schema", "strict"}}``. ``strict`` is true only when the schema meets the
    strict-mode rules (:attr:`OutputFormat.strict`); the answer streams as ordinary content deltas."""
    return {"type": "json_schema", "json_schema": {"name": output.name, "schema": output.schema,
                                                   "strict": output.strict}}


# -- stream -----------------------------------------------------------------------------------------


class _ToolSlot:
    """One tool call being assembled from deltas (grouped by ``index``, or by ``id``)."""

    __slots__ = ("id", "name", "pending", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.pending: list[str] = []  # argument text that arrived before the name
        self.started = False


class _ChatParse:
    """Per-call state of the chunk mapping. Hot path (text deltas) stays in the generator."""

    __slots__ = ("b", "context", "id_keys", "kept", "kept_fields", "last_key", "model", "raw_finish", "refusal",
                 "response_id", "slots", "source_urls", "usage")

    def __init__(self, b: StreamBuilder, context: CallContext, kept_fields: tuple[str, ...] = ()) -> None:
        self.b = b
        self.context = context
        self.kept_fields = kept_fields
        self.kept: dict[str, Any] = {}
        self.raw_finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.slots: dict[Any, _ToolSlot] = {}
        self.id_keys: dict[str, Any] = {}
        self.last_key: Any = None
        self.refusal: list[str] = []
        self.source_urls: set[str] = set()
        self.response_id: str | None = None
        self.model: str | None = None

    def sources(self, annotations: Any) -> list[BaseEvent]:
        """OpenAI-compatible ``annotations`` (OpenAI web search, OpenRouter's web plugin):
        ``[{"type": "url_citation", "url_citation": {"url", "title", "start_index", "end_index",
        "content"}}]`` (OpenAI's form puts the fields beside ``type``); Perplexity's ``citations`` (URL
        strings) and ``search_results`` (``{"url", "title"}``). Each URL becomes one source, once."""
        out: list[BaseEvent] = []
        if not isinstance(annotations, list):
            return out
        for a in annotations:
            if isinstance(a, str):
                a = {"url": a}
            if not isinstance(a, dict):
                continue
            inner = a.get("url_citation")
            fields: dict[str, Any] = inner if isinstance(inner, dict) else a
            url = fields.get("url")
            if not isinstance(url, str) or url in self.source_urls:
                continue
            self.source_urls.add(url)
            title = fields.get("title")
            cited = fields.get("content")
            start, end = fields.get("start_index"), fields.get("end_index")
            out.extend(self.b.source(SourcePart(
                new_id("src"), "url", url=url,
                title=title if isinstance(title, str) and title else None,
                cited_text=cited if isinstance(cited, str) else None,
                start_index=start if type(start) is int else None, end_index=end if type(end) is int else None,
                provider_metadata={"openai": {"annotation": a}},
            )))
        return out

    def choice(self, choices: list[Any]) -> list[BaseEvent]:
        """Events of choice 0 of a chunk that is not text alone (the generator maps those itself)."""
        choice = choices[0]
        if choice.get("index", 0) != 0:
            choice = next((c for c in choices if c.get("index", 0) == 0), None)
            if choice is None:
                return []
        if self.kept_fields:
            _keep_fields(choice, self.kept_fields, self.kept)
        delta = choice.get("delta")
        out = self.delta(delta) if delta and type(delta) is dict else []
        message = choice.get("message")  # some routers repeat the whole message at the end
        if type(message) is dict and message.get("annotations"):
            out.extend(self.sources(message["annotations"]))
        finish = choice.get("finish_reason")
        if finish:
            self.raw_finish = finish
        return out

    def delta(self, delta: dict[str, Any]) -> list[BaseEvent]:
        """Events of one choice ``delta``: reasoning, text (or Mistral's typed content), tool call
        pieces, a refusal (kept for the end), annotations."""
        b = self.b
        out: list[BaseEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and type(reasoning) is str:
            out.extend(b.reasoning(reasoning))
        content = delta.get("content")
        if content and type(content) is str:
            out.extend(b.text(content))
        elif content and type(content) is list:
            out.extend(self.typed_content(content))
        calls = delta.get("tool_calls")
        if calls:
            out.extend(self.tool_deltas(calls))
        refusal = delta.get("refusal")
        if refusal:
            self.refusal.append(refusal)
        annotations = delta.get("annotations")
        if annotations:
            out.extend(self.sources(annotations))
        return out

    def chunk_fields(self, chunk: dict[str, Any]) -> list[BaseEvent] | None:
        """What a chunk carries beside its choices: the response id (first one) and model (last one),
        Perplexity's sources, usage (last non-empty; Groq's ``x_groq.usage``), and an in-stream
        ``error``, which ends the call (``RUN_ERROR``, the builder is then closed). ``None`` when there
        is nothing to emit: most chunks, so no list is made for them."""
        if self.response_id is None and type(chunk.get("id")) is str:
            self.response_id = chunk["id"]
        model = chunk.get("model")
        if model and type(model) is str:
            self.model = model
        u = chunk.get("usage")
        if u:
            self.usage = u
        elif "x_groq" in chunk:
            xu = chunk["x_groq"].get("usage") if isinstance(chunk["x_groq"], dict) else None
            if xu:
                self.usage = xu
        out: list[BaseEvent] | None = None
        if "citations" in chunk or "search_results" in chunk:  # Perplexity
            out = self.sources(chunk.get("search_results"))
            out.extend(self.sources(chunk.get("citations")))
        err = chunk.get("error")
        if err:
            # Checked after the choices: OpenRouter puts the error object beside a choice (with
            # ``finish_reason: "error"`` or null) whose delta is still part of the answer.
            message, code = _error_event(err)
            out = out or []
            out.extend(self.b.error(message, code=code, usage=chat_usage(self.usage) if self.usage else None,
                                    raw_finish_reason=self.raw_finish))
        return out

    def finish(self, name: str) -> list[BaseEvent]:
        """The end after ``data: [DONE]``: open tool calls end, a refusal becomes a ``CUSTOM``
        ``refusal`` event, and ``RUN_FINISHED`` carries the finish reason (the builder's policy over
        :data:`FINISH_REASONS`), usage and the fields kept under ``name``. Raises
        :class:`MalformedChunkError` for a tool call that got arguments but never a name."""
        unnamed = self.unnamed_tool_calls()
        if unnamed:
            raise MalformedChunkError(f"tool call {unnamed[0]!r} got arguments but never a name")
        b = self.b
        metadata: dict[str, Any] | None = {name: self.kept} if self.kept else None
        out: list[BaseEvent] = []
        if self.refusal:
            text = "".join(self.refusal)
            metadata = {**(metadata or {}), "openai": {"refusal": text}}
            out.append(Custom("refusal", {"text": text}))
        out.extend(self.end_tools())
        out.extend(b.finish(
            b.finish_reason(self.raw_finish, refusal=bool(self.refusal)),
            self.raw_finish,
            chat_usage(self.usage) if self.usage else None,
            metadata=metadata,
            response_id=self.response_id,
            model=self.model,
        ))
        return out

    def end_tools(self) -> list[BaseEvent]:
        """``TOOL_CALL_END`` for every call still open (its arguments are the streamed text). A call that
        streamed no argument text (``arguments`` empty or absent: a function without parameters on some
        servers) ends with ``input={}``, what empty arguments mean, which the builder also sends as its
        one ``TOOL_CALL_ARGS`` so AG-UI clients get an object too."""
        out: list[BaseEvent] = []
        b = self.b
        for slot in self.slots.values():
            if slot.started and slot.id is not None and slot.id in b.open_tools:
                out.extend(b.tool_end(slot.id, input=None if b.tool_args_length(slot.id) else {}))
        return out

    def tool_deltas(self, deltas: list[Any]) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for tc in deltas:
            if not isinstance(tc, dict):
                raise MalformedChunkError(f"tool_calls entry is not an object: {tc!r}"[:200])
            index = tc.get("index")
            tid = tc.get("id") or None  # DashScope repeats ``id: ""``: never let it replace a real id
            if index is None:
                # Mistral sends whole calls without ``index``: group by id; an entry with neither
                # continues the last call.
                key = self.id_keys.get(tid, tid) if tid else self.last_key if self.last_key is not None else 0
            else:
                key = index
            slot = self.slots.get(key)
            if slot is None:
                slot = self.slots[key] = _ToolSlot()
            self.last_key = key
            if tid and slot.id is None and not slot.started:
                slot.id = tid
                self.id_keys[tid] = key
            fn = tc.get("function")
            args: Any = None
            if isinstance(fn, dict):
                name = fn.get("name")
                if name and slot.name is None:
                    slot.name = name
                args = fn.get("arguments")
                if args is not None and type(args) is not str:
                    # Some compatible servers send the arguments as an object.
                    args = json.dumps(args, ensure_ascii=False)
            if slot.started:
                if args and slot.id is not None:  # a started slot always has its id
                    out.extend(self.b.tool_args(slot.id, args))
                continue
            if args:
                slot.pending.append(args)
            if slot.name:
                if slot.id is None:
                    # Stable per call: the same stream always yields the same ids.
                    slot.id = f"call_{self.context.run_id}_{len(self.id_keys)}"
                    self.id_keys[slot.id] = key
                slot.started = True
                out.extend(self.b.tool_start(slot.id, slot.name))
                if slot.pending:
                    out.extend(self.b.tool_args(slot.id, "".join(slot.pending)))
                    slot.pending = []
        return out

    def typed_content(self, parts: list[Any]) -> list[BaseEvent]:
        """Mistral/Magistral ``content`` arrays: ``{type: text, text}`` and
        ``{type: thinking, thinking: [{type: text, text}] | str}``."""
        out: list[BaseEvent] = []
        b = self.b
        for part in parts:
            if not isinstance(part, dict):
                if isinstance(part, str) and part:
                    out.extend(b.text(part))
                continue
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if text:
                    out.extend(b.text(text))
            elif kind == "thinking":
                thinking = part.get("thinking")
                if isinstance(thinking, str):
                    if thinking:
                        out.extend(b.reasoning(thinking))
                elif isinstance(thinking, list):
                    for t in thinking:
                        text = t.get("text") if isinstance(t, dict) else t if isinstance(t, str) else None
                        if text:
                            out.extend(b.reasoning(text))
        return out

    def unnamed_tool_calls(self) -> list[int | str]:
        return [k for k, s in self.slots.items() if not s.started and s.pending]


def _error_event(err: Any) -> tuple[str, str]:
    """(message, code) of an in-stream ``{"error": {...}}`` payload."""
    if isinstance(err, dict):
        message = err.get("message") or json.dumps(err)[:500]
        etype, code = err.get("type"), err.get("code")
        # OpenAI rate-limit errors say which budget ran out in ``type`` ("requests", "tokens") and what
        # happened in ``code`` ("rate_limit_exceeded"); the latter is the kind callers (and retries) need.
        if etype in ("requests", "tokens") and isinstance(code, str) and code:
            etype = code
        return str(message), str(etype or code or "provider_error")
    return str(err)[:500], "provider_error"


class OpenAIChatProvider(Provider):
    """OpenAI Chat Completions, streamed; also any OpenAI-compatible server through ``base_url``.

    Stream mapping (OpenAI API reference, "The chat completion chunk object"):

    * ``choices[0].delta.content`` -> text. With ``n > 1`` the choices interleave; **choice 0 is the
      answer** and the other choices are ignored. ``choices: []`` chunks (usage, Azure's first
      ``prompt_filter_results`` chunk) carry no content. Unknown fields (``obfuscation``, Mistral ``p``,
      ``logprobs``, ``content_filter_results``) are ignored.
    * ``delta.reasoning_content`` (DeepSeek, xAI), ``delta.reasoning`` (vLLM, OpenRouter) and Mistral
      ``content`` arrays with ``thinking`` parts -> ``REASONING_*``.
    * ``delta.tool_calls`` -> ``TOOL_CALL_START/ARGS/END``, merged by ``index`` (by ``id`` when
      ``index`` is absent); a known id or name is never replaced by a later empty one; the start is
      emitted once the name is known (argument text that came before is sent right after it); a call
      whose id never arrives gets the stable id ``call_{run_id}_{n}``. A call whose name never
      arrives ends the call with ``RUN_ERROR`` (``malformed_chunk``), the rest kept.
    * ``delta.refusal`` is not answer text: it is collected and sent as one ``CUSTOM`` event named
      ``refusal`` (value ``{"text": ...}``) before ``RUN_FINISHED``, and as ``RUN_FINISHED`` metadata
      ``{"openai": {"refusal": ...}}``; the normalised finish reason is then ``content_filter``.
    * ``annotations`` (in ``delta`` or a repeated ``message``: OpenAI web search, OpenRouter's web
      plugin) and Perplexity's top-level ``search_results`` / ``citations`` -> ``CUSTOM`` ``source``
      events (one per URL; see ``_ChatParse.sources``). A chunk with neither ``choices``, ``usage`` nor
      ``error`` -> ``RAW`` (counted; streamed with ``include_raw``).
    * The first chunk ``id`` and the last ``model`` ride on ``RUN_FINISHED`` as ``response_id`` /
      ``model``; every ``TOOL_CALL_END`` carries ``input``, the parsed arguments.
    * ``finish_reason`` (last non-null value of choice 0) is kept raw; normalised by
      :func:`normalise_finish_reason`. ``usage`` comes from the last chunk where it is not null
      (Groq's ``x_groq.usage`` when the top-level one is absent), see :func:`chat_usage`.
    * A chunk with a non-null ``error`` object ``{"message", "type"|"code"}`` -> ``RUN_ERROR`` with that
      type (else the code, e.g. OpenRouter's HTTP-like ``502``) as code, whether or not it also has
      ``choices`` (OpenRouter sends it beside a choice with ``finish_reason: "error"``): that chunk's
      delta and usage are kept, and the last ``finish_reason`` seen rides on ``RUN_ERROR`` as
      ``raw_finish_reason``. ``data: [DONE]`` ends the call; a stream that ends without it ends with ``RUN_ERROR``
      ``connection_closed`` (what arrived is kept). Non-JSON data raises ``MalformedChunkError``.

    Thread safety: instances hold configuration only and may be shared; each call's state lives in
    its ``parse_stream`` generator.
    """

    name: ClassVar[str] = "openai"
    finish_reasons: ClassVar[Mapping[str, str]] = FINISH_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = "stop"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    distribution: ClassVar[str] = "hookstream-openai"
    kept_fields: ClassVar[tuple[str, ...]] = ()
    """Chunk and choice-0 fields a dialect keeps (Azure: ``prompt_filter_results``,
    ``content_filter_results``): the last value of each, and every value that says ``"filtered":
    true`` somewhere inside, ride on ``RUN_FINISHED`` metadata under :attr:`name`
    (``{"azure": {"content_filter_results": {...}, "filtered": [...]}}``). Empty: nothing is looked at."""

    def batch_api(self) -> BatchAPI | None:
        """OpenAI's Batch API (:class:`~hookstream_openai.batch.OpenAIBatch`) for ``openai`` itself; the
        OpenAI-compatible dialects built on this class (Azure...) have other batch endpoints or none."""
        if type(self).name != "openai":
            return None
        from .batch import OpenAIBatch  # only a --provider-batch run needs it

        return OpenAIBatch(self)

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/chat/completions`` with :func:`chat_body`. Raises :class:`ValueError`."""
        return HTTPRequest(self.base_url + "/chat/completions", chat_body(request), auth_headers(self.api_key))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context, FINISH_REASONS)
        kept_fields = self.kept_fields
        st = _ChatParse(b, context, kept_fields)
        loads, chunk_fields, text = json_loads, st.chunk_fields, b.text  # bound once: called per chunk
        yield from b.start()
        for sse in events:
            data = sse.data
            if not data:
                continue
            if data[0] != "{" and data.strip() == "[DONE]":
                break
            try:
                chunk = loads(data)
            except ValueError:
                raise MalformedChunkError(f"chunk is not JSON: {data[:80]!r}", data) from None
            if type(chunk) is not dict:
                raise MalformedChunkError(f"chunk is not a JSON object: {data[:80]!r}", data)
            choices = chunk.get("choices")
            if kept_fields:
                _keep_fields(chunk, kept_fields, st.kept)
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                if (type(delta) is dict and len(delta) == 1 and type(content := delta.get("content")) is str
                        and not kept_fields and choice.get("index", 0) == 0 and "message" not in choice):
                    # Most chunks: text alone in choice 0, so nothing else in the choice needs a look.
                    if content:
                        yield from text(content)
                    if choice.get("finish_reason"):
                        st.raw_finish = choice["finish_reason"]
                else:
                    yield from st.choice(choices)
            elif choices is None and not chunk.get("usage") and not chunk.get("error") and "citations" not in chunk:
                log.debug("passing on a chunk of unknown type %r (SSE event %r)", chunk.get("object"), sse.event)
                yield from b.raw(chunk, self.name)
            extra = chunk_fields(chunk)
            if extra is not None:
                yield from extra
                if b.closed:
                    return
        else:
            return  # no [DONE]: the core ends the call with RUN_ERROR connection_closed
        yield from st.finish(self.name)
