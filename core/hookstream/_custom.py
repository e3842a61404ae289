"""Typed values of the ``CUSTOM`` events the agent loop sends, and the one parser every reader uses.

AG-UI's ``CUSTOM`` event carries an application ``name`` and a free ``value``. The engine sends six
names and provider adapters two more (``source``, ``file``: output parts beyond text); each has a
payload class here that builds the value (:meth:`to_value`, the camelCase wire dict that AG-UI
clients and the browser page read) and parses it back strictly (:meth:`from_value`). Readers
(:class:`~hookstream.StreamProcessor`, the CLI renderers) call :func:`parse_custom`, so the shape of
each value is written down once:

=========================  ===========================================================================
``name``                   ``value``
=========================  ===========================================================================
``tool-call-repaired``     ``{"toolCallId": str, "toolName": str, "input": object | null}``
``tool-input-available``   ``{"toolCallId": str, "toolName": str, "input": object}``
``approval-requested``     ``{"toolCallId": str, "approvalId": str, "toolName": str, "input": object}``
``approval-responded``     ``{"toolCallId": str, "approvalId": str, "approved": bool}``
``loop-stopped``           ``{"stoppedBy": "max_steps" | "stop_condition", "steps": int, "maxSteps": int}``
``tool-calls-unanswered``  ``{"toolCallIds": [str], "message": str}``
``source``                 ``{"id": str, "sourceType": "url" | "document", "url"?: str, "title"?: str,
                           "citedText"?: str, "startIndex"?: int, "endIndex"?: int,
                           "documentIndex"?: int, "providerMetadata"?: object}``
``file``                   ``{"mediaType": str, "data"?: str (base64), "url"?: str, "filename"?: str,
                           "providerMetadata"?: object}`` (exactly one of ``data`` and ``url``)
=========================  ===========================================================================

Optional keys (``?``) are omitted when unknown. Parsing is strict about the fields above (a missing
key or a wrong JSON type raises :class:`~hookstream.errors.MalformedCustomEventError`) and ignores keys it
does not know, so a newer sender can add fields without breaking an older reader.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, ClassVar, Literal, TypeAlias, cast

import attrs

from ._errors import MalformedCustomEventError
from ._events import BaseEvent, Custom
from ._messages import FilePart, SourcePart

__all__ = [
    "ApprovalRequestedPayload",
    "ApprovalRespondedPayload",
    "CustomPayload",
    "FilePayload",
    "LoopStoppedPayload",
    "SourcePayload",
    "ToolCallRepairedPayload",
    "ToolCallsUnansweredPayload",
    "ToolInputAvailablePayload",
    "parse_custom",
]

# The agui provider's CUSTOM event holding a remote agent's own tool calls and results (``{"messages":
# [AG-UI messages]}``), which the step accumulator keeps in history (``docs/agui-client.md``).
AGUI_SERVER_MESSAGES = "agui-server-messages"

StoppedBy = Literal["max_steps", "stop_condition"]
_STOPPED_BY: frozenset[str] = frozenset({"max_steps", "stop_condition"})


class _Fields:
    """Typed reads of one wire dict; each failure names the event and the key."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: object) -> None:
        if not isinstance(value, dict):
            raise MalformedCustomEventError(name, f"the value is {type(value).__name__}, not a JSON object")
        self.name = name
        self.value: dict[str, Any] = value

    def _get(self, key: str) -> object:
        if key not in self.value:
            raise MalformedCustomEventError(self.name, f"missing {key!r}")
        return self.value[key]

    def str_(self, key: str) -> str:
        v = self._get(key)
        if not isinstance(v, str):
            raise MalformedCustomEventError(self.name, f"{key!r} is {type(v).__name__}, not a string")
        return v

    def int_(self, key: str) -> int:
        v = self._get(key)
        # bool is an int in Python, not in JSON.
        if isinstance(v, bool) or not isinstance(v, int):
            raise MalformedCustomEventError(self.name, f"{key!r} is {type(v).__name__}, not an integer")
        return v

    def bool_(self, key: str) -> bool:
        v = self._get(key)
        if not isinstance(v, bool):
            raise MalformedCustomEventError(self.name, f"{key!r} is {type(v).__name__}, not a boolean")
        return v

    def opt_str(self, key: str) -> str | None:
        return self.str_(key) if self.value.get(key) is not None else None

    def opt_int(self, key: str) -> int | None:
        return self.int_(key) if self.value.get(key) is not None else None

    def opt_object(self, key: str) -> dict[str, Any] | None:
        return self.object_(key) if self.value.get(key) is not None else None

    def object_(self, key: str, *, nullable: bool = False) -> dict[str, Any] | None:
        v = self._get(key)
        if v is None and nullable:
            return None
        if not isinstance(v, dict):
            wanted = "a JSON object or null" if nullable else "a JSON object"
            raise MalformedCustomEventError(self.name, f"{key!r} is {type(v).__name__}, not {wanted}")
        return v


