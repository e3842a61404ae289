"""Build the Bedrock ``ConverseStream`` request body from a provider-neutral :class:`ModelRequest`.

Source: Amazon Bedrock API Reference, "ConverseStream" (request body: ``messages``, ``system``,
``inferenceConfig``, ``toolConfig``, ``additionalModelRequestFields``, ``guardrailConfig``...), and
the data types it names: "Message", "ContentBlock", "ImageBlock", "DocumentBlock", "VideoBlock",
"ToolUseBlock", "ToolResultBlock", "ReasoningContentBlock", "SystemContentBlock", "CachePointBlock",
"InferenceConfiguration", "ToolConfiguration", "Tool", "ToolSpecification", "ToolChoice".

Mapping (see ``docs/providers/bedrock.md``):

* ``system`` messages (wherever they appear) become the top-level ``system`` list of ``{"text"}``.
* ``user`` parts and ``tool`` results become ``user`` turns, ``assistant`` parts an ``assistant`` turn;
  consecutive turns of one role are merged (Converse wants the roles to alternate), and in a user turn
  the ``toolResult`` blocks come first (Anthropic models on Bedrock require it; the others accept it).
* Files (:class:`FilePart`) as bytes: images (PNG, JPEG, GIF, WebP) become ``{"image": {"format",
  "source": {"bytes": BASE64}}}``; PDF, CSV, DOC(X), XLS(X), HTML, plain text and Markdown a
  ``{"document": {"format", "name", "source": {"bytes"}}}`` (``name`` from the filename, reduced to
  the characters the API allows); MP4, MOV, MKV, WebM, FLV, MPEG, WMV and 3GP a ``{"video": ...}``.
  Blobs are base64 in the JSON wire form of the API. A file behind an ``https://`` URL, audio and
  any other type raise :class:`ValueError` before anything is sent (Converse takes bytes or
  ``s3Location`` only; ``provider_metadata={"bedrock": {"s3_uri": "s3://..."}}`` on a URL-less part is
  not supported either: send bytes).
* Tool calls become ``{"toolUse": {"toolUseId", "name", "input"}}``; a call whose arguments were cut off
  (``arguments is None``) is sent with ``input: {}`` when the conversation holds a result for it and
  left out otherwise (an unanswered ``toolUse`` is rejected). Tool results become ``{"toolResult":
  {"toolUseId", "content": [{"text"}, image/document blocks...], "status"}}`` (``status: "error"`` for
  an error result).
* Reasoning goes back only when it carries ``provider_metadata["bedrock"]``: a ``signature`` (sent as
  ``{"reasoningContent": {"reasoningText": {"text", "signature"}}}``), ``redacted_content`` (as
  ``{"reasoningContent": {"redactedContent"}}``) or a ``server_block`` (a server tool's ``toolUse`` or
  ``toolResult`` block as received, sent back verbatim in place). Unsigned reasoning and reasoning
  from other providers is dropped: Bedrock cannot verify it, and Anthropic models reject it.
* ``provider_metadata={"bedrock": {"cache_point": True}}`` on a text or file part (any role, system
  included) adds ``{"cachePoint": {"type": "default"}}`` after its block (prompt caching).
* ``max_tokens`` / ``temperature`` go in ``inferenceConfig`` (``maxTokens``, ``temperature``). Options:
  the documented top-level fields (:data:`TOP_LEVEL_OPTIONS`) are copied; ``topP`` and
  ``stopSequences`` go in ``inferenceConfig``; ``additionalModelRequestFields`` (a dict) and every
  other key (``thinking``, ``reasoning_config``, ``top_k``...) go in ``additionalModelRequestFields``,
  the model-specific fields.
* ``tool_choice``: ``auto`` -> ``{"auto": {}}``, ``required`` -> ``{"any": {}}``, ``{"name": X}`` ->
  ``{"tool": {"name": X}}``. Converse has no "none": the tools are left out, unless the conversation
  holds tool blocks (then ``toolConfig`` is required and is sent without a ``toolChoice``).
* Structured output (``request.output``): a forced tool named after the schema whose input is the
  answer (``toolChoice`` ``tool``, or ``any`` beside other tools); Converse has no native form.

Thread safety: pure functions, no shared state.
"""

from __future__ import annotations

import re
from typing import Any

from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.plugin import ModelRequest, ToolSpec, tool_output_text
from hookstream_anthropic.request import Dialect, conversation_turns

