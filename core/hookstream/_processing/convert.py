"""Convert between UI messages (:class:`hookstream.UIMessage`) and model messages (:class:`hookstream.Message`).

:func:`ui_messages_to_model_messages` walks each UI message's parts in order. An assistant UI message
holds a whole agent loop, so it is split at tool-result boundaries: the parts before a run of tool
results become one ``assistant`` message, the run of results one ``tool`` message, and so on (the
shape of TanStack AI's ``uiMessageToModelMessages``). :func:`model_messages_to_ui_messages` is the
inverse: an ``assistant`` message and the ``tool``/``assistant`` messages that follow it through tool
results merge into one UI message, each tool call getting its output and state from its result.

Sources and files map to :class:`~hookstream.SourceUIPart` / :class:`~hookstream.FileUIPart` and back
(bytes travel as ``data:`` URLs), tool-result files to ``ToolResultUIPart.files``.

Round trip ``model → UI → model`` gives equal messages, provider metadata (thinking signatures,
Gemini ``thoughtSignature``, Responses item ids) included, with two normalisations that no provider
can tell apart: consecutive ``tool`` messages merge into one, and a :class:`ToolCallPart` without
``arguments_raw`` comes back with the JSON text of its arguments there.

Thread safety: pure functions over values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .._events import parse_arguments
from .._ids import new_id
from .._messages import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    tool_output_text,
)
from .ui import (
    FileUIPart,
    ReasoningUIPart,
    SourceUIPart,
    TextUIPart,
    ToolCallUIPart,
    ToolResultUIPart,
    UIMessage,
    UIPart,
)

__all__ = [
    "file_to_model",
    "file_to_ui",
    "model_messages_to_ui_messages",
    "new_message_id",
    "source_to_model",
    "source_to_ui",
    "tool_call_to_model",
    "ui_messages_to_model_messages",
]


def new_message_id() -> str:
    """A fresh UI message id (``msg_<16 hex digits>``, the one id scheme of :func:`hookstream._ids.new_id`)."""
    return new_id("msg")


def tool_call_to_model(part: ToolCallUIPart) -> ToolCallPart:
    """The model-message form of a UI tool call. ``arguments`` is ``input`` when it is an object,
    else the arguments text parsed (``None`` when it is not a JSON object, e.g. cut off). A call in state
    ``approval-responded`` carries the answer in ``provider_metadata["hookstream"]["approval"]``
    (``{"approved", "id"}``), where the engine reads an approval answered in the client."""
    if isinstance(part.input, dict):
        arguments: dict[str, Any] | None = part.input
    elif part.input is None and part.state not in ("awaiting-input", "input-streaming"):
        arguments = parse_arguments(part.arguments)
    else:
        arguments = None
    metadata = part.provider_metadata
    approval = part.approval
    if part.state == "approval-responded" and approval is not None and isinstance(approval.approved, bool):
        # The user's answer goes along as the AG-UI and AI SDK readers carry it, so the engine runs or
        # denies the call instead of asking again (hookstream._agentloop.values.approval_in_messages);
        # a server still runs it only when it is a call its own model made (docs/agui-server.md).
        hookstream = {**dict((metadata or {}).get("hookstream") or {}),
                      "approval": {"approved": approval.approved, "id": approval.id}}
        metadata = {**(metadata or {}), "hookstream": hookstream}
    return ToolCallPart(part.id, part.name, arguments, part.arguments, metadata)


def file_to_model(part: FileUIPart) -> FilePart:
    """A UI file (``url`` an https or ``data:`` URL) as a :class:`FilePart`. Raises :class:`ValueError`
    for another URL scheme or a bad data URL."""
    f = FilePart.from_url(part.url, part.media_type)
    if f.data is not None:
        f.media_type = part.media_type  # the UI part's own media type wins over the data URL's
    f.filename = part.filename
    f.provider_metadata = part.provider_metadata
    return f


def file_to_ui(part: FilePart) -> FileUIPart:
    """A :class:`FilePart` as a UI file: bytes become a ``data:`` URL."""
    return FileUIPart(part.media_type, part.data_url(), part.filename, part.provider_metadata)


def source_to_model(part: SourceUIPart) -> SourcePart:
    """A UI source as a :class:`SourcePart` (``source-document`` -> ``source_type`` ``document``)."""
    return SourcePart(part.source_id, "document" if part.type == "source-document" else "url", part.url, part.title,
                      part.cited_text, part.start_index, part.end_index, part.document_index, part.provider_metadata)


def source_to_ui(part: SourcePart) -> SourceUIPart:
    """A :class:`SourcePart` as a UI source (``source-url`` or ``source-document``)."""
    return SourceUIPart(part.id, "source-document" if part.source_type == "document" else "source-url", part.url,
                        part.title, None, None, part.cited_text, part.start_index, part.end_index,
                        part.document_index, part.provider_metadata)


def ui_messages_to_model_messages(messages: Iterable[UIMessage]) -> list[Message]:
    """UI messages to model messages (see the module docstring). Reasoning parts become
    :class:`ReasoningPart`; a tool call whose state carries an output but has no tool-result part gets
    a result synthesised from that output, right after its segment."""
    out: list[Message] = []
    for ui in messages:
        if ui.role != "assistant":
            texts: list[Part] = [TextPart(p.content, p.provider_metadata) if isinstance(p, TextUIPart)
                                 else file_to_model(p) for p in ui.parts
                                 if isinstance(p, TextUIPart) or (isinstance(p, FileUIPart) and ui.role == "user")]
            out.append(Message(ui.role, texts))
            continue
        calls = {p.id: p for p in ui.parts if isinstance(p, ToolCallUIPart)}
        with_result = {p.tool_call_id for p in ui.parts if isinstance(p, ToolResultUIPart)}
        segment: list[Part] = []
        segment_calls: list[ToolCallUIPart] = []
        results: list[Part] = []
        for part in ui.parts:
            if isinstance(part, ToolResultUIPart):
                if segment:
                    out.append(Message("assistant", segment))
                    # Outputs of this segment's calls that have no result part of their own come first.
                    results.extend(_synthesised_results(segment_calls, with_result))
                    segment, segment_calls = [], []
                results.append(_result_to_model(part, calls.get(part.tool_call_id)))
                continue
            if results:
                out.append(Message("tool", results))
                results = []
            if isinstance(part, TextUIPart):
                segment.append(TextPart(part.content, part.provider_metadata))
            elif isinstance(part, ReasoningUIPart):
                segment.append(ReasoningPart(part.content, part.provider_metadata))
            elif isinstance(part, SourceUIPart):
                segment.append(source_to_model(part))
            elif isinstance(part, FileUIPart):
                segment.append(file_to_model(part))
            else:
                segment.append(tool_call_to_model(part))
                segment_calls.append(part)
        if segment:
            out.append(Message("assistant", segment))
            results.extend(_synthesised_results(segment_calls, with_result))
        if results:
            out.append(Message("tool", results))
    return out


def _synthesised_results(calls: list[ToolCallUIPart], with_result: set[str]) -> list[ToolResultPart]:
    return [
        ToolResultPart(c.id, c.name, c.output, c.state == "output-error")
        for c in calls
        if c.has_output and c.id not in with_result
    ]


def _result_to_model(part: ToolResultUIPart, call: ToolCallUIPart | None) -> ToolResultPart:
    if call is not None and call.has_output:
        output = call.output
    else:
        output = part.error if part.state == "error" and part.error is not None else part.content
    name = part.tool_name if part.tool_name is not None else (call.name if call is not None else "")
    return ToolResultPart(part.tool_call_id, name, output, part.state == "error", part.provider_metadata,
                          files=[file_to_model(f) for f in part.files])


def model_messages_to_ui_messages(messages: Iterable[Message]) -> list[UIMessage]:
    """Model messages to UI messages (see the module docstring). Message ids are generated."""
    out: list[UIMessage] = []
    current: UIMessage | None = None  # the assistant UI message tool results may still join
    after_tool = False
    for msg in messages:
        if msg.role in ("system", "user"):
            out.append(UIMessage(new_message_id(), msg.role, [_part_to_ui(p) for p in msg.parts]))
            current = None
            continue
        if msg.role == "assistant":
            if current is None or not after_tool:
                current = UIMessage(new_message_id(), "assistant")
                out.append(current)
            current.parts.extend(_part_to_ui(p) for p in msg.parts)
            after_tool = False
            continue
        # role "tool"
        if current is None:
            current = UIMessage(new_message_id(), "assistant")
            out.append(current)
        for p in msg.parts:
            if isinstance(p, ToolResultPart):
                current.parts.append(_result_to_ui(p, current))
        after_tool = True
    return out


def _part_to_ui(part: Part) -> UIPart:
    if isinstance(part, TextPart):
        return TextUIPart(part.text, part.provider_metadata)
    if isinstance(part, ReasoningPart):
        return ReasoningUIPart(part.text, part.provider_metadata)
    if isinstance(part, ToolCallPart):
        raw = part.arguments_raw
        if raw is None:
            raw = json.dumps(part.arguments, ensure_ascii=False) if part.arguments is not None else ""
        return ToolCallUIPart(part.id, part.name, raw, "input-complete", part.arguments,
                              provider_metadata=part.provider_metadata)
    if isinstance(part, SourcePart):
        return source_to_ui(part)
    if isinstance(part, FilePart):
        return file_to_ui(part)
    raise ValueError(f"a tool result cannot stand in a {type(part).__name__} position")


def _result_to_ui(result: ToolResultPart, message: UIMessage) -> ToolResultUIPart:
    text = tool_output_text(result.output)
    for p in reversed(message.parts):
        if isinstance(p, ToolCallUIPart) and p.id == result.tool_call_id:
            p.output = result.output
            p.state = "output-error" if result.is_error else "output-available"
            name = None if result.tool_name == p.name else result.tool_name
            break
    else:
        name = result.tool_name
    return ToolResultUIPart(
        result.tool_call_id,
        text,
        "error" if result.is_error else "complete",
        text if result.is_error else None,
        name,
        result.provider_metadata,
        files=[file_to_ui(f) for f in result.files],
    )
