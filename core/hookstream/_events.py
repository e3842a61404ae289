"""AG-UI 1.0 events as attrs classes, and their JSON form.

Every provider adapter, the engine and the stream processor speak these events. Field names are the
Python (snake_case) spelling of the AG-UI fields; :func:`to_json` / :func:`from_json` convert to and
from the wire form (camelCase keys, absent optional fields omitted, ``type`` discriminator), the shape
the official ``ag-ui-protocol`` models and ``@ag-ui/core`` schemas accept.

Source: AG-UI protocol 1.0, ``spec/1.0/schema.json`` (events, ``TokenUsage``, ``RunFinishedOutcome``,
``Message``), as the ``ag-ui-protocol`` Python package (``ag_ui.core.events``) generates it: every one of
its event types has a class here (``EVENT_TYPES``), including the ones hookstream's engine never emits but
other AG-UI servers do (``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK``, ``REASONING_MESSAGE_CHUNK``,
``MESSAGES_SNAPSHOT`` with :class:`AGUIMessage` entries, ``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA``,
``SUBAGENT_STARTED``/``FINISHED``/``ERROR``). The deprecated ``THINKING_*`` events left the protocol in 1.0
and are not read. Every event carries ``rawEvent`` and, except the run-scoped ones, ``subagentRunId``
(:class:`Attributable`).
Fields hookstream adds beyond the schema (``finishReason``/``rawFinishReason``/``responseId``/``model`` on
``RUN_FINISHED``; ``input``/``result`` on ``TOOL_CALL_END``; ``delta``, ``responseId``, ``model``,
``usage`` and ``finishReason`` on ``STEP_FINISHED``; ``error`` and ``files`` on ``TOOL_CALL_RESULT``; ``cost`` in a
``usage`` entry) are allowed by the protocol's open ("loose") objects and are omitted when unset.

Thread safety: event objects are plain values. They are not mutated after they are yielded, so they may
be handed between threads freely.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Generator, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "MESSAGE_ROLES",
    "PROTOCOL_VERSION",
    "AGUIFunctionCall",
    "AGUIMessage",
    "AGUIToolCall",
    "ActivityDelta",
    "ActivitySnapshot",
    "Attributable",
    "BaseEvent",
    "Cost",
    "Custom",
    "Event",
    "FinishReason",
    "Interrupt",
    "MessagesSnapshot",
    "Outcome",
    "Raw",
    "ReasoningEncryptedValue",
    "ReasoningEnd",
    "ReasoningMessageChunk",
    "ReasoningMessageContent",
    "ReasoningMessageEnd",
    "ReasoningMessageStart",
    "ReasoningStart",
    "RunError",
    "RunFinished",
    "RunStarted",
    "StateDelta",
    "StateSnapshot",
    "StepFinished",
    "StepStarted",
    "SubagentError",
    "SubagentFinished",
    "SubagentStarted",
    "TextMessageChunk",
    "TextMessageContent",
    "TextMessageEnd",
    "TextMessageStart",
    "ToolCallArgs",
    "ToolCallChunk",
    "ToolCallEnd",
    "ToolCallResult",
    "ToolCallStart",
    "Usage",
    "converter",  # noqa: F822 (module __getattr__ builds it on first use)
    "from_dict",
    "from_json",
    "parse_arguments",
    "sse_frame",
    "to_dict",
    "to_json",
    "to_sse",
]

log = logging.getLogger("hookstream.events")

PROTOCOL_VERSION = "1.0"

FinishReason = Literal["stop", "length", "content_filter", "tool_calls", "error"]
"""Normalised finish reason: every provider's raw value maps onto one of these."""


def _decimal(value: Decimal | float | int | str) -> Decimal:
    # A float goes through its shortest repr: Decimal(0.1) would keep the binary fraction's 55 digits.
    return value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)


@attrs.frozen
class Cost:
    """What a model call, or summed a run, cost: ``amount`` in ``currency`` (ISO 4217, ``"USD"`` for
    every price hookstream computes) and ``source``, where the price came from (``"genai-prices 0.2.3
    (bundled data)"``). ``amount`` is a :class:`~decimal.Decimal` (floats and strings are converted),
    so summing many small costs loses nothing; the JSON forms write it as a number.
    ``str(cost)`` is ``"0.000435 USD"``.
    """

    amount: Decimal = attrs.field(converter=_decimal)
    currency: str = "USD"
    source: str | None = None

    def __str__(self) -> str:
        return f"{self.amount:f} {self.currency}"


