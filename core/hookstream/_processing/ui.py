"""UI messages: what a chat interface renders, built by :class:`hookstream.StreamProcessor`.

A :class:`UIMessage` has an id, a role and an ordered list of typed parts, following the TanStack AI
``UIMessage`` data model (``@tanstack/ai`` ``types.ts``: ``TextPart``, ``ThinkingPart``,
``ToolCallPart``, ``ToolResultPart``):

* :class:`TextUIPart` (``"text"``): one contiguous text segment; tool parts separate segments.
* :class:`ReasoningUIPart` (``"thinking"``, TanStack's ``ThinkingPart``): reasoning text of one
  reasoning block, updated in place while it streams.
* :class:`ToolCallUIPart` (``"tool-call"``): a tool call and its lifecycle :data:`ToolCallState`;
  ``arguments`` is the raw JSON text so far, ``input`` the parsed (possibly partial) object.
* :class:`ToolResultUIPart` (``"tool-result"``): a tool's output as text, state
  ``streaming | complete | error``, and the files it returned.
* :class:`SourceUIPart` (``"source-url"`` / ``"source-document"``) and :class:`FileUIPart`
  (``"file"``): a cited source and a file (an attachment in a user message, a generated image in an
  assistant message), with the field names of the Vercel AI SDK ``UIMessage`` parts of the same
  ``type`` (``ai`` package, ``SourceUrlUIPart``, ``SourceDocumentUIPart``, ``FileUIPart``):
  ``{"type": "source-url", "sourceId", "url", "title"?}``, ``{"type": "source-document", "sourceId",
  "mediaType", "title", "filename"?}``, ``{"type": "file", "mediaType", "url", "filename"?}`` where
  ``url`` is an https URL or a ``data:`` URL holding the bytes. hookstream adds ``citedText``,
  ``startIndex``, ``endIndex`` and ``documentIndex`` to sources when the provider gave them.

``provider_metadata`` (keyed by provider name, e.g. ``{"anthropic": {"signature": "..."}}``) rides on
every part so that :func:`hookstream.ui_messages_to_model_messages` can give it back to the provider unchanged.

JSON form (:meth:`UIMessage.to_dict` / :meth:`UIMessage.from_dict`) uses TanStack's camelCase keys:
``{"id", "role", "parts": [{"type": "text", "content": ...}, {"type": "tool-call", "id", "name",
"arguments", "state", "input", "approval": {"id", "needsApproval", "approved"}, "output"}, ...]}``;
unset optional fields are omitted. ``to_dict`` then ``from_dict`` gives an equal message.

Thread safety: parts are mutable while a processor streams into them; read them inside a processor
callback or while holding ``StreamProcessor.lock``. After ``finalize()`` they are plain values.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import attrs

__all__ = [
    "TOOL_CALL_STATES",
    "FileUIPart",
    "ReasoningUIPart",
    "SourceUIPart",
    "TextUIPart",
    "ToolApproval",
    "ToolCallState",
    "ToolCallUIPart",
    "ToolResultState",
    "ToolResultUIPart",
    "UIMessage",
    "UIPart",
    "part_from_dict",
    "part_to_dict",
]

ToolCallState = Literal[
    "awaiting-input",
    "input-streaming",
    "input-complete",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
]
"""Lifecycle of a tool call: ``awaiting-input → input-streaming → input-complete →
(approval-requested → approval-responded) → output-available | output-error``."""

TOOL_CALL_STATES: tuple[str, ...] = get_args(ToolCallState)

ToolResultState = Literal["streaming", "complete", "error"]

ProviderMetadata = dict[str, Any]


@attrs.define(slots=True)
class TextUIPart:
    """One text segment. ``content`` is the published text (what the chunk strategy let through)."""

    content: str = ""
    provider_metadata: ProviderMetadata | None = None
    type: Literal["text"] = "text"


@attrs.define(slots=True)
class ReasoningUIPart:
    """Reasoning text of one reasoning block (AG-UI ``REASONING_*``), with the provider's signature
    metadata. Its JSON ``type`` is ``"thinking"``, the name TanStack AI's ``UIMessage`` gives this part,
    so UI messages stay readable by TanStack clients and earlier saved conversations still load."""

    content: str = ""
    provider_metadata: ProviderMetadata | None = None
    type: Literal["thinking"] = "thinking"


@attrs.define(slots=True)
class ToolApproval:
    """Approval asked for a tool call: ``id`` is the approval id; ``approved`` is ``None`` until the
    user answers through ``StreamProcessor.add_tool_approval_response``."""

    id: str
    needs_approval: bool = True
    approved: bool | None = None


@attrs.define(slots=True)
class ToolCallUIPart:
    """A tool call.

    ``arguments`` is the raw JSON text received so far; ``input`` the parsed object, kept current
    after every delta while it streams (containers fill in as their members complete; a string still
    streaming shows up once it closes, see ``hookstream._processing.partial_json``), replaced by
    ``TOOL_CALL_END.input`` when the adapter sends one. ``input`` is ``None`` when the final text is not a
    JSON object. ``output`` is the tool's result once ``state`` is ``output-available`` or
    ``output-error``.
    """

    id: str
    name: str
    arguments: str = ""
    state: ToolCallState = "awaiting-input"
    input: Any = None
    approval: ToolApproval | None = None
    output: Any = None
    provider_metadata: ProviderMetadata | None = None
    type: Literal["tool-call"] = "tool-call"

    @property
    def has_output(self) -> bool:
        return self.state in ("output-available", "output-error")


@attrs.define(slots=True)
class FileUIPart:
    """A file: ``url`` is an https URL or a ``data:<media type>;base64,...`` URL with the bytes;
    ``media_type`` the IANA media type."""

    media_type: str
    url: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None
    type: Literal["file"] = "file"


@attrs.define(slots=True)
class SourceUIPart:
    """A source the answer cites: a web page (``type`` ``source-url``: ``url``, ``title``) or a document
    of the request (``source-document``: ``title``, ``media_type``, ``filename``). ``cited_text`` is the
    quoted span and ``start_index``/``end_index`` the cited range of the text, when given."""

    source_id: str
    type: Literal["source-url", "source-document"] = "source-url"
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None
    cited_text: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    document_index: int | None = None
    provider_metadata: ProviderMetadata | None = None


@attrs.define(slots=True)
class ToolResultUIPart:
    """A tool's result as the model sees it: ``content`` is text (JSON text for structured output);
    ``error`` holds the error text when ``state`` is ``error``."""

    tool_call_id: str
    content: str
    state: ToolResultState = "complete"
    error: str | None = None
    tool_name: str | None = None
    provider_metadata: ProviderMetadata | None = None
    type: Literal["tool-result"] = "tool-result"
    files: list[FileUIPart] = attrs.Factory(list)


UIPart = TextUIPart | ReasoningUIPart | ToolCallUIPart | ToolResultUIPart | SourceUIPart | FileUIPart


@attrs.define(slots=True)
class UIMessage:
    """One message of the conversation as the UI shows it. ``role`` is ``system``, ``user`` or
    ``assistant``; an assistant message holds every step of one agent loop, parts in stream order."""

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart] = attrs.Factory(list)

    @property
    def text(self) -> str:
        """All text parts joined, no separator."""
        return "".join(p.content for p in self.parts if isinstance(p, TextUIPart))

    @property
    def reasoning(self) -> str:
        """All reasoning parts joined, no separator."""
        return "".join(p.content for p in self.parts if isinstance(p, ReasoningUIPart))

    @property
    def tool_calls(self) -> list[ToolCallUIPart]:
        return [p for p in self.parts if isinstance(p, ToolCallUIPart)]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (camelCase, unset optionals omitted)."""
        return {"id": self.id, "role": self.role, "parts": [part_to_dict(p) for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UIMessage:
        """Inverse of :meth:`to_dict`. Raises :class:`ValueError` for an unknown role or part type and
        :class:`KeyError` for a missing required field."""
        role = data["role"]
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown UI message role {role!r}")
        return cls(str(data["id"]), role, [part_from_dict(p) for p in data.get("parts", [])])


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def part_to_dict(part: UIPart) -> dict[str, Any]:
    """JSON form of one part (see the module docstring)."""
    out: dict[str, Any] = {"type": part.type}
    if isinstance(part, TextUIPart | ReasoningUIPart):
        out["content"] = part.content
    elif isinstance(part, ToolCallUIPart):
        out.update(id=part.id, name=part.name, arguments=part.arguments, state=part.state)
        _put(out, "input", part.input)
        if part.approval is not None:
            approval: dict[str, Any] = {"id": part.approval.id, "needsApproval": part.approval.needs_approval}
            _put(approval, "approved", part.approval.approved)
            out["approval"] = approval
        if part.has_output:
            out["output"] = part.output  # None is a valid tool output here
    elif isinstance(part, ToolResultUIPart):
        out.update(toolCallId=part.tool_call_id, content=part.content, state=part.state)
        _put(out, "error", part.error)
        _put(out, "toolName", part.tool_name)
        if part.files:
            out["files"] = [part_to_dict(f) for f in part.files]
    elif isinstance(part, FileUIPart):
        out.update(mediaType=part.media_type, url=part.url)
        _put(out, "filename", part.filename)
    else:
        out["sourceId"] = part.source_id
        for key, value in (("url", part.url), ("title", part.title), ("mediaType", part.media_type),
                           ("filename", part.filename), ("citedText", part.cited_text),
                           ("startIndex", part.start_index), ("endIndex", part.end_index),
                           ("documentIndex", part.document_index)):
            _put(out, key, value)
    _put(out, "providerMetadata", part.provider_metadata)
    return out


def part_from_dict(data: dict[str, Any]) -> UIPart:
    """Inverse of :func:`part_to_dict`. Raises :class:`ValueError` for an unknown ``type`` or state."""
    kind = data.get("type")
    meta = data.get("providerMetadata")
    if kind == "text":
        return TextUIPart(data.get("content", ""), meta)
    if kind == "thinking":
        return ReasoningUIPart(data.get("content", ""), meta)
    if kind == "tool-call":
        state = data.get("state", "input-complete")
        if state not in TOOL_CALL_STATES:
            raise ValueError(f"unknown tool call state {state!r}")
        approval = data.get("approval")
        return ToolCallUIPart(
            data["id"],
            data["name"],
            data.get("arguments", ""),
            state,
            data.get("input"),
            ToolApproval(approval["id"], approval.get("needsApproval", True), approval.get("approved"))
            if approval
            else None,
            data.get("output"),
            meta,
        )
    if kind == "tool-result":
        state = data.get("state", "complete")
        if state not in ("streaming", "complete", "error"):
            raise ValueError(f"unknown tool result state {state!r}")
        files = [part_from_dict(f) for f in data.get("files") or []]
        return ToolResultUIPart(
            data["toolCallId"], data.get("content", ""), state, data.get("error"), data.get("toolName"), meta,
            files=[f for f in files if isinstance(f, FileUIPart)],
        )
    if kind == "file":
        return FileUIPart(data["mediaType"], data["url"], data.get("filename"), meta)
    if kind in ("source-url", "source-document"):
        return SourceUIPart(
            data["sourceId"], kind, data.get("url"), data.get("title"), data.get("mediaType"),
            data.get("filename"), data.get("citedText"), data.get("startIndex"), data.get("endIndex"),
            data.get("documentIndex"), meta,
        )
    raise ValueError(f"unknown UI part type {kind!r}")