__all__ = [
    "CONVERSE",
    "DOCUMENT_FORMATS",
    "IMAGE_FORMATS",
    "INFERENCE_OPTIONS",
    "PROVIDER_KEY",
    "TOP_LEVEL_OPTIONS",
    "VIDEO_FORMATS",
    "build_body",
    "convert_file",
    "convert_messages",
    "convert_tool",
    "convert_tool_choice",
]

PROVIDER_KEY = "bedrock"
"""Key of this provider's entry in ``provider_metadata`` and event ``metadata``."""

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
"""Media type -> ``ImageBlock.format``."""

DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
"""Media type -> ``DocumentBlock.format``."""

VIDEO_FORMATS = {
    "video/mp4": "mp4", "video/quicktime": "mov", "video/x-matroska": "mkv", "video/webm": "webm",
    "video/x-flv": "flv", "video/mpeg": "mpeg", "video/x-ms-wmv": "wmv", "video/3gpp": "three_gp",
}
"""Media type -> ``VideoBlock.format`` (Amazon Nova models)."""

TOP_LEVEL_OPTIONS = frozenset({
    "guardrailConfig", "performanceConfig", "promptVariables", "additionalModelResponseFieldPaths",
    "requestMetadata", "serviceTier", "toolConfig", "inferenceConfig",
})
"""``ModelRequest.options`` keys copied to the top level of the body (``inferenceConfig`` and
``toolConfig`` are merged into the ones built from the request)."""

INFERENCE_OPTIONS = frozenset({"topP", "stopSequences", "maxTokens", "temperature"})
"""``ModelRequest.options`` keys put in ``inferenceConfig``."""

# DocumentBlock.name: "alphanumeric characters, whitespace characters (no more than one in a row),
# hyphens, parentheses, square brackets".
_NAME_BAD = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
_SPACES = re.compile(r"\s+")


def build_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of ``POST /model/{modelId}/converse-stream`` for ``request`` (the model id is in
    the URL, not the body).

    Raises :class:`ValueError` for a message role, file or ``tool_choice`` Converse cannot express, or
    an ``additionalModelRequestFields`` option that is not an object.
    """
    system, messages = convert_messages(request.messages)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    inference: dict[str, Any] = {}
    if request.max_tokens is not None:
        inference["maxTokens"] = request.max_tokens
    if request.temperature is not None:
        inference["temperature"] = request.temperature
    extra: dict[str, Any] = {}
    for key, value in request.options.items():
        if key in INFERENCE_OPTIONS:
            inference[key] = value
        elif key == "additionalModelRequestFields":
            if not isinstance(value, dict):
                raise ValueError(f"additionalModelRequestFields must be an object, got {type(value).__name__}")
            extra.update(value)
        elif key in TOP_LEVEL_OPTIONS:
            if key == "inferenceConfig" and isinstance(value, dict):
                inference.update(value)
            else:
                body[key] = value
        else:
            extra[key] = value
    if inference:
        body["inferenceConfig"] = inference
    if extra:
        body["additionalModelRequestFields"] = extra
    _add_tools(body, request, _has_tool_blocks(messages))
    return body


def _add_tools(body: dict[str, Any], request: ModelRequest, history_has_tools: bool) -> None:
    given = body.pop("toolConfig", None)
    config: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    tools = [convert_tool(t) for t in request.tools]
    choice = request.tool_choice
    if request.output is not None:
        out = request.output
        tools.append({"toolSpec": {"name": out.name,
                                   "description": "Give the final answer with this tool: its input is the answer.",
                                   "inputSchema": {"json": out.schema}}})
        choice = {"name": out.name} if len(tools) == 1 else "required"
    if choice == "none" and not history_has_tools:
        tools = []
    if tools:
        config["tools"] = [*config.get("tools", []), *tools]
    if choice is not None and choice != "none" and config.get("tools"):
        config["toolChoice"] = convert_tool_choice(choice)
    if config.get("tools"):
        body["toolConfig"] = config


def _has_tool_blocks(messages: list[dict[str, Any]]) -> bool:
    return any("toolUse" in b or "toolResult" in b for m in messages for b in m["content"])


def convert_tool(tool: ToolSpec) -> dict[str, Any]:
    """``{"toolSpec": {"name", "description"?, "inputSchema": {"json"}}}`` ("Tool", "ToolSpecification")."""
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["inputSchema"] = {"json": tool.parameters}
    return {"toolSpec": spec}


def convert_tool_choice(choice: str | dict[str, Any]) -> dict[str, Any]:
    """``"auto"`` -> ``{"auto": {}}``, ``"required"`` -> ``{"any": {}}``, ``{"name": X}`` -> ``{"tool":
    {"name": X}}`` ("ToolChoice"). Raises :class:`ValueError` for anything else (``"none"`` is handled by
    leaving the tools out, see the module docstring)."""
    if choice == "auto":
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"tool": {"name": choice["name"]}}
    raise ValueError(f"tool_choice {choice!r}: expected 'auto', 'required', 'none' or {{'name': TOOL}}")


def convert_messages(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(``system`` blocks, ``messages``) for the body ("SystemContentBlock", "Message"), by the
    conversation rules Converse shares with the Anthropic Messages API
    (:func:`hookstream_anthropic.request.conversation_turns`) in Converse's blocks (:data:`CONVERSE`).

    Raises :class:`ValueError` for an unknown role or a file Converse cannot take.
    """
    return conversation_turns(messages, CONVERSE)