def _add_costs(a: Cost | None, b: Cost | None) -> Cost | None:
    # Both known in one currency: their sum. Anything else is not known (see Usage.__add__).
    if a is None or b is None or a.currency != b.currency:
        return None
    source = a.source if a.source == b.source else "; ".join(sorted({s for s in (a.source, b.source) if s}))
    return Cost(a.amount + b.amount, a.currency, source or None)


@attrs.define(slots=True)
class Usage:
    """Token usage of one model call or, summed, of a run (AG-UI ``TokenUsage``).

    All counts are tokens; ``None`` means the provider did not report that count.
    ``reasoning_tokens`` is part of output; ``cached_input_tokens`` (read from the provider's prompt
    cache) and ``cache_write_tokens`` (written to it: Anthropic ``cache_creation_input_tokens``; AG-UI
    ``cacheWriteInputTokens`` on the wire) are parts of input, as AG-UI ``TokenUsage`` counts them,
    except where a provider reports otherwise: Gemini's ``candidatesTokenCount`` excludes thoughts, so
    for ``gemini`` ``reasoning_tokens`` comes on top of ``output_tokens``.
    On the wire AG-UI carries usage as a list of ``TokenUsage`` entries; hookstream writes one entry
    and sums the entries it reads.

    ``cost`` is what the tokens cost (:class:`Cost`), computed by the engine for each step from the
    provider, the model and these counts (``hookstream[prices]``, genai-prices); ``None`` when it is
    not known (the price package is not installed, the model is not in it, a local model). On the
    wire it is the extra key ``cost`` of the usage entry, ``{"amount", "currency", "source"}``
    (``TokenUsage`` is an open object). A sum has a cost only when every non-empty part has one, in
    one currency: a run with one step of unknown price has an unknown cost, not a partial one.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: Cost | None = None

    @property
    def empty(self) -> bool:
        """No count and no cost: the start of a sum (``Usage()``)."""
        return self.cost is None and all(v is None for v in (
            self.input_tokens, self.output_tokens, self.total_tokens, self.reasoning_tokens,
            self.cached_input_tokens, self.cache_write_tokens))

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
            add(self.cache_write_tokens, other.cache_write_tokens),
            other.cost if self.empty else self.cost if other.empty else _add_costs(self.cost, other.cost),
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
    ``{"anthropic": {"signature": "..."}}``. ``raw_event`` (wire ``rawEvent``) is the provider-native
    event this one was translated from, any JSON value (hookstream's adapters leave it unset and use
    ``RAW`` events instead); ``timestamp`` is milliseconds since the epoch when set.
    """

    type: ClassVar[str] = ""
    metadata: dict[str, Any] | None = attrs.field(default=None, kw_only=True)
    timestamp: int | None = attrs.field(default=None, kw_only=True)
    raw_event: Any = attrs.field(default=None, kw_only=True)


@attrs.define(slots=True)
class Attributable(BaseEvent):
    """An event that may belong to a subagent's work (AG-UI ``Attributable``): every event except the
    run-scoped ``RUN_*`` and ``MESSAGES_SNAPSHOT`` (and ``SUBAGENT_*``, which name the subagent
    themselves). ``subagent_run_id`` (wire ``subagentRunId``) is the subagent invocation that produced it;
    ``None`` means the agent itself did."""

    subagent_run_id: str | None = attrs.field(default=None, kw_only=True)


@attrs.define(slots=True)
class RunStarted(BaseEvent):
    type: ClassVar[str] = "RUN_STARTED"
    thread_id: str
    run_id: str
    protocol_version: str | None = PROTOCOL_VERSION
    parent_run_id: str | None = None
    input: dict[str, Any] | None = None


