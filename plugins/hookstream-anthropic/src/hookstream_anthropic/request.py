"""Build the Anthropic Messages API request body from a provider-neutral :class:`ModelRequest`.

Source: Anthropic API reference, "Messages" (``POST /v1/messages``: ``model``, ``max_tokens``, ``system``,
``messages``, ``tools``, ``tool_choice``, ``temperature``, ``thinking``, ``stream``), "Tool use"
(``tool_use`` / ``tool_result`` blocks; tool results go back in a ``user`` turn, before any text) and
"Extended thinking" (thinking blocks are sent back unchanged, with their ``signature``; redacted
thinking as ``redacted_thinking`` with its ``data``).

Mapping (see ``docs/providers/anthropic.md``):

* ``system`` messages (wherever they appear) become the top-level ``system`` field: a string for one,
  a list of text blocks for several.
* ``user`` text and ``tool`` results become ``user`` turns; ``assistant`` parts an ``assistant`` turn.
  Consecutive turns of the same role are merged (the API wants user and assistant to alternate); in
  a merged user turn the ``tool_result`` blocks come first, as the API requires.
* Reasoning parts are sent back only when they carry ``provider_metadata["anthropic"]`` (a
  ``signature`` or ``redacted_data``): thinking from another provider cannot be verified by
  Anthropic, so it is dropped rather than turned into text the model never wrote.
* A tool call whose arguments were cut off (``arguments is None``) is sent with ``input: {}`` when the
  conversation holds a result for it, and left out otherwise (the API rejects an unanswered
  ``tool_use``).
* Files (:class:`FilePart`, "Vision" and "PDF support" guides): images (JPEG, PNG, GIF, WebP) become
  ``image`` blocks, PDFs ``document`` blocks, each with a ``base64`` source (``media_type``, ``data``)
  or a ``url`` source; plain text (``text/*``) becomes a ``document`` with a ``text`` source. A
  filename is the document's ``title``. Audio, other media types and text behind a URL raise
  :class:`ValueError` before anything is sent. A tool result with ``files`` gets a ``content`` list:
  a ``text`` block with the output, then the ``image`` / ``document`` blocks ("Tool use" >
  ``tool_result`` content).
* Server-tool blocks (``server_tool_use``, ``web_search_tool_result``, ``mcp_tool_use``... kept by the
  stream parser as a :class:`ReasoningPart` whose ``provider_metadata["anthropic"]["server_block"]``
  is the block as received) go back verbatim, in place: the API requires them in the assistant turn
  to continue a ``pause_turn`` and to keep citations to search results valid.
* Prompt caching ("Prompt caching" guide): ``provider_metadata={"anthropic": {"cache_control":
  {...}}}`` on a :class:`TextPart` or :class:`FilePart` (any role) sets ``cache_control`` on its
  block; ``options={"anthropic_cache": {"system": X, "tools": X, "messages": X}}`` (``X`` ``True``
  for ``{"type": "ephemeral"}``, or the ``cache_control`` object itself, e.g. with ``"ttl": "1h"``)
  puts a breakpoint on the last system block, the last tool, or the last block of the last message.
  ``anthropic_cache`` is read here and never sent. A document part's ``provider_metadata["anthropic"]``
  may also carry ``citations`` (``{"enabled": true}``), ``context`` and ``title``, copied onto the block.
* Sources and files in an assistant message are not sent: the API has no assistant block for them
  (citations live in the server-tool blocks that are sent back).

Thread safety: pure functions, no shared state.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import attrs
from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.plugin import ModelRequest, ToolSpec, tool_output_text

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_VERSION",
    "CACHE_OPTION",
    "DEFAULT_MAX_TOKENS",
    "IMAGE_MEDIA_TYPES",
    "PROVIDER_KEY",
    "Dialect",
    "add_output",
    "build_body",
    "conversation_turns",
    "convert_file",
    "convert_messages",
    "convert_tool_choice",
    "native_output",
    "output_form",
]

ANTHROPIC_VERSION = "2023-06-01"
"""Value of the ``anthropic-version`` header (API reference, "Versions"), sent by the streamed call and the
Message Batches calls alike."""

PROVIDER_KEY = "anthropic"
"""Key of this provider's entry in ``provider_metadata`` and event ``metadata``."""

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when the request sets none (the API requires the field). With extended thinking
whose ``budget_tokens`` is at least this, ``budget_tokens + DEFAULT_MAX_TOKENS`` is sent instead, since
the budget must be below ``max_tokens``."""


IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image media types the API takes ("Vision" guide)."""