def _meta(part: Any) -> dict[str, Any]:
    meta = (part.provider_metadata or {}).get(PROVIDER_KEY)
    return meta if isinstance(meta, dict) else {}


def _cache_point(blocks: list[dict[str, Any]], part: Any) -> None:
    if _meta(part).get("cache_point"):
        blocks.append({"cachePoint": {"type": "default"}})


def _document_name(part: FilePart, fmt: str) -> str:
    stem = (part.filename or "").rsplit(".", 1)[0]
    name = _SPACES.sub(" ", _NAME_BAD.sub("-", stem)).strip()
    return name or f"document-{fmt}"


def convert_file(part: FilePart) -> dict[str, Any]:
    """The ``image``, ``document`` or ``video`` content block for a file ("ImageBlock",
    "DocumentBlock", "VideoBlock"; source ``bytes``, base64 on the wire). Raises :class:`ValueError`
    for a URL or a media type Converse cannot take."""
    media_type = part.media_type.split(";", 1)[0].strip().lower()
    if part.data is None:
        raise ValueError("Bedrock Converse takes files as bytes (or S3 locations), not URLs; download it first")
    source = {"bytes": part.base64()}
    if media_type in IMAGE_FORMATS:
        return {"image": {"format": IMAGE_FORMATS[media_type], "source": source}}
    if media_type in DOCUMENT_FORMATS:
        fmt = DOCUMENT_FORMATS[media_type]
        doc: dict[str, Any] = {"format": fmt, "name": _document_name(part, fmt), "source": source}
        citations = _meta(part).get("citations")
        if citations is not None:
            doc["citations"] = citations
        return {"document": doc}
    if media_type in VIDEO_FORMATS:
        return {"video": {"format": VIDEO_FORMATS[media_type], "source": source}}
    raise ValueError(
        f"Bedrock Converse cannot take a {media_type} file (images PNG/JPEG/GIF/WebP, documents "
        "PDF/CSV/DOC/DOCX/XLS/XLSX/HTML/TXT/MD, videos; no audio)"
    )


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    text = tool_output_text(part.output)
    content: list[dict[str, Any]] = [{"text": text}] if text or not part.files else []
    content.extend(convert_file(f) for f in part.files)
    return {"toolResult": {"toolUseId": part.tool_call_id, "content": content,
                           "status": "error" if part.is_error else "success"}}


def _text_blocks(part: TextPart) -> list[dict[str, Any]]:
    blocks = [{"text": part.text}]
    _cache_point(blocks, part)
    return blocks


def _file_blocks(part: FilePart) -> list[dict[str, Any]]:
    blocks = [convert_file(part)]
    _cache_point(blocks, part)
    return blocks


def _tool_use_block(part: ToolCallPart) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": part.id, "name": part.name, "input": part.arguments or {}}}


def _reasoning_block(part: ReasoningPart) -> dict[str, Any] | None:
    meta = _meta(part)
    server = meta.get("server_block")
    if isinstance(server, dict):
        return dict(server)
    redacted = meta.get("redacted_content")
    if isinstance(redacted, str) and redacted:
        return {"reasoningContent": {"redactedContent": redacted}}
    signature = meta.get("signature")
    if isinstance(signature, str) and signature:
        return {"reasoningContent": {"reasoningText": {"text": part.text, "signature": signature}}}
    return None


CONVERSE = Dialect(
    api="Bedrock Converse",
    text=_text_blocks,
    file=_file_blocks,
    tool_result=_tool_result,
    tool_use=_tool_use_block,
    reasoning=_reasoning_block,
    is_tool_result=lambda block: "toolResult" in block,
)
"""Converse's blocks for the shared conversation rules (:class:`hookstream_anthropic.request.Dialect`)."""