@attrs.define(slots=True)
class RunFinished(BaseEvent):
    """End of a model call (adapter form) or of a whole run (engine form).

    ``finish_reason`` is normalised (:data:`FinishReason`); ``raw_finish_reason`` is the provider's own
    value (``end_turn``, ``STOP``, ``completed``...). ``usage`` is per call from an adapter and summed
    over steps from the engine. ``response_id`` (wire ``responseId``) and ``model`` are the provider's
    response id and the model version that answered, set by adapters (adapter form only; the engine
    moves them to the step's ``STEP_FINISHED``).
    """

    type: ClassVar[str] = "RUN_FINISHED"
    thread_id: str
    run_id: str
    usage: Usage | None = None
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    outcome: Outcome | None = None
    result: Any = None
    response_id: str | None = None
    model: str | None = None


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
class TextMessageStart(Attributable):
    """Opens a streamed text message. ``role`` is ``assistant`` (default), ``user``, ``system`` or
    ``developer`` (AG-UI ``TextMessageRole``); ``name`` an optional display name of the author."""

    type: ClassVar[str] = "TEXT_MESSAGE_START"
    message_id: str
    role: str = "assistant"
    name: str | None = None


@attrs.define(slots=True)
class TextMessageContent(Attributable):
    type: ClassVar[str] = "TEXT_MESSAGE_CONTENT"
    message_id: str
    delta: str


@attrs.define(slots=True)
class TextMessageEnd(Attributable):
    type: ClassVar[str] = "TEXT_MESSAGE_END"
    message_id: str


@attrs.define(slots=True)
class ToolCallStart(Attributable):
    type: ClassVar[str] = "TOOL_CALL_START"
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None


@attrs.define(slots=True)
class ToolCallArgs(Attributable):
    type: ClassVar[str] = "TOOL_CALL_ARGS"
    tool_call_id: str
    delta: str


@attrs.define(slots=True)
class ToolCallEnd(Attributable):
    """End of a tool call's arguments.

    ``input`` (optional) is the complete parsed arguments object, sent by an adapter whose provider
    gives the arguments whole rather than as streamed text (Gemini); when set it overrides what the
    ``TOOL_CALL_ARGS`` deltas parse to. ``result`` is the older TanStack form of a tool result;
    adapters never set it.

    ``arguments`` (not a wire field) is the call's complete argument text, its ``TOOL_CALL_ARGS``
    deltas joined. The engine sets it on the ``TOOL_CALL_END`` it yields, to the very string its
    step result keeps as ``ToolCallPart.arguments_raw``, so a consumer in the same process (the
    :class:`~hookstream.StreamProcessor`) can keep that string instead of its own copy: the
    arguments of a tool call that writes a large file are then held once, not once per consumer.
    On the wire (:func:`to_dict`), an event without ``input`` whose ``arguments`` parse to a JSON object
    carries that object as ``input``, so AG-UI clients get every call's arguments object.
    """

    type: ClassVar[str] = "TOOL_CALL_END"
    tool_call_id: str
    input: Any = None
    result: Any = None
    # Derived from the deltas (their join): left out of equality and repr, where megabytes would hide the
    # rest, and of the wire form, where the deltas already carried it.
    arguments: str | None = attrs.field(default=None, eq=False, repr=False, metadata={"wire": False})


@attrs.define(slots=True)
class ToolCallResult(Attributable):
    """What a tool returned: ``content`` is text (JSON text for structured output). ``error`` is set
    when the tool failed, and then ``content`` holds the error text sent to the model. ``files`` (a
    hookstream addition) lists the files the tool returned, each in the ``file`` CUSTOM value shape
    ``{"mediaType", "data" (base64) | "url", "filename"?}``; omitted when there are none."""

    type: ClassVar[str] = "TOOL_CALL_RESULT"
    message_id: str
    tool_call_id: str
    content: str
    role: str = "tool"
    error: str | None = None
    files: list[dict[str, Any]] | None = None


@attrs.define(slots=True)
class ReasoningStart(Attributable):
    type: ClassVar[str] = "REASONING_START"
    message_id: str


@attrs.define(slots=True)
class ReasoningMessageStart(Attributable):
    type: ClassVar[str] = "REASONING_MESSAGE_START"
    message_id: str
    role: str = "reasoning"


@attrs.define(slots=True)
class ReasoningMessageContent(Attributable):
    type: ClassVar[str] = "REASONING_MESSAGE_CONTENT"
    message_id: str
    delta: str


@attrs.define(slots=True)
class ReasoningMessageEnd(Attributable):
    type: ClassVar[str] = "REASONING_MESSAGE_END"
    message_id: str