CACHE_OPTION = "anthropic_cache"
"""``ModelRequest.options`` key for cache breakpoints on ``system``, ``tools`` and ``messages``."""

_EPHEMERAL = {"type": "ephemeral"}


def build_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a streamed ``POST /v1/messages`` for ``request``.

    ``request.options`` are merged last, so any documented body field (``thinking``, ``top_k``,
    ``stop_sequences``, ``metadata``...) can be set or overridden; ``stream`` is always ``true``.
    Raises :class:`ValueError` for a ``tool_choice`` the API cannot express, a message role it
    does not know, a file it cannot take, or a malformed ``anthropic_cache`` option.
    """
    options = dict(request.options)
    cache = options.pop(CACHE_OPTION, None) or {}
    if not isinstance(cache, dict) or set(cache) - {"system", "tools", "messages"}:
        raise ValueError(f"{CACHE_OPTION} must be a dict with keys system, tools, messages; got {cache!r}")
    system, messages = convert_messages(request.messages)
    body: dict[str, Any] = {"model": request.model, "max_tokens": _max_tokens(request)}
    if system is not None:
        if cache.get("system"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": system}] if isinstance(system, str) else system
            blocks[-1]["cache_control"] = _cache_control(cache["system"])
            body["system"] = blocks
        else:
            body["system"] = system
    if messages and cache.get("messages"):
        last = messages[-1]["content"][-1]
        last["cache_control"] = _cache_control(cache["messages"])
    body["messages"] = messages
    if request.tools:
        body["tools"] = [convert_tool(t) for t in request.tools]
        if cache.get("tools"):
            body["tools"][-1]["cache_control"] = _cache_control(cache["tools"])
    if request.tool_choice is not None:
        body["tool_choice"] = convert_tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body.update(options)
    if request.output is not None:
        add_output(body, request)  # after the options: beside their ``output_config`` (effort) and tools
    body["stream"] = True
    return body


def _cache_control(value: Any) -> dict[str, Any]:
    if value is True:
        return dict(_EPHEMERAL)
    if isinstance(value, dict) and value.get("type"):
        return dict(value)
    raise ValueError(f"{CACHE_OPTION} value must be True or a cache_control object, got {value!r}")


# Models with native structured outputs (Claude docs, "Structured outputs": Claude Opus 4.1 and the 4.5
# generation on; ``claude-opus-4-1-20250805``, ``claude-sonnet-4-5``, ``claude-haiku-4-5-...``).
_MODEL_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-|$)")


def native_output(model: str) -> bool:
    """Whether ``model`` has Anthropic's native structured output: Claude Opus 4.1, and every Opus,
    Sonnet or Haiku from version 4.5 on, by model name. Older models and names this rule does not
    know (a proxy's aliases) get the forced-tool form, which every tool-capable Claude model has."""
    m = _MODEL_VERSION.search(model)
    if m is None:
        return False
    major, minor = int(m.group(1)), int(m.group(2) or 0)
    return (major, minor) >= (4, 5) or ("opus" in m.group(0) and (major, minor) == (4, 1))


def output_form(request: ModelRequest) -> str:
    """``"native"`` or ``"tool"``: ``request.output.mode`` when it names one, else (``auto``) native when
    :func:`native_output` knows the model and the schema is strict-compatible (every object closed with
    ``additionalProperties: false``, which Anthropic's constrained decoding requires), a forced tool
    otherwise."""
    output = request.output
    assert output is not None
    if output.mode in ("native", "tool"):
        return output.mode
    return "native" if output.strict and native_output(request.model) else "tool"


def add_output(body: dict[str, Any], request: ModelRequest) -> None:
    """Put ``request.output`` into ``body`` in the form :func:`output_form` picks.

    Native (Claude docs, "Structured outputs", generally available form, no beta header):
    ``output_config: {"format": {"type": "json_schema", "schema"}}``; the answer streams as text.
    Forced tool (docs, "Tool use" > "Forcing tool use"; "JSON mode"): a tool named after the schema
    whose ``input_schema`` is the schema, and ``tool_choice`` ``{"type": "tool", "name"}`` (``{"type":
    "any"}`` beside other tools, so the model may call them first; ``{"type": "auto"}`` with extended
    thinking, which refuses forced tool use); the tool's input is the answer.
    """
    output = request.output
    assert output is not None
    if output_form(request) == "native":
        config = body.get("output_config")
        body["output_config"] = {**(config if isinstance(config, dict) else {}),
                                 "format": {"type": "json_schema", "schema": output.schema}}
        return
    tool = {"name": output.name, "description": "Give the final answer with this tool: its input is the answer.",
            "input_schema": output.schema}
    body["tools"] = [*body.get("tools", []), tool]
    thinking = request.options.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        body["tool_choice"] = {"type": "auto"}
    elif len(body["tools"]) > 1:
        body["tool_choice"] = {"type": "any"}
    else:
        body["tool_choice"] = {"type": "tool", "name": output.name}


def _max_tokens(request: ModelRequest) -> int:
    if request.max_tokens is not None:
        return request.max_tokens
    thinking = request.options.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if isinstance(budget, int) and budget >= DEFAULT_MAX_TOKENS:
        return budget + DEFAULT_MAX_TOKENS
    return DEFAULT_MAX_TOKENS


def convert_tool(tool: ToolSpec) -> dict[str, Any]:
    """``{"name", "description"?, "input_schema"}`` (API reference, "Messages" > ``tools``)."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters
    return out


def convert_tool_choice(choice: str | dict[str, Any]) -> dict[str, Any]:
    """``"auto"`` -> ``{"type": "auto"}``, ``"required"`` -> ``{"type": "any"}``, ``"none"`` ->
    ``{"type": "none"}``, ``{"name": X}`` -> ``{"type": "tool", "name": X}``. Raises ValueError else."""
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "tool", "name": choice["name"]}
    raise ValueError(f"tool_choice {choice!r}: expected 'auto', 'required', 'none' or {{'name': TOOL}}")


@attrs.define(slots=True, frozen=True)
class Dialect:
    """How one API spells the blocks of a Messages-style conversation, for :func:`conversation_turns`.

    The Anthropic Messages API and Bedrock Converse (which passes Claude's conversation rules on to
    every model) share the conversation rules; they differ in the blocks. Each field maps one part
    to its blocks: ``text`` a non-empty :class:`TextPart` of any role (a list: Converse puts a cache
    point after the block), ``file`` a :class:`FilePart` of a user turn, ``tool_result`` a
    :class:`ToolResultPart`, ``tool_use`` a :class:`ToolCallPart` (its ``arguments``, or ``{}`` when
    cut off), ``reasoning`` a :class:`ReasoningPart` (``None``: not sent back); ``is_tool_result``
    tells a tool-result block, ``api`` names the API in errors. Raises nothing itself."""

    api: str
    text: Callable[[TextPart], list[dict[str, Any]]]
    file: Callable[[FilePart], list[dict[str, Any]]]
    tool_result: Callable[[ToolResultPart], dict[str, Any]]
    tool_use: Callable[[ToolCallPart], dict[str, Any]]
    reasoning: Callable[[ReasoningPart], dict[str, Any] | None]
    is_tool_result: Callable[[dict[str, Any]], bool]


def conversation_turns(messages: list[Message], dialect: Dialect) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(``system`` blocks, turns ``[{"role", "content": [block...]}]``) of ``messages`` in ``dialect``,
    by the rules the Messages API and Converse share:

    * ``system`` messages, wherever they appear, become the system blocks;
    * ``user`` and ``tool`` messages become ``user`` turns, ``assistant`` messages ``assistant`` turns;
      consecutive turns of one role are merged (the roles must alternate), empty ones dropped;
    * in a user turn the tool-result blocks come first ("tool_result blocks must come first in the
      content array", Anthropic "Tool use"; Converse requires it for Claude), order kept otherwise;
    * a tool call whose arguments were cut off (``arguments is None``) is sent only when the
      conversation holds a result for it (an unanswered tool use is rejected).

    Raises :class:`ValueError` for an unknown role (and what the dialect's callables raise)."""
    answered = {p.tool_call_id for m in messages if m.role == "tool" for p in m.parts if isinstance(p, ToolResultPart)}
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            for p in message.parts:
                if isinstance(p, TextPart) and p.text:
                    system.extend(dialect.text(p))
            continue
        if message.role in ("user", "tool"):
            role, blocks = "user", _user_blocks(message, dialect)
        elif message.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message, answered, dialect)
        else:
            raise ValueError(f"message role {message.role!r} has no {dialect.api} equivalent")
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: not dialect.is_tool_result(b))  # stable: results first
    return system, turns


