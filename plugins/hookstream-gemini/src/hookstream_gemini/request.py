"""Build the Gemini ``streamGenerateContent`` request body from a provider-neutral ModelRequest.

Shape (Gemini API reference, ``models.streamGenerateContent`` / ``GenerateContentRequest``, and the
function-calling and thought-signatures guides)::

    {"contents": [{"role": "user" | "model", "parts": [Part, ...]}, ...],
     "systemInstruction": {"parts": [{"text": ...}]},
     "tools": [{"functionDeclarations": [{"name", "description", "parametersJsonSchema"}]}],
     "toolConfig": {"functionCallingConfig": {"mode": "AUTO" | "NONE" | "ANY", "allowedFunctionNames": [...]}},
     "generationConfig": {"maxOutputTokens": int, "temperature": float, "thinkingConfig": {...}}}

Parts: ``{"text"}``, ``{"text", "thought": true}``, ``{"functionCall": {"name", "args", "id"}}`` and, in a
``user`` turn, ``{"functionResponse": {"name", "response": {...}, "id"}}``. A part that came from Gemini
with a ``thoughtSignature`` gets it back exactly as received, on the same kind of part; metadata of other
providers is never sent.

Files (:class:`FilePart`; "Image understanding", "Document understanding", "Audio understanding"
guides): bytes become ``{"inlineData": {"mimeType", "data": base64}}``, a URL (``https://`` or
``gs://``, or a Files API URI) ``{"fileData": {"mimeType", "fileUri"}}``. Gemini takes images, audio,
video, PDF and text; a file whose media type is unknown (``application/octet-stream``) raises
:class:`ValueError` before anything is sent. A tool result's files go inside its ``functionResponse``
as ``parts: [{"inlineData": {"mimeType", "data", "displayName"}}]`` ("Function calling" >
multimodal function responses; Gemini 3 wants them there, not as sibling parts); a URL file, which
``FunctionResponsePart.fileData`` does not take on the Gemini API, follows the ``functionResponse``
as a ``fileData`` part in the same ``user`` turn.

In a ``model`` turn: a generated file (:class:`FilePart` from ``inlineData``) goes back as
``inlineData`` with its ``thoughtSignature``; a part the stream kept verbatim
(``provider_metadata["gemini"]["part"]``: ``executableCode``, ``codeExecutionResult``, the server-side
``toolCall`` / ``toolResponse`` of built-in tools) goes back exactly as received; sources are not sent
(grounding is response metadata, not content).

Tool parameters go in ``parametersJsonSchema`` (plain JSON Schema, as hookstream's ``ToolSpec`` holds
it) rather than ``parameters``, which takes Gemini's OpenAPI-subset ``Schema`` and rejects common JSON
Schema keywords (``additionalProperties``, ``$ref``...). The two fields are mutually exclusive.
"""

from __future__ import annotations

import copy
from typing import Any

from hookstream import FilePart, Message, ReasoningPart, SourcePart, TextPart, ToolCallPart, ToolResultPart
from hookstream.plugin import ModelRequest, OutputFormat, ToolSpec, tool_output_text

__all__ = ["build_body", "convert_file", "deep_merge", "gemini_meta", "output_generation_config"]

PROVIDER = "gemini"