@attrs.define(slots=True)
class ReasoningEnd(Attributable):
    type: ClassVar[str] = "REASONING_END"
    message_id: str


@attrs.define(slots=True)
class ReasoningEncryptedValue(Attributable):
    """Opaque reasoning state for the provider (AG-UI 1.0); ``subtype`` is ``message`` or ``tool-call``."""

    type: ClassVar[str] = "REASONING_ENCRYPTED_VALUE"
    subtype: str
    entity_id: str
    encrypted_value: str


@attrs.define(slots=True)
class StepStarted(Attributable):
    type: ClassVar[str] = "STEP_STARTED"
    step_name: str


@attrs.define(slots=True)
class StepFinished(Attributable):
    """End of a step. ``delta`` is the older TanStack form that carried reasoning text.

    The engine adds what the step's model call reported (AG-UI objects are open; each is omitted when
    unknown): ``response_id`` (wire ``responseId``: the provider's response id, e.g. ``chatcmpl-...``,
    ``resp_...``, ``msg_...``), ``model`` (the model version that answered, e.g.
    ``gpt-4o-2024-08-06``), ``usage`` (the step's token counts) and ``finish_reason`` (normalised).
    """

    type: ClassVar[str] = "STEP_FINISHED"
    step_name: str
    delta: str | None = None
    response_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None


@attrs.define(slots=True)
class StateSnapshot(Attributable):
    """The agent state as a whole (AG-UI ``STATE_SNAPSHOT``): ``snapshot`` is any JSON value."""

    type: ClassVar[str] = "STATE_SNAPSHOT"
    snapshot: Any = None


@attrs.define(slots=True)
class StateDelta(Attributable):
    """A change of the agent state (AG-UI ``STATE_DELTA``): ``delta`` is a list of JSON Patch
    operations (RFC 6902, ``{"op", "path", "value"}``). The engine sends ``add`` operations under
    ``/output`` while a structured output streams (see :mod:`hookstream._agentloop.partial_output`)."""

    type: ClassVar[str] = "STATE_DELTA"
    delta: list[Any] = attrs.Factory(list)


@attrs.define(slots=True)
class Custom(Attributable):
    """Application event. The engine sends ``approval-requested``, ``approval-responded``,
    ``tool-input-available``, ``tool-call-repaired`` and ``loop-stopped``; their values are typed by the
    payload classes of :mod:`hookstream._custom` (read one with :func:`hookstream.events.parse_custom`)."""

    type: ClassVar[str] = "CUSTOM"
    name: str
    value: Any = None


@attrs.define(slots=True)
class Raw(Attributable):
    """A provider event the adapter did not understand, passed on as it arrived (AG-UI ``RAW``).

    ``event`` is the provider's event as a JSON value (the parsed SSE ``data``); ``source`` names the
    provider (``openai``, ``openai-responses``...). Adapters emit one for every event they do not map
    (:meth:`~hookstream.plugin.StreamBuilder.raw`); the engine counts them
    (:attr:`~hookstream.StepResult.unknown_events`) and forwards them only with
    ``LoopSettings(include_raw=True)``.
    """

    type: ClassVar[str] = "RAW"
    event: Any
    source: str | None = None



# -- AG-UI 1.0 events for other producers: chunk shorthands, snapshots, activities, subagents ----------


@attrs.define(slots=True)
class TextMessageChunk(Attributable):
    """Shorthand for ``TEXT_MESSAGE_START``/``CONTENT``/``END`` (AG-UI ``TEXT_MESSAGE_CHUNK``), for
    producers that do not know where a message begins. Every field is optional: a chunk with a new
    ``message_id`` opens a message (``role``, default ``assistant``, and ``name`` apply then), a chunk
    without one continues the open message, ``delta`` (may be ``""``) is appended. The message closes when
    any other message, tool call, reasoning or lifecycle event arrives, or the stream ends (AG-UI
    "Chunk events"; ``@ag-ui/client`` ``transformChunks``)."""

    type: ClassVar[str] = "TEXT_MESSAGE_CHUNK"
    message_id: str | None = None
    role: str | None = None
    delta: str | None = None
    name: str | None = None