def _user_blocks(message: Message, dialect: Dialect) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:  # both APIs reject empty text blocks
                blocks.extend(dialect.text(part))
        elif isinstance(part, FilePart):
            blocks.extend(dialect.file(part))
        elif isinstance(part, ToolResultPart):
            blocks.append(dialect.tool_result(part))
    return blocks


def _assistant_blocks(message: Message, answered: set[str], dialect: Dialect) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            block = dialect.reasoning(part)
            if block is not None:
                blocks.append(block)
        elif isinstance(part, TextPart):
            if part.text:
                blocks.extend(dialect.text(part))
        elif isinstance(part, ToolCallPart):
            if part.arguments is None and part.id not in answered:
                continue
            blocks.append(dialect.tool_use(part))
    return blocks


def convert_messages(messages: list[Message]) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """(``system``, ``messages``) for the request body; ``system`` is ``None`` when there is none, a
    string for one plain text block. The rules are :func:`conversation_turns`'.

    Raises :class:`ValueError` for an unknown role.
    """
    system, turns = conversation_turns(messages, ANTHROPIC)
    out_system: str | list[dict[str, Any]] | None
    if not system:
        out_system = None
    elif len(system) == 1 and len(system[0]) == 2:  # one plain text block: the string form
        out_system = system[0]["text"]
    else:
        out_system = system
    return out_system, turns


