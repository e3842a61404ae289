"""AG-UI events: what :func:`hookstream.chat` yields and :class:`hookstream.StreamProcessor` reads.

The event classes follow the AG-UI 1.0 protocol (https://docs.ag-ui.com/concepts/events; field names are
snake_case here, camelCase on the wire), plus hookstream's ``SUBAGENT_*`` events for an agent used as a tool.
hookstream's own runs send the expanded forms; the ``*_CHUNK`` convenience events, ``ACTIVITY_*`` and
``MESSAGES_SNAPSHOT`` (with :class:`AGUIMessage`, whose roles are :data:`MESSAGE_ROLES`) come from other
AG-UI servers and are read by :class:`hookstream.StreamProcessor`.
:func:`to_json` / :func:`from_json` convert one event to and from its wire JSON text, :func:`to_dict` /
:func:`from_dict` to and from the decoded JSON object, and :func:`to_sse` frames a stream of events as
AG-UI SSE (one ``bytes`` frame per event, for an HTTP response). ``CUSTOM`` events the agent loop sends
(``approval-requested``, ``loop-stopped``...) have typed payloads; :func:`parse_custom` reads one (raises
:class:`hookstream.errors.MalformedCustomEventError` for a known name with a wrong shape).

Names load on first use (PEP 562). Events are immutable (attrs, frozen): safe to share between threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._custom import (
        ApprovalRequestedPayload,
        ApprovalRespondedPayload,
        CustomPayload,
        FilePayload,
        LoopStoppedPayload,
        MessageAddedPayload,
        SourcePayload,
        ToolCallRepairedPayload,
        ToolCallsUnansweredPayload,
        ToolInputAvailablePayload,
        parse_custom,
    )
    from ._events import (
        MESSAGE_ROLES,
        PROTOCOL_VERSION,
        ActivityDelta,
        ActivitySnapshot,
        AGUIFunctionCall,
        AGUIMessage,
        AGUIToolCall,
        BaseEvent,
        Cost,
        Custom,
        Event,
        FinishReason,
        Interrupt,
        MessagesSnapshot,
        Outcome,
        Raw,
        ReasoningEncryptedValue,
        ReasoningEnd,
        ReasoningMessageChunk,
        ReasoningMessageContent,
        ReasoningMessageEnd,
        ReasoningMessageStart,
        ReasoningStart,
        RunError,
        RunFinished,
        RunStarted,
        StateDelta,
        StateSnapshot,
        StepFinished,
        StepStarted,
        SubagentError,
        SubagentFinished,
        SubagentStarted,
        TextMessageChunk,
        TextMessageContent,
        TextMessageEnd,
        TextMessageStart,
        ToolCallArgs,
        ToolCallChunk,
        ToolCallEnd,
        ToolCallResult,
        ToolCallStart,
        Usage,
        from_dict,
        from_json,
        to_dict,
        to_json,
        to_sse,
    )

_PAYLOADS = ("ApprovalRequestedPayload", "ApprovalRespondedPayload", "CustomPayload", "FilePayload",
             "LoopStoppedPayload", "MessageAddedPayload", "SourcePayload", "ToolCallRepairedPayload",
             "ToolCallsUnansweredPayload", "ToolInputAvailablePayload", "parse_custom")

__all__ = [
    "MESSAGE_ROLES",
    "PROTOCOL_VERSION",
    "AGUIFunctionCall",
    "AGUIMessage",
    "AGUIToolCall",
    "ActivityDelta",
    "ActivitySnapshot",
    "ApprovalRequestedPayload",
    "ApprovalRespondedPayload",
    "BaseEvent",
    "Cost",
    "Custom",
    "CustomPayload",
    "Event",
    "FilePayload",
    "FinishReason",
    "Interrupt",
    "LoopStoppedPayload",
    "MessageAddedPayload",
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
    "SourcePayload",
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
    "ToolCallRepairedPayload",
    "ToolCallResult",
    "ToolCallStart",
    "ToolCallsUnansweredPayload",
    "ToolInputAvailablePayload",
    "Usage",
    "from_dict",
    "from_json",
    "parse_custom",
    "to_dict",
    "to_json",
    "to_sse",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    name: "hookstream._custom" if name in _PAYLOADS else "hookstream._events" for name in __all__
})
