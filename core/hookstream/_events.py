"""AG-UI 1.0 events as attrs classes, and their JSON form.

Every provider adapter, the engine and the stream processor speak these events. Field names are the
Python (snake_case) spelling of the AG-UI fields; :func:`to_json` / :func:`from_json` convert to and
from the wire form (camelCase keys, absent optional fields omitted, ``type`` discriminator), the shape
the official ``ag-ui-protocol`` models and ``@ag-ui/core`` schemas accept.

Source: AG-UI protocol 1.0, ``spec/1.0/schema.json`` (events, ``TokenUsage``, ``RunFinishedOutcome``).
Fields hookstream adds beyond the schema (``finishReason``/``rawFinishReason`` on ``RUN_FINISHED``;
``input``/``result`` on ``TOOL_CALL_END``; ``delta`` on ``STEP_FINISHED``; ``error`` on
``TOOL_CALL_RESULT``) are allowed by the protocol's open ("loose") objects and are omitted when unset.

Thread safety: event objects are plain values. They are not mutated after they are yielded, so they may
be handed between threads freely.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "PROTOCOL_VERSION",
    "BaseEvent",
    "Custom",
    "Event",
    "FinishReason",
    "Interrupt",
    "Outcome",
    "ReasoningEncryptedValue",
    "ReasoningEnd",
    "ReasoningMessageContent",
    "ReasoningMessageEnd",
    "ReasoningMessageStart",
    "ReasoningStart",
    "RunError",
    "RunFinished",
    "RunStarted",
    "StepFinished",
    "StepStarted",
    "TextMessageContent",
    "TextMessageEnd",
    "TextMessageStart",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallResult",
    "ToolCallStart",
    "Usage",
    "converter",  # noqa: F822 (module __getattr__ builds it on first use)
    "from_dict",
    "from_json",
    "sse_frame",
    "to_dict",
    "to_json",
    "to_sse",
]

log = logging.getLogger("hookstream.events")

PROTOCOL_VERSION = "1.0"

FinishReason = Literal["stop", "length", "content_filter", "tool_calls", "error"]
"""Normalised finish reason: every provider's raw value maps onto one of these."""


