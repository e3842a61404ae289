"""Typed values of the ``CUSTOM`` events the agent loop sends, and the one parser every reader uses.

AG-UI's ``CUSTOM`` event carries an application ``name`` and a free ``value``. The engine sends five
names; each has a payload class here that builds the value (:meth:`to_value`, the camelCase wire dict
that AG-UI clients and the browser page read) and parses it back strictly (:meth:`from_value`).
Readers (:class:`~hookstream.StreamProcessor`, the CLI renderers) call :func:`parse_custom`, so the
shape of each value is written down once:

=========================  ===========================================================================
``name``                   ``value``
=========================  ===========================================================================
``tool-call-repaired``     ``{"toolCallId": str, "toolName": str, "input": object | null}``
``tool-input-available``   ``{"toolCallId": str, "toolName": str, "input": object}``
``approval-requested``     ``{"toolCallId": str, "approvalId": str, "toolName": str, "input": object}``
``approval-responded``     ``{"toolCallId": str, "approvalId": str, "approved": bool}``
``loop-stopped``           ``{"stoppedBy": "max_steps" | "stop_condition", "steps": int, "maxSteps": int}``
=========================  ===========================================================================

Parsing is strict about the fields above (a missing key or a wrong JSON type raises
:class:`~hookstream.MalformedCustomEventError`) and ignores keys it does not know, so a newer sender
can add fields without breaking an older reader.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, cast

import attrs

from ._errors import MalformedCustomEventError
from ._events import BaseEvent, Custom

__all__ = [
    "ApprovalRequestedPayload",
    "ApprovalRespondedPayload",
    "CustomPayload",
    "LoopStoppedPayload",
    "ToolCallRepairedPayload",
    "ToolInputAvailablePayload",
    "parse_custom",
]

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
        """Parse a wire value; raises :class:`~hookstream.MalformedCustomEventError`."""
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
        """Parse a wire value; raises :class:`~hookstream.MalformedCustomEventError`."""
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
        """Parse a wire value; raises :class:`~hookstream.MalformedCustomEventError`."""
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
        """Parse a wire value; raises :class:`~hookstream.MalformedCustomEventError`."""
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
        """Parse a wire value; raises :class:`~hookstream.MalformedCustomEventError`."""
        f = _Fields(cls.name, value)
        stopped_by = f.str_("stoppedBy")
        if stopped_by not in _STOPPED_BY:
            raise MalformedCustomEventError(cls.name, f"'stoppedBy' is {stopped_by!r}, not one of "
                                                      + ", ".join(sorted(_STOPPED_BY)))
        return cls(cast("StoppedBy", stopped_by), f.int_("steps"), f.int_("maxSteps"))

    def to_event(self) -> Custom:
        return Custom(self.name, self.to_value())


CustomPayload: TypeAlias = (
    ToolCallRepairedPayload
    | ToolInputAvailablePayload
    | ApprovalRequestedPayload
    | ApprovalRespondedPayload
    | LoopStoppedPayload
)

_REGISTRY: dict[str, type[CustomPayload]] = {
    cls.name: cls
    for cls in (ToolCallRepairedPayload, ToolInputAvailablePayload, ApprovalRequestedPayload,
                ApprovalRespondedPayload, LoopStoppedPayload)
}


def parse_custom(event: BaseEvent) -> CustomPayload | None:
    """The typed payload of one of the engine's ``CUSTOM`` events; ``None`` for any other event (another
    ``CUSTOM`` name, or not a ``CUSTOM`` event). Raises :class:`~hookstream.MalformedCustomEventError`
    when the name is one of the engine's and the value does not have its shape."""
    if type(event) is not Custom:
        return None
    cls = _REGISTRY.get(event.name)
    return cls.from_value(event.value) if cls is not None else None
