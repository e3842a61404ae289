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

Thread safety: pure functions, no shared state.
"""

from __future__ import annotations

import re
from typing import Any

from hookstream.plugin import (
    Message,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    tool_output_text,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "PROVIDER_KEY",
    "add_output",
    "build_body",
    "convert_messages",
    "convert_tool_choice",
    "native_output",
    "output_form",
]

PROVIDER_KEY = "anthropic"
"""Key of this provider's entry in ``provider_metadata`` and event ``metadata``."""

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when the request sets none (the API requires the field). With extended thinking
whose ``budget_tokens`` is at least this, ``budget_tokens + DEFAULT_MAX_TOKENS`` is sent instead, since
the budget must be below ``max_tokens``."""


def build_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a streamed ``POST /v1/messages`` for ``request``.

    ``request.options`` are merged last, so any documented body field (``thinking``, ``top_k``,
    ``stop_sequences``, ``metadata``...) can be set or overridden; ``stream`` is always ``true``.
    Raises :class:`ValueError` for a ``tool_choice`` the API cannot express or a message role it
    does not know.
    """
    system, messages = convert_messages(request.messages)
    body: dict[str, Any] = {"model": request.model, "max_tokens": _max_tokens(request)}
    if system is not None:
        body["system"] = system
    body["messages"] = messages
    if request.tools:
        body["tools"] = [convert_tool(t) for t in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = convert_tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body.update(request.options)
    if request.output is not None:
        add_output(body, request)  # after the options: beside their ``output_config`` (effort) and tools
    body["stream"] = True
    return body


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


def convert_messages(messages: list[Message]) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """(``system``, ``messages``) for the request body; ``system`` is ``None`` when there is none.

    Raises :class:`ValueError` for an unknown role.
    """
    answered = {p.tool_call_id for m in messages if m.role == "tool" for p in m.parts if isinstance(p, ToolResultPart)}
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.extend(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
            continue
        if message.role in ("user", "tool"):
            role, blocks = "user", _user_blocks(message)
        elif message.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message, answered)
        else:
            raise ValueError(f"message role {message.role!r} has no Anthropic equivalent")
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            # "tool_result blocks must come first in the content array" (Tool use docs); stable sort.
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    out_system: str | list[dict[str, Any]] | None
    if not system:
        out_system = None
    elif len(system) == 1:
        out_system = system[0]
    else:
        out_system = [{"type": "text", "text": s} for s in system]
    return out_system, turns


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolResultPart):
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": part.tool_call_id,
                    "content": tool_output_text(part.output),
                    "is_error": bool(part.is_error),
                }
            )
    return blocks


def _assistant_blocks(message: Message, answered: set[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            block = _thinking_block(part)
            if block is not None:
                blocks.append(block)
        elif isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            if part.arguments is None and part.id not in answered:
                continue
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments or {}}
            )
    return blocks


def _thinking_block(part: ReasoningPart) -> dict[str, Any] | None:
    meta = (part.provider_metadata or {}).get(PROVIDER_KEY)
    if not isinstance(meta, dict):
        return None
    if meta.get("redacted_data"):
        return {"type": "redacted_thinking", "data": meta["redacted_data"]}
    if meta.get("signature"):
        return {"type": "thinking", "thinking": part.text, "signature": meta["signature"]}
    return None