@attrs.define(slots=True)
class ToolCallChunk(Attributable):
    """Shorthand for ``TOOL_CALL_START``/``ARGS``/``END`` (AG-UI ``TOOL_CALL_CHUNK``): the first chunk of
    a call carries ``tool_call_id`` and ``tool_call_name`` (and optionally ``parent_message_id``); later
    chunks carry argument text in ``delta``. Closed like :class:`TextMessageChunk`."""

    type: ClassVar[str] = "TOOL_CALL_CHUNK"
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    parent_message_id: str | None = None
    delta: str | None = None


@attrs.define(slots=True)
class ReasoningMessageChunk(Attributable):
    """Shorthand for ``REASONING_MESSAGE_START``/``CONTENT``/``END`` (AG-UI
    ``REASONING_MESSAGE_CHUNK``); closed like :class:`TextMessageChunk`."""

    type: ClassVar[str] = "REASONING_MESSAGE_CHUNK"
    message_id: str | None = None
    delta: str | None = None


@attrs.define(slots=True)
class AGUIFunctionCall:
    """AG-UI ``FunctionCall``: the tool's ``name`` and its ``arguments`` as JSON *text*."""

    name: str
    arguments: str


@attrs.define(slots=True)
class AGUIToolCall:
    """AG-UI ``ToolCall`` of an assistant message: ``{"id", "type": "function", "function": {"name",
    "arguments"}, "encryptedValue"?, "metadata"?}``."""

    id: str
    function: AGUIFunctionCall
    type: str = "function"
    encrypted_value: str | None = None
    metadata: dict[str, Any] | None = None


@attrs.define(slots=True)
class AGUIMessage:
    """One AG-UI ``Message`` (a ``MESSAGES_SNAPSHOT`` entry), discriminated by ``role``:

    * ``user``: ``content`` is text or a list of AG-UI input parts (``{"type": "text", "text"}``,
      ``{"type": "image" | "audio" | "video" | "document", "source": {"type": "data", "value",
      "mimeType"} | {"type": "url", "value", "mimeType"?}}``), kept as JSON values;
    * ``system`` / ``developer``: ``content`` text (required);
    * ``assistant``: ``content`` text or ``None``, ``tool_calls`` (:class:`AGUIToolCall`) or ``None``;
    * ``tool``: ``content`` (text or parts), ``tool_call_id`` (required), ``error``;
    * ``activity``: ``activity_type`` and ``content`` (a JSON object);
    * ``reasoning``: ``content`` text, ``encrypted_value``.

    ``name`` (user, assistant, system, developer), ``encrypted_value``, ``metadata`` and
    ``subagent_run_id`` are optional on all of them (AG-UI ``BaseMessage``). Fields a role does not
    have stay ``None`` and are omitted on the wire.
    """

    id: str
    role: str
    content: Any = None
    name: str | None = None
    tool_calls: list[AGUIToolCall] | None = None
    tool_call_id: str | None = None
    error: str | None = None
    activity_type: str | None = None
    encrypted_value: str | None = None
    metadata: dict[str, Any] | None = None
    subagent_run_id: str | None = None


MESSAGE_ROLES = ("developer", "system", "assistant", "user", "tool", "activity", "reasoning")
"""AG-UI 1.0 ``Role``: every role a message of a ``MESSAGES_SNAPSHOT`` may have."""


@attrs.define(slots=True)
class MessagesSnapshot(BaseEvent):
    """The conversation as the producer holds it (AG-UI ``MESSAGES_SNAPSHOT``): ``messages`` in order.
    Run-scoped: it carries no ``subagentRunId``. How a consumer reconciles it with messages of its own
    is behavioural (see :class:`~hookstream.StreamProcessor`)."""

    type: ClassVar[str] = "MESSAGES_SNAPSHOT"
    messages: list[AGUIMessage] = attrs.Factory(list)


@attrs.define(slots=True)
class ActivitySnapshot(Attributable):
    """Structured progress that is not conversation content (AG-UI ``ACTIVITY_SNAPSHOT``), kept as the
    activity message ``message_id``: ``activity_type`` (open string), ``content`` (a JSON object).
    ``replace`` ``None`` or ``True`` overwrites the activity's content; ``False`` leaves an existing
    activity as it is."""

    type: ClassVar[str] = "ACTIVITY_SNAPSHOT"
    message_id: str
    activity_type: str
    content: dict[str, Any] = attrs.Factory(dict)
    replace: bool | None = None