def gemini_meta(provider_metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``"gemini"`` entry of a part's provider metadata, or ``None``."""
    if not provider_metadata:
        return None
    meta = provider_metadata.get(PROVIDER)
    return meta if isinstance(meta, dict) else None


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` merged into a copy of ``base``: nested objects merge key by key, anything else
    (lists included) is replaced."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def build_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body for ``request``. Raises :class:`ValueError` for a ``tool_choice`` Gemini cannot
    express or a message role it does not know."""
    system, contents = _contents(request.messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
    if request.tool_choice is not None:
        body["toolConfig"] = {"functionCallingConfig": _calling_config(request.tool_choice)}
    generation: dict[str, Any] = {}
    if request.max_tokens is not None:
        generation["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        generation["temperature"] = request.temperature
    if request.output is not None:
        generation.update(output_generation_config(request.output))
    if generation:
        body["generationConfig"] = generation
    if request.options:
        body = deep_merge(body, request.options)
    return body


def _contents(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(``systemInstruction`` parts, ``contents``): system text apart; user text, files and tool
    results as ``user`` turns, assistant parts as ``model`` turns, consecutive turns of one role merged.
    Raises :class:`ValueError` for a role Gemini does not know."""
    call_ids = _gemini_call_ids(messages)
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.extend({"text": p.text} for p in message.parts if isinstance(p, TextPart) and p.text)
            continue
        if message.role == "user":
            role, parts = "user", _user_parts(message, call_ids)
        elif message.role == "assistant":
            role, parts = "model", _model_parts(message)
        elif message.role == "tool":
            role, parts = "user", [x for p in message.tool_results for x in _function_response(p, call_ids)]
        else:
            raise ValueError(f"Gemini has no message role {message.role!r}")
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            # Gemini wants parallel function responses (and what follows them) in one turn.
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return system, contents


def output_generation_config(output: OutputFormat) -> dict[str, Any]:
    """Structured output as ``generationConfig`` fields (Gemini API, "Structured output": JSON Schema
    support): ``responseMimeType: "application/json"`` and ``responseJsonSchema`` (the JSON Schema as is;
    not the older OpenAPI-subset ``responseSchema``). The JSON streams as text parts."""
    return {"responseMimeType": "application/json", "responseJsonSchema": output.schema}


def _gemini_call_ids(messages: list[Message]) -> dict[str, str]:
    """hookstream tool-call id -> the id Gemini gave that call (only calls Gemini named itself)."""
    out: dict[str, str] = {}
    for message in messages:
        for part in message.tool_calls:
            meta = gemini_meta(part.provider_metadata)
            if meta and isinstance(meta.get("functionCallId"), str):
                out[part.id] = meta["functionCallId"]
    return out


def _user_parts(message: Message, call_ids: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"text": part.text})
        elif isinstance(part, FilePart):
            out.append(convert_file(part))
        elif isinstance(part, ToolResultPart):
            out.extend(_function_response(part, call_ids))
        else:
            raise ValueError(f"a user message cannot hold a {part.kind} part")
    return out


def _model_parts(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in message.parts:
        meta = gemini_meta(part.provider_metadata)
        signature = meta.get("thoughtSignature") if meta else None
        if isinstance(part, TextPart):
            if not part.text and not signature:
                continue
            item: dict[str, Any] = {"text": part.text}
        elif isinstance(part, ReasoningPart):
            if meta and isinstance(meta.get("part"), dict):
                out.append(dict(meta["part"]))  # a built-in tool's part, verbatim (signature included)
                continue
            # Thinking is sent back only when Gemini signed it: the signature is the state the API
            # uses; unsigned or foreign thinking text is not something Gemini accepts as context.
            if not signature:
                continue
            item = {"text": part.text, "thought": True} if part.text else {"text": ""}
        elif isinstance(part, ToolCallPart):
            call: dict[str, Any] = {"name": part.name, "args": part.arguments if part.arguments is not None else {}}
            if meta and isinstance(meta.get("functionCallId"), str):
                call["id"] = meta["functionCallId"]
            item = {"functionCall": call}
        elif isinstance(part, FilePart):
            item = convert_file(part)
            if meta and meta.get("thought") is True:
                item["thought"] = True
        elif isinstance(part, SourcePart):
            continue
        else:
            raise ValueError(f"an assistant message cannot hold a {part.kind} part")
        if signature:
            item["thoughtSignature"] = signature
        out.append(item)
    return out


def convert_file(part: FilePart) -> dict[str, Any]:
    """``{"inlineData": {"mimeType", "data"}}`` for bytes, ``{"fileData": {"mimeType", "fileUri"}}`` for
    a URL. Raises :class:`ValueError` when the media type is unknown."""
    media_type = part.media_type.split(";", 1)[0].strip().lower()
    if not media_type or media_type == "application/octet-stream":
        raise ValueError(
            f"Gemini needs the media type of {part.filename or 'a file'}; give FilePart a media_type"
        )
    if part.url is not None:
        return {"fileData": {"mimeType": media_type, "fileUri": part.url}}
    return {"inlineData": {"mimeType": media_type, "data": part.base64()}}


def _function_response(part: ToolResultPart, call_ids: dict[str, str]) -> list[dict[str, Any]]:
    if part.is_error:
        response: dict[str, Any] = {"error": tool_output_text(part.output)}
    elif isinstance(part.output, dict):
        response = part.output
    else:
        # ``response`` must be a JSON object (protobuf Struct); other outputs are wrapped.
        response = {"result": part.output}
    fr: dict[str, Any] = {"name": part.tool_name, "response": response}
    if part.tool_call_id in call_ids:
        fr["id"] = call_ids[part.tool_call_id]
    inline: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for n, file in enumerate(part.files):
        converted = convert_file(file)
        if "inlineData" in converted:
            converted["inlineData"]["displayName"] = file.filename or f"{part.tool_name}-{n}"
            inline.append(converted)
        else:
            after.append(converted)
    if inline:
        fr["parts"] = inline
    return [{"functionResponse": fr}, *after]


def _declaration(tool: ToolSpec) -> dict[str, Any]:
    decl: dict[str, Any] = {"name": tool.name}
    if tool.description:
        decl["description"] = tool.description
    decl["parametersJsonSchema"] = tool.parameters
    return decl


def _calling_config(choice: str | dict[str, Any]) -> dict[str, Any]:
    if choice == "auto":
        return {"mode": "AUTO"}
    if choice == "none":
        return {"mode": "NONE"}
    if choice == "required":
        return {"mode": "ANY"}
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
    raise ValueError(f"tool_choice {choice!r}: expected auto, none, required or {{'name': TOOL}}")
