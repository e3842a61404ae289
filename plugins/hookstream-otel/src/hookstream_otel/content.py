"""Messages as the GenAI semantic conventions record them when content capture is on.

``gen_ai.input.messages`` / ``gen_ai.output.messages`` are JSON arrays of ``{"role", "parts"}`` with
parts ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}`` and
``{"type": "tool_call_response", "id", "response"}``; output messages add ``finish_reason``; system
prompts go to ``gen_ai.system_instructions`` as ``[{"type": "text", "content"}]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hookstream import Message, TextPart, ToolCallPart, ToolResultPart
from hookstream.plugin import tool_output_text

__all__ = ["input_messages", "output_messages"]


def input_messages(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, the other messages) of a request, in the conventions' JSON shape."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        parts: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                parts.append({"type": "text", "content": p.text})
            elif isinstance(p, ToolCallPart):
                parts.append({"type": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments})
            elif isinstance(p, ToolResultPart):
                parts.append({"type": "tool_call_response", "id": p.tool_call_id,
                              "response": tool_output_text(p.output)})
        if m.role == "system":
            system.extend(parts)
        else:
            out.append({"role": m.role, "parts": parts})
    return system, out


def output_messages(text: str, calls: dict[str, list[str]], finish_reason: str | None) -> list[dict[str, Any]]:
    """The response as one assistant message: its text and tool calls (``calls``: id -> [name, *argument
    deltas])."""
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "content": text})
    for call_id, (name, *deltas) in calls.items():
        raw = "".join(deltas)
        try:
            arguments: Any = json.loads(raw) if raw else {}
        except ValueError:
            arguments = raw
        parts.append({"type": "tool_call", "id": call_id, "name": name, "arguments": arguments})
    return [{"role": "assistant", "parts": parts, "finish_reason": finish_reason or "stop"}]