@attrs.define(slots=True)
class Usage:
    """Token usage of one model call or, summed, of a run (AG-UI ``TokenUsage``).

    All counts are tokens; ``None`` means the provider did not report that count.
    ``reasoning_tokens`` and ``cached_input_tokens`` are parts of output and input respectively, as
    AG-UI counts them, except where a provider reports otherwise: Gemini's ``candidatesTokenCount``
    excludes thoughts, so for ``gemini`` ``reasoning_tokens`` comes on top of ``output_tokens``.
    On the wire AG-UI carries usage as a list of ``TokenUsage`` entries; hookstream writes one entry
    and sums the entries it reads.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            if a is None:
                return b
            if b is None:
                return a
            return a + b

        return Usage(
            add(self.input_tokens, other.input_tokens),
            add(self.output_tokens, other.output_tokens),
            add(self.total_tokens, other.total_tokens),
            add(self.reasoning_tokens, other.reasoning_tokens),
            add(self.cached_input_tokens, other.cached_input_tokens),
        )


@attrs.define(slots=True)
class Interrupt:
    """Something a run waits for before it can go on (AG-UI ``Interrupt``), e.g. a tool approval."""

    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None


@attrs.define(slots=True)
class Outcome:
    """How a run ended (AG-UI ``RunFinishedOutcome``): ``success``, ``interrupt`` or ``cancelled``."""

    type: Literal["success", "interrupt", "cancelled"] = "success"
    interrupts: list[Interrupt] | None = None
    pending_tool_call_ids: list[str] | None = None


@attrs.define(slots=True)
class BaseEvent:
    """Fields every AG-UI event may carry.

    ``metadata`` holds provider metadata that must survive a round trip (Anthropic thinking signatures, Gemini
    ``thoughtSignature``, Responses reasoning item ids), keyed by provider name:
    ``{"anthropic": {"signature": "..."}}``.
    """

    type: ClassVar[str] = ""
    metadata: dict[str, Any] | None = attrs.field(default=None, kw_only=True)
    timestamp: int | None = attrs.field(default=None, kw_only=True)


@attrs.define(slots=True)
class RunStarted(BaseEvent):
    type: ClassVar[str] = "RUN_STARTED"
    thread_id: str
    run_id: str
    protocol_version: str | None = PROTOCOL_VERSION
    parent_run_id: str | None = None


@attrs.define(slots=True)
class RunFinished(BaseEvent):
    """End of a model call (adapter form) or of a whole run (engine form).

    ``finish_reason`` is normalised (:data:`FinishReason`); ``raw_finish_reason`` is the provider's own
    value (``end_turn``, ``STOP``, ``completed``...). ``usage`` is per call from an adapter and summed
    over steps from the engine.
    """

    type: ClassVar[str] = "RUN_FINISHED"
    thread_id: str
    run_id: str
    usage: Usage | None = None
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    outcome: Outcome | None = None
    result: Any = None


@attrs.define(slots=True)
class RunError(BaseEvent):
    """The run (or model call) failed. ``code`` is a stable machine-readable kind
    (``rate_limit``, ``connection_closed``, ``malformed_chunk``, a provider error type...).
    ``raw_finish_reason`` is the provider's own end state when it reported one with the error
    (OpenAI Responses ``failed``); omitted otherwise."""

    type: ClassVar[str] = "RUN_ERROR"
    message: str
    code: str | None = None
    usage: Usage | None = None
    raw_finish_reason: str | None = None


@attrs.define(slots=True)
class TextMessageStart(BaseEvent):
    type: ClassVar[str] = "TEXT_MESSAGE_START"
    message_id: str
    role: str = "assistant"


@attrs.define(slots=True)
class TextMessageContent(BaseEvent):
    type: ClassVar[str] = "TEXT_MESSAGE_CONTENT"
    message_id: str
    delta: str


@attrs.define(slots=True)
class TextMessageEnd(BaseEvent):
    type: ClassVar[str] = "TEXT_MESSAGE_END"
    message_id: str


@attrs.define(slots=True)
class ToolCallStart(BaseEvent):
    type: ClassVar[str] = "TOOL_CALL_START"
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None


@attrs.define(slots=True)
class ToolCallArgs(BaseEvent):
    type: ClassVar[str] = "TOOL_CALL_ARGS"
    tool_call_id: str
    delta: str


@attrs.define(slots=True)
class ToolCallEnd(BaseEvent):
    """End of a tool call's arguments.

    ``input`` (optional) is the complete parsed arguments object; when set it overrides what the
    ``TOOL_CALL_ARGS`` deltas parse to. ``result`` is the older TanStack form of a tool result;
    adapters never set it.
    """

    type: ClassVar[str] = "TOOL_CALL_END"
    tool_call_id: str
    input: Any = None
    result: Any = None


@attrs.define(slots=True)
class ToolCallResult(BaseEvent):
    """What a tool returned: ``content`` is text (JSON text for structured output). ``error`` is set
    when the tool failed, and then ``content`` holds the error text sent to the model."""

    type: ClassVar[str] = "TOOL_CALL_RESULT"
    message_id: str
    tool_call_id: str
    content: str
    role: str = "tool"
    error: str | None = None


@attrs.define(slots=True)
class ReasoningStart(BaseEvent):
    type: ClassVar[str] = "REASONING_START"
    message_id: str


@attrs.define(slots=True)
class ReasoningMessageStart(BaseEvent):
    type: ClassVar[str] = "REASONING_MESSAGE_START"
    message_id: str
    role: str = "reasoning"


@attrs.define(slots=True)
class ReasoningMessageContent(BaseEvent):
    type: ClassVar[str] = "REASONING_MESSAGE_CONTENT"
    message_id: str
    delta: str


@attrs.define(slots=True)
class ReasoningMessageEnd(BaseEvent):
    type: ClassVar[str] = "REASONING_MESSAGE_END"
    message_id: str


@attrs.define(slots=True)
class ReasoningEnd(BaseEvent):
    type: ClassVar[str] = "REASONING_END"
    message_id: str


@attrs.define(slots=True)
class ReasoningEncryptedValue(BaseEvent):
    """Opaque reasoning state for the provider (AG-UI 1.0); ``subtype`` is ``message`` or ``tool-call``."""

    type: ClassVar[str] = "REASONING_ENCRYPTED_VALUE"
    subtype: str
    entity_id: str
    encrypted_value: str


@attrs.define(slots=True)
class StepStarted(BaseEvent):
    type: ClassVar[str] = "STEP_STARTED"
    step_name: str


@attrs.define(slots=True)
class StepFinished(BaseEvent):
    """End of a step. ``delta`` is the older TanStack form that carried reasoning text."""

    type: ClassVar[str] = "STEP_FINISHED"
    step_name: str
    delta: str | None = None


@attrs.define(slots=True)
class Custom(BaseEvent):
    """Application event. The engine sends ``approval-requested``, ``approval-responded``,
    ``tool-input-available``, ``tool-call-repaired`` and ``loop-stopped``; their values are typed by the
    payload classes of :mod:`hookstream._custom` (read one with :func:`hookstream.parse_custom`)."""

    type: ClassVar[str] = "CUSTOM"
    name: str
    value: Any = None


Event = (
    RunStarted
    | RunFinished
    | RunError
    | TextMessageStart
    | TextMessageContent
    | TextMessageEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallResult
    | ReasoningStart
    | ReasoningMessageStart
    | ReasoningMessageContent
    | ReasoningMessageEnd
    | ReasoningEnd
    | ReasoningEncryptedValue
    | StepStarted
    | StepFinished
    | Custom
)

EVENT_TYPES: dict[str, type[BaseEvent]] = {
    cls.type: cls
    for cls in (
        RunStarted,
        RunFinished,
        RunError,
        TextMessageStart,
        TextMessageContent,
        TextMessageEnd,
        ToolCallStart,
        ToolCallArgs,
        ToolCallEnd,
        ToolCallResult,
        ReasoningStart,
        ReasoningMessageStart,
        ReasoningMessageContent,
        ReasoningMessageEnd,
        ReasoningEnd,
        ReasoningEncryptedValue,
        StepStarted,
        StepFinished,
        Custom,
    )
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _register(conv: cattrs.Converter, cls: type) -> None:
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    names: dict[str, Any] = {a.name: override(rename=_camel(a.name)) for a in attrs.fields(cls)}
    plain: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, conv, **names)

    def without_none(obj: Any) -> dict[str, Any]:
        # Absent optional fields are omitted on the wire; None inside payloads is kept.
        return {k: v for k, v in plain(obj).items() if v is not None}

    conv.register_unstructure_hook(cls, without_none)
    conv.register_structure_hook(cls, make_dict_structure_fn(cls, conv, **names))


@functools.cache
def _converter() -> cattrs.Converter:
    # Built on first use, not at import: cattrs and the generated hooks cost every start-up ~20 ms, and
    # most processes (a CLI call, a plain chat) never convert an event to or from JSON.
    import cattrs

    conv = cattrs.Converter()
    # ``metadata`` and free-form payloads (``value``, ``input``, ``result``) are JSON values already.
    conv.register_unstructure_hook(Any, lambda v: v)
    _register(conv, Usage)
    usage_plain = conv.get_unstructure_hook(Usage)
    usage_struct = conv.get_structure_hook(Usage)

    def usage_to_wire(u: Usage | None) -> list[dict[str, Any]] | None:
        # AG-UI 1.0 carries usage as a list of TokenUsage entries (one per provider/model).
        return None if u is None else [usage_plain(u)]

    def usage_from_wire(data: Any, _: Any) -> Usage | None:
        if data is None:
            return None
        total = Usage()
        for entry in data if isinstance(data, list) else [data]:
            total = total + usage_struct(entry, Usage)
        return total

    conv.register_unstructure_hook(Usage | None, usage_to_wire)
    conv.register_structure_hook(Usage | None, usage_from_wire)
    for cls in (Interrupt, Outcome, *EVENT_TYPES.values()):
        _register(conv, cls)
    return conv


def __getattr__(name: str) -> Any:
    # ``converter``: the cattrs converter between these classes and AG-UI JSON dicts (camelCase, unset
    # optionals omitted), built on first use (PEP 562).
    if name == "converter":
        return _converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_UNSTRUCTURE: dict[type, Callable[[Any], dict[str, Any]]] = {}


def to_dict(event: BaseEvent) -> dict[str, Any]:
    """The AG-UI JSON object of ``event``: ``{"type": "TEXT_MESSAGE_CONTENT", "messageId": ..., ...}``.

    Fields left at their default (``None`` for optionals) are omitted, as the protocol's schemas expect.
    """
    cls = type(event)
    fn = _UNSTRUCTURE.get(cls)
    if fn is None:
        fn = _UNSTRUCTURE[cls] = _converter().get_unstructure_hook(cls)
    body = fn(event)
    return {"type": cls.type, **body}


def to_json(event: BaseEvent) -> str:
    """``to_dict`` as compact JSON text (one line, UTF-8 safe, no ASCII escaping)."""
    return json.dumps(to_dict(event), ensure_ascii=False, separators=(",", ":"))


def from_dict(data: dict[str, Any]) -> BaseEvent:
    """Build an event from an AG-UI JSON object.

    Raises :class:`ValueError` for an unknown ``type`` and :class:`cattrs.BaseValidationError` when a
    required field is missing. Unknown keys are ignored (AG-UI objects are open).
    """
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown AG-UI event type {kind!r}")
    body = {k: v for k, v in data.items() if k != "type"}
    return _converter().structure(body, cls)


def from_json(text: str | bytes) -> BaseEvent:
    """:func:`from_dict` of one JSON document. Raises :class:`ValueError` on invalid JSON."""
    return from_dict(json.loads(text))


def sse_frame(event: BaseEvent) -> bytes:
    """One event as an SSE frame: ``b"data: {json}\\n\\n"`` (JSON on one line, UTF-8)."""
    return b"data: " + to_json(event).encode("utf-8") + b"\n\n"


def to_sse(events: Iterable[BaseEvent]) -> Generator[bytes, None, None]:
    """Frame ``events`` as AG-UI SSE, one ``bytes`` frame per event, as each is produced.

    If the event source raises before its terminal event, a ``RUN_ERROR`` frame (code
    ``internal_error``) ends the stream instead of a broken connection; frames already sent stand.
    """
    terminal = False
    try:
        for ev in events:
            terminal = isinstance(ev, (RunFinished, RunError))
            yield sse_frame(ev)
    except Exception as exc:  # a bug below must still end the AG-UI run cleanly for the client
        log.exception("event source failed mid-stream")
        if not terminal:
            yield sse_frame(RunError(f"{type(exc).__name__}: {exc}", code="internal_error"))
