"""Pieces both OpenAI providers share: auth headers, tool-call arguments text, tool output text.

Source: OpenAI API reference, "Authentication" (``Authorization: Bearer``), "Chat Completions" and
"Responses" (function-call ``arguments`` are JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hookstream import ToolCallPart
from hookstream.plugin import Secret, tool_output_text

__all__ = ["arguments_text", "auth_headers", "output_text", "tool_choice"]


def tool_choice(choice: str | dict[str, Any], named: Callable[[str], dict[str, Any]]) -> str | dict[str, Any]:
    """``"auto" | "none" | "required"`` as they are; ``{"name": X}`` -> ``named(X)``, the API's own shape
    for forcing one tool. Raises :class:`ValueError` otherwise."""
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return named(choice["name"])
    raise ValueError(f"tool_choice must be auto, none, required or {{'name': TOOL}}, not {choice!r}")


def auth_headers(api_key: Secret) -> dict[str, str]:
    """JSON/SSE headers plus ``Authorization: Bearer KEY``; no auth header when the key is empty
    (local OpenAI-compatible servers often need none)."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key.reveal()}"
    return headers


def arguments_text(call: ToolCallPart) -> str:
    """The ``arguments`` JSON text the API expects for a tool call already made.

    The parsed object when there is one; else the raw text that arrived; else ``"{}"``.
    """
    if call.arguments is not None:
        return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    if call.arguments_raw:
        return call.arguments_raw
    return "{}"


def output_text(output: Any, tool_call_id: str) -> str:
    """Tool output as the text the API takes. Raises :class:`ValueError` when it is not JSON-able."""
    try:
        return tool_output_text(output)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tool result for {tool_call_id!r} is not JSON serialisable: {exc}") from None