def _anthropic_meta(part: Any) -> dict[str, Any]:
    meta = (part.provider_metadata or {}).get(PROVIDER_KEY)
    return meta if isinstance(meta, dict) else {}


def _with_cache(block: dict[str, Any], part: Any) -> dict[str, Any]:
    control = _anthropic_meta(part).get("cache_control")
    if control:
        block["cache_control"] = _cache_control(control)
    return block


def convert_file(part: FilePart) -> dict[str, Any]:
    """The ``image`` or ``document`` block for a file (see the module docstring). Raises
    :class:`ValueError` for a file the Messages API cannot take."""
    media_type = part.media_type.split(";", 1)[0].strip().lower()
    block: dict[str, Any]
    if part.category == "image":
        if media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(f"Anthropic takes JPEG, PNG, GIF and WebP images, not {media_type}")
        block = {"type": "image", "source": _source(part, media_type)}
    elif media_type == "application/pdf":
        block = {"type": "document", "source": _source(part, media_type)}
    elif media_type.startswith("text/"):
        if part.data is None:
            raise ValueError("Anthropic fetches only PDF documents by URL; send a text document as bytes")
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"text document {part.filename or ''} is not UTF-8") from None
        block = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    else:
        raise ValueError(
            f"Anthropic cannot take a {media_type} file (images, PDF and plain text only; no audio)"
        )
    meta = _anthropic_meta(part)
    if block["type"] == "document":
        title = meta.get("title") or part.filename
        if title:
            block["title"] = title
        for key in ("context", "citations"):
            if meta.get(key) is not None:
                block[key] = meta[key]
    return _with_cache(block, part)


def _source(part: FilePart, media_type: str) -> dict[str, Any]:
    if part.url is not None:
        return {"type": "url", "url": part.url}
    return {"type": "base64", "media_type": media_type, "data": part.base64()}


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    text = tool_output_text(part.output)
    content: str | list[dict[str, Any]] = text
    if part.files:
        content = [{"type": "text", "text": text}] if text else []
        content.extend(convert_file(f) for f in part.files)
    return _with_cache(
        {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": content, "is_error": bool(part.is_error)},
        part,
    )


def _text_block(part: TextPart) -> list[dict[str, Any]]:
    return [_with_cache({"type": "text", "text": part.text}, part)]


def _tool_use_block(part: ToolCallPart) -> dict[str, Any]:
    return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments or {}}


def _thinking_block(part: ReasoningPart) -> dict[str, Any] | None:
    meta = _anthropic_meta(part)
    server = meta.get("server_block")
    if isinstance(server, dict):
        return dict(server)
    if meta.get("redacted_data"):
        return {"type": "redacted_thinking", "data": meta["redacted_data"]}
    if meta.get("signature"):
        return {"type": "thinking", "thinking": part.text, "signature": meta["signature"]}
    return None


ANTHROPIC = Dialect(
    api="Anthropic",
    text=_text_block,
    file=lambda part: [convert_file(part)],
    tool_result=_tool_result,
    tool_use=_tool_use_block,
    reasoning=_thinking_block,
    is_tool_result=lambda block: block["type"] == "tool_result",
)
"""The Messages API's blocks (:class:`Dialect`)."""
