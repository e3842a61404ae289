"""Build the Ollama ``/api/chat`` request body from a provider-neutral ModelRequest.

Shape (Ollama API reference, ``docs/api.md``, "Generate a chat completion")::

    {"model": str, "stream": true,
     "messages": [{"role": "system" | "user" | "assistant" | "tool", "content": str,
                   "images": [base64, ...], "thinking": str,
                   "tool_calls": [{"function": {"name": str, "arguments": {...}}}],
                   "tool_name": str}],
     "tools": [{"type": "function", "function": {"name", "description", "parameters"}}],
     "format": JSON Schema | "json",
     "options": {"num_predict": int, "temperature": float, ...},
     "think": bool | "low" | "medium" | "high", "keep_alive": "5m" | seconds}

``ModelRequest.options`` are merged last at the top level, so ``keep_alive``, ``think`` and ``format``
pass straight through; an ``options`` dict there is merged into the model options (``num_ctx``,
``seed``, ``top_p``...), where ``max_tokens`` became ``num_predict`` and ``temperature`` stays
``temperature``.

Images are the only files Ollama takes, as base64 bytes in ``images`` (a URL image raises
:class:`ValueError`: the server fetches nothing). Tool arguments are JSON objects, not JSON text, both
ways. A tool result is a ``tool`` message whose ``tool_name`` names the tool. Ollama has no
``tool_choice``: ``"none"`` sends no tools, every other choice sends them all (the model decides).
"""

from __future__ import annotations

import base64
from typing import Any

from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.plugin import ModelRequest, tool_output_text

__all__ = ["build_body", "convert_message"]


def build_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The JSON body for ``request`` on ``model`` (the name after ``ollama:``).

    Raises :class:`ValueError` for a part Ollama cannot take (a non-image file, an image by URL).
    """
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        messages.extend(convert_message(message))
    body: dict[str, Any] = {"model": request.model or model, "messages": messages, "stream": True}
    if request.tools and request.tool_choice != "none":
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.output is not None:
        body["format"] = request.output.schema
    model_options: dict[str, Any] = {}
    if request.max_tokens is not None:
        model_options["num_predict"] = request.max_tokens
    if request.temperature is not None:
        model_options["temperature"] = request.temperature
    extra = dict(request.options)
    more = extra.pop("options", None)
    if isinstance(more, dict):
        model_options.update(more)
    if model_options:
        body["options"] = model_options
    body.update(extra)
    return body


def convert_message(message: Message) -> list[dict[str, Any]]:
    """One hookstream message as Ollama messages: tool results become one ``tool`` message each."""
    if message.role == "tool" or any(isinstance(p, ToolResultPart) for p in message.parts):
        return [_tool_result(p) for p in message.parts if isinstance(p, ToolResultPart)]
    out: dict[str, Any] = {"role": message.role}
    text: list[str] = []
    thinking: list[str] = []
    images: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            text.append(part.text)
        elif isinstance(part, ReasoningPart):
            thinking.append(part.text)
        elif isinstance(part, ToolCallPart):
            calls.append({"function": {"name": part.name, "arguments": part.arguments or {}}})
        elif isinstance(part, FilePart):
            images.append(_image(part))
        # Sources are response metadata, not content the model takes back.
    if text or not calls:  # the official client sends no content beside tool calls when there is none
        out["content"] = "".join(text)
    if thinking and message.role == "assistant":
        out["thinking"] = "".join(thinking)
    if images:
        out["images"] = images
    if calls:
        out["tool_calls"] = calls
    return [out]


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    try:
        content = tool_output_text(part.output)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tool result for {part.tool_call_id!r} is not JSON serialisable: {exc}") from None
    out: dict[str, Any] = {"role": "tool", "content": content, "tool_name": part.tool_name}
    images = [_image(f) for f in part.files]
    if images:
        out["images"] = images
    return out


def _image(part: FilePart) -> str:
    if not part.media_type.startswith("image/"):
        raise ValueError(f"Ollama takes images only, not {part.media_type} ({part.filename or 'file'})")
    if part.data is None:
        raise ValueError("Ollama takes images as bytes, not by URL: load the file first (FilePart.from_path)")
    return base64.b64encode(part.data).decode("ascii")