@attrs.define(slots=True, frozen=True)
class ToolCallRepairedPayload:
    """``tool-call-repaired``: ``repair_tool_call`` replaced a streamed call. ``tool_call_id`` is the id
    the stream announced (the result pairs with it); ``tool_name`` and ``input`` (the parsed arguments,
    ``None`` when the repaired call's arguments are still not a JSON object) replace the streamed ones."""

    name: ClassVar[str] = "tool-call-repaired"
    tool_call_id: str
    tool_name: str
    input: dict[str, Any] | None

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"toolCallId", "toolName", "input"}``."""
        return {"toolCallId": self.tool_call_id, "toolName": self.tool_name, "input": self.input}

    @classmethod
    def from_value(cls, value: object) -> ToolCallRepairedPayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        return cls(f.str_("toolCallId"), f.str_("toolName"), f.object_("input", nullable=True))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class ToolInputAvailablePayload:
    """``tool-input-available``: a client tool (one without a function) was called; the client runs it
    with ``input`` (the parsed arguments) and answers with a result for ``tool_call_id``."""

    name: ClassVar[str] = "tool-input-available"
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"toolCallId", "toolName", "input"}``."""
        return {"toolCallId": self.tool_call_id, "toolName": self.tool_name, "input": self.input}

    @classmethod
    def from_value(cls, value: object) -> ToolInputAvailablePayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        return cls(f.str_("toolCallId"), f.str_("toolName"), cast("dict[str, Any]", f.object_("input")))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class ApprovalRequestedPayload:
    """``approval-requested``: a tool needs approval before it runs. ``approval_id`` is
    ``approval_<toolCallId>``, also the interrupt id of ``RUN_FINISHED`` when no ``approve`` callback
    decides; ``input`` is the parsed arguments the tool would run with."""

    name: ClassVar[str] = "approval-requested"
    tool_call_id: str
    approval_id: str
    tool_name: str
    input: dict[str, Any]

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"toolCallId", "approvalId", "toolName", "input"}``."""
        return {"toolCallId": self.tool_call_id, "approvalId": self.approval_id, "toolName": self.tool_name,
                "input": self.input}

    @classmethod
    def from_value(cls, value: object) -> ApprovalRequestedPayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        return cls(f.str_("toolCallId"), f.str_("approvalId"), f.str_("toolName"),
                   cast("dict[str, Any]", f.object_("input")))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class ApprovalRespondedPayload:
    """``approval-responded``: the engine's ``approve`` callback decided; a denied call (``approved``
    false) then gets an error ``TOOL_CALL_RESULT``."""

    name: ClassVar[str] = "approval-responded"
    tool_call_id: str
    approval_id: str
    approved: bool

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"toolCallId", "approvalId", "approved"}``."""
        return {"toolCallId": self.tool_call_id, "approvalId": self.approval_id, "approved": self.approved}

    @classmethod
    def from_value(cls, value: object) -> ApprovalRespondedPayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        return cls(f.str_("toolCallId"), f.str_("approvalId"), f.bool_("approved"))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class LoopStoppedPayload:
    """``loop-stopped``: ``max_steps`` or a stop condition ended a loop whose last step's tools ran and
    wanted another model call (sent just before ``RUN_FINISHED``). ``steps`` is the number of model
    calls made, ``max_steps`` the configured limit."""

    name: ClassVar[str] = "loop-stopped"
    stopped_by: StoppedBy
    steps: int
    max_steps: int

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"stoppedBy", "steps", "maxSteps"}``."""
        return {"stoppedBy": self.stopped_by, "steps": self.steps, "maxSteps": self.max_steps}

    @classmethod
    def from_value(cls, value: object) -> LoopStoppedPayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        stopped_by = f.str_("stoppedBy")
        if stopped_by not in _STOPPED_BY:
            raise MalformedCustomEventError(cls.name, f"'stoppedBy' is {stopped_by!r}, not one of "
                                                      + ", ".join(sorted(_STOPPED_BY)))
        return cls(cast("StoppedBy", stopped_by), f.int_("steps"), f.int_("maxSteps"))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class ToolCallsUnansweredPayload:
    """``tool-calls-unanswered``: the conversation a run was given holds assistant tool calls that no
    tool message answers and nothing will answer now (a later user message followed them); the engine
    gave each an error result so that no provider is sent an unpaired history (OpenAI and Anthropic
    reject one). ``tool_call_ids`` are those calls, ``message`` the error result they got."""

    name: ClassVar[str] = "tool-calls-unanswered"
    tool_call_ids: list[str]
    message: str

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"toolCallIds": [str], "message": str}``."""
        return {"toolCallIds": list(self.tool_call_ids), "message": self.message}

    @classmethod
    def from_value(cls, value: object) -> ToolCallsUnansweredPayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        ids = f.value.get("toolCallIds")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise MalformedCustomEventError(cls.name, "'toolCallIds' must be a list of strings")
        return cls(list(ids), f.str_("message"))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