@attrs.define(slots=True)
class ActivityDelta(Attributable):
    """A change of an activity message's content (AG-UI ``ACTIVITY_DELTA``): ``patch`` is a list of
    JSON Patch operations (RFC 6902) against the content."""

    type: ClassVar[str] = "ACTIVITY_DELTA"
    message_id: str
    activity_type: str
    patch: list[Any] = attrs.Factory(list)


@attrs.define(slots=True)
class SubagentStarted(BaseEvent):
    """A subagent invocation began (AG-UI ``SUBAGENT_STARTED``). ``subagent_run_id`` identifies the
    invocation (later events carry it as their ``subagent_run_id``), ``name`` the subagent."""

    type: ClassVar[str] = "SUBAGENT_STARTED"
    subagent_run_id: str
    name: str
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None


@attrs.define(slots=True)
class SubagentFinished(BaseEvent):
    """A subagent invocation's segment of the run ended (AG-UI ``SUBAGENT_FINISHED``). ``outcome`` is
    the JSON object ``{"type": "success"}`` or ``{"type": "suspended", "interruptIds"?: [...]}``,
    ``None`` meaning success; ``result`` any JSON value."""

    type: ClassVar[str] = "SUBAGENT_FINISHED"
    subagent_run_id: str
    result: Any = None
    outcome: dict[str, Any] | None = None


@attrs.define(slots=True)
class SubagentError(BaseEvent):
    """A subagent invocation failed (AG-UI ``SUBAGENT_ERROR``); the run may go on."""

    type: ClassVar[str] = "SUBAGENT_ERROR"
    subagent_run_id: str
    message: str
    code: str | None = None


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
    | StateSnapshot
    | StateDelta
    | Custom
    | Raw
    | TextMessageChunk
    | ToolCallChunk
    | ReasoningMessageChunk
    | MessagesSnapshot
    | ActivitySnapshot
    | ActivityDelta
    | SubagentStarted
    | SubagentFinished
    | SubagentError
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
        StateSnapshot,
        StateDelta,
        Custom,
        Raw,
        TextMessageChunk,
        ToolCallChunk,
        ReasoningMessageChunk,
        MessagesSnapshot,
        ActivitySnapshot,
        ActivityDelta,
        SubagentStarted,
        SubagentFinished,
        SubagentError,
    )
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool arguments text to a JSON object: ``""`` means ``{}``; anything not an object is ``None``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# What each AG-UI message role requires besides ``id`` (spec/1.0/schema.json ``Message``).
_ROLE_REQUIRES: dict[str, tuple[str, ...]] = {
    "developer": ("content",),
    "system": ("content",),
    "user": ("content",),
    "tool": ("content", "toolCallId"),
    "activity": ("activityType", "content"),
    "reasoning": ("content",),
}

# Wire names that are not the camelCase of the Python name: AG-UI ``TokenUsage.cacheWriteInputTokens``.
_WIRE_NAMES = {"cache_write_tokens": "cacheWriteInputTokens"}


def _register(conv: cattrs.Converter, cls: type) -> None:
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    # A field marked ``metadata={"wire": False}`` exists only between objects in one process.
    names: dict[str, Any] = {a.name: override(rename=_WIRE_NAMES.get(a.name) or _camel(a.name))
                             if a.metadata.get("wire", True) else override(omit=True)
                             for a in attrs.fields(cls)}
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
    conv.register_unstructure_hook(Cost, _cost_to_wire)
    conv.register_structure_hook(Cost | None, lambda d, t: None if d is None else _cost_from_wire(d, t))
    _register_usage(conv)
    for cls in (Interrupt, Outcome, AGUIFunctionCall, AGUIToolCall, AGUIMessage):
        _register(conv, cls)
    _register_message_check(conv)
    for event_cls in EVENT_TYPES.values():  # after the message hook: MESSAGES_SNAPSHOT's hook is built with it
        _register(conv, event_cls)
    _register_tool_call_end(conv)
    return conv


def _cost_to_wire(c: Cost) -> dict[str, Any]:
    out: dict[str, Any] = {"amount": float(c.amount), "currency": c.currency}
    if c.source is not None:
        out["source"] = c.source
    return out


def _cost_from_wire(data: Any, _: Any) -> Cost | None:
    # Another AG-UI server may write its own "cost" in a usage entry: one hookstream cannot read is
    # left out (unknown), it does not make the whole event unreadable.
    amount = data.get("amount") if isinstance(data, dict) else None
    if isinstance(amount, bool) or not isinstance(amount, int | float | str):
        return None
    source = data.get("source")
    try:
        return Cost(amount, str(data.get("currency") or "USD"), source if isinstance(source, str) else None)
    except ArithmeticError:  # decimal.InvalidOperation: not a number
        return None


def _register_usage(conv: cattrs.Converter) -> None:
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


_PARTS_ROLES = frozenset({"user", "assistant", "system", "developer"})


def _ui_tool_call(part: dict[str, Any]) -> dict[str, Any] | None:
    """An AG-UI tool call from a TanStack AI ``tool-call`` part (``id``, ``name``, ``arguments`` text) or an
    AI SDK ``tool-NAME`` / ``dynamic-tool`` part (``toolCallId``, ``input`` object); ``None`` for others."""
    kind = part.get("type")
    if kind == "tool-call":
        call_id, name, arguments = part.get("id"), part.get("name"), part.get("arguments")
    elif isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool") and "toolCallId" in part:
        call_id = part.get("toolCallId")
        name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-"):]
        arguments = json.dumps(part.get("input") if part.get("input") is not None else {})
    else:
        return None
    if not (isinstance(call_id, str) and isinstance(name, str)):
        return None
    text = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _from_ui_parts(data: dict[str, Any]) -> dict[str, Any]:
    """A UI message (TanStack AI and AI SDK ``UIMessage``: ``parts`` instead of ``content``), as some AG-UI
    servers put in a ``MESSAGES_SNAPSHOT``, read as the AG-UI message it stands for: its text parts
    (``content`` in TanStack AI, ``text`` in the AI SDK) joined as ``content``, its tool-call parts as
    ``toolCalls``. Results inside an assistant message's parts have no AG-UI place in that message and
    are left out (a ``tool`` message carries them)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in data["parts"]:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            value = part.get("content", part.get("text"))
            if isinstance(value, str):
                texts.append(value)
            continue
        call = _ui_tool_call(part)
        if call is not None:
            calls.append(call)
    out = {k: v for k, v in data.items() if k != "parts"}
    out["content"] = "".join(texts) if texts or data.get("role") != "assistant" else None
    if calls and data.get("role") == "assistant" and not out.get("toolCalls"):
        out["toolCalls"] = calls
    return out


def _register_message_check(conv: cattrs.Converter) -> None:
    message_struct = conv.get_structure_hook(AGUIMessage)

    def message_from_wire(data: Any, _: Any) -> AGUIMessage:
        # AG-UI ``Message`` is a union discriminated by ``role``; check what each role requires.
        if not isinstance(data, dict):
            raise ValueError(f"an AG-UI message is a JSON object, not {type(data).__name__}")
        role = data.get("role")
        if role not in MESSAGE_ROLES:
            raise ValueError(f"unknown AG-UI message role {role!r}")
        if data.get("content") is None and isinstance(data.get("parts"), list) and role in _PARTS_ROLES:
            data = _from_ui_parts(data)
        required = _ROLE_REQUIRES.get(role, ())
        missing = [k for k in required if data.get(k) is None]
        if missing:
            raise ValueError(f"AG-UI {role} message {data.get('id')!r} lacks {', '.join(missing)}")
        message: AGUIMessage = message_struct(data, AGUIMessage)
        return message

    conv.register_structure_hook(AGUIMessage, message_from_wire)


def _register_tool_call_end(conv: cattrs.Converter) -> None:
    end_plain = conv.get_unstructure_hook(ToolCallEnd)

    def end_to_wire(event: ToolCallEnd) -> dict[str, Any]:
        # Adapters leave ``input`` unset for arguments that streamed as text (consumers parse that text
        # once, for themselves); on the wire every call whose text is known still carries the object.
        body: dict[str, Any] = end_plain(event)
        if "input" not in body and event.arguments is not None:
            value = parse_arguments(event.arguments)
            if value is not None:
                body["input"] = value
        return body

    conv.register_unstructure_hook(ToolCallEnd, end_to_wire)


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