def _compact(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


@attrs.define(slots=True, frozen=True)
class SourcePayload:
    """``source``: the model cited or grounded its answer on a source (a web page or a document of the
    request). Sent by adapters through :meth:`~hookstream.plugin.StreamBuilder.source`; the step's
    assistant message keeps ``part`` (a :class:`~hookstream.SourcePart`)."""

    name: ClassVar[str] = "source"
    part: SourcePart

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"id", "sourceType", "url"?, "title"?, "citedText"?, "startIndex"?,
        "endIndex"?, "documentIndex"?, "providerMetadata"?}``."""
        p = self.part
        return _compact({"id": p.id, "sourceType": p.source_type, "url": p.url, "title": p.title,
                         "citedText": p.cited_text, "startIndex": p.start_index, "endIndex": p.end_index,
                         "documentIndex": p.document_index, "providerMetadata": p.provider_metadata})

    @classmethod
    def from_value(cls, value: object) -> SourcePayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        source_type = f.str_("sourceType")
        if source_type not in ("url", "document"):
            raise MalformedCustomEventError(cls.name, f"'sourceType' is {source_type!r}, not url or document")
        return cls(SourcePart(
            f.str_("id"), cast("Literal['url', 'document']", source_type), url=f.opt_str("url"),
            title=f.opt_str("title"), cited_text=f.opt_str("citedText"), start_index=f.opt_int("startIndex"),
            end_index=f.opt_int("endIndex"), document_index=f.opt_int("documentIndex"),
            provider_metadata=f.opt_object("providerMetadata"),
        ))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


@attrs.define(slots=True, frozen=True)
class FilePayload:
    """``file``: the model produced a file (a generated image). Sent by adapters through
    :meth:`~hookstream.plugin.StreamBuilder.file`; the step's assistant message keeps ``part`` (a
    :class:`~hookstream.FilePart`). ``data`` on the wire is standard base64."""

    name: ClassVar[str] = "file"
    part: FilePart

    def to_value(self) -> dict[str, Any]:
        """The wire value: ``{"mediaType", "data"? (base64) | "url"?, "filename"?, "providerMetadata"?}``."""
        p = self.part
        data = p.base64() if p.data is not None else None
        return _compact({"mediaType": p.media_type, "data": data, "url": p.url, "filename": p.filename,
                         "providerMetadata": p.provider_metadata})

    @classmethod
    def from_value(cls, value: object) -> FilePayload:
        """Parse a wire value; raises :class:`~hookstream.errors.MalformedCustomEventError` (also when the
        base64 is invalid or neither/both of ``data`` and ``url`` are given)."""
        f = _Fields(cls.name, value)
        media_type = f.str_("mediaType")
        data, url = f.opt_str("data"), f.opt_str("url")
        if (data is None) == (url is None):
            raise MalformedCustomEventError(cls.name, "needs exactly one of 'data' and 'url'")
        raw: bytes | None = None
        if data is not None:
            try:
                raw = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise MalformedCustomEventError(cls.name, "'data' is not valid base64") from None
        return cls(FilePart(media_type, data=raw, url=url, filename=f.opt_str("filename"),
                            provider_metadata=f.opt_object("providerMetadata")))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


CustomPayload: TypeAlias = (
    ToolCallRepairedPayload
    | ToolInputAvailablePayload
    | ApprovalRequestedPayload
    | ApprovalRespondedPayload
    | LoopStoppedPayload
    | ToolCallsUnansweredPayload
    | SourcePayload
    | FilePayload
)

_REGISTRY: dict[str, type[CustomPayload]] = {
    cls.name: cls
    for cls in (ToolCallRepairedPayload, ToolInputAvailablePayload, ApprovalRequestedPayload,
                ApprovalRespondedPayload, LoopStoppedPayload, ToolCallsUnansweredPayload, SourcePayload,
                FilePayload)
}


def parse_custom(event: BaseEvent) -> CustomPayload | None:
    """The typed payload of one of the engine's ``CUSTOM`` events; ``None`` for any other event (another
    ``CUSTOM`` name, or not a ``CUSTOM`` event). Raises :class:`~hookstream.errors.MalformedCustomEventError`
    when the name is one of the engine's and the value does not have its shape."""
    if type(event) is not Custom:
        return None
    cls = _REGISTRY.get(event.name)
    return cls.from_value(event.value) if cls is not None else None
