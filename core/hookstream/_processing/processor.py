"""StreamProcessor: AG-UI events in, :class:`~hookstream.UIMessage` list out; the single owner of
UI state.

Follows TanStack AI's chat-stream ``StreamProcessor`` (``@tanstack/ai``
``activities/chat/stream/processor.ts`` and its architecture document), with these rules:

* One assistant message per agent loop, created lazily with its first part (a run with no content
  leaves no empty message). It takes every step of the loop, in both stream forms: the adapters'
  per-call form (``RUN_STARTED … RUN_FINISHED`` per model call) and the engine's single run
  (``STEP_STARTED``/``STEP_FINISHED`` per call, ``TOOL_CALL_RESULT`` and ``CUSTOM`` inside, one
  ``RUN_FINISHED``). :meth:`StreamProcessor.finalize` ends it; the next event starts a new one.
* Messages are kept apart by AG-UI ``messageId`` (AG-UI 1.0 "Messages", ``@ag-ui/client``
  ``defaultApplyEvents``). Every id maps to exactly one UI message: content (or a start) for an id
  already seen, or for a message already in :attr:`StreamProcessor.messages` (given at construction, from
  a snapshot, from an earlier loop), continues that message, adding to its last text part when it ends
  with one, so a reconnect that resumes or replays a message never duplicates it and two messages never
  share an id. A ``TEXT_MESSAGE_START`` for a new id while another text message of the same run is open
  starts a message of its own (interleaved messages stay two messages, each with its text part); when
  none is open the block continues the loop's assistant message (the seeds' rule, kept because
  hookstream's engine names every text block with a fresh id; the new id is recorded and routes later
  content there). ``TEXT_MESSAGE_START`` with role ``user`` (or ``system``/``developer``, shown as
  ``system``) creates that message at once. ``TOOL_CALL_START.parentMessageId`` naming a known assistant
  message puts the call there; otherwise the call goes into the current run's assistant message, which
  takes that id if the call creates it. ``TEXT_MESSAGE_CONTENT`` for an unknown id implies its start
  (AG-UI clients drop it; the older TanStack streams relied on this).
* Runs may overlap (AG-UI allows concurrent runs on one thread): a ``RUN_STARTED`` while another run is
  active gives the new run its own assistant message; events without ids (tool calls, reasoning) go to
  the latest active run. A tool call belongs to the run that was latest when it started; a
  ``RUN_FINISHED`` completes only its own run's calls (so another run's call keeps streaming and keeps
  its later ``TOOL_CALL_ARGS``) and ends only its own run's text segments. ``RUN_ERROR`` (no run id in
  AG-UI) ends the latest active run. A ``RUN_FINISHED`` for a run never started completes every call
  of no active run, as before.
* Chunk events (AG-UI "Chunk events"; ``@ag-ui/client`` ``transformChunks``) behave as their
  triplets: ``TEXT_MESSAGE_CHUNK`` with a ``messageId`` different from the open chunk block's opens a
  message (``role`` default ``assistant``), one without continues the open block, ``delta`` is content;
  likewise ``TOOL_CALL_CHUNK`` (``toolCallId`` + ``toolCallName`` open a call, ``delta`` is arguments) and
  ``REASONING_MESSAGE_CHUNK``. The open block closes (its ``*_END`` is applied) when a chunk of another
  kind or id arrives, before any other message, tool, reasoning, state, snapshot, custom or lifecycle
  event, and at :meth:`~StreamProcessor.finalize`; ``RAW``, ``ACTIVITY_*``, ``REASONING_ENCRYPTED_VALUE``
  and ``SUBAGENT_*`` do not close it. A first chunk without the ids it needs is an unusable event.
* ``MESSAGES_SNAPSHOT`` replaces the list the AG-UI way (edit-based merge): messages the snapshot
  names are kept in place (the same objects) and brought to the snapshot's version, messages it does not
  name are dropped, new ones are appended in snapshot order. A kept message keeps what the AG-UI message
  cannot carry: its text parts when the text is unchanged (segments, provider metadata), thinking,
  sources and files, tool-call state, approval and output, and tool calls the snapshot omits (still
  streaming: ``add_tool_result`` keeps working, as TanStack AI does). Roles: ``user`` (text and
  ``data``/``url`` media parts as file parts), ``system`` and ``developer`` (both ``system``),
  ``assistant`` (``content`` as a text part, ``toolCalls`` as ``input-complete`` tool-call parts), a
  ``tool`` message as the result of its call (output, state ``output-available``/``output-error``, one
  tool-result part, updated rather than repeated by a later snapshot; a result for no known call is
  counted in ``orphan_results``), ``reasoning`` as a thinking part of the next assistant message,
  ``activity`` into :attr:`StreamProcessor.activities` (a snapshot with activity messages declares the
  whole activity set).
* Activities (``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA``) are kept by message id in
  :attr:`StreamProcessor.activities` as :class:`Activity` values, not as UI messages (they are never
  sent to a model); ``replace`` ``False`` leaves an existing one as it is; a delta is a JSON Patch of
  the content (one that does not apply is counted in ``state_patch_errors``; one for an unknown activity
  is an unusable event). ``on_activity_change(activity)`` fires after each change. ``RAW`` and
  ``REASONING_END`` change nothing.
* Subagents (AG-UI 1.0 ``SUBAGENT_*``; an agent tool's nested run, ``Agent.as_tool``): an event carrying
  ``subagentRunId: R`` is the work of sub-run ``R``, never of the loop's assistant message, whatever its
  kind. Each sub-run is a :class:`SubagentRun` in :attr:`StreamProcessor.subagents` (by ``R``, in start
  order) with UI messages of its own (``SubagentRun.messages``: one assistant message with its own id,
  holding the nested run's steps, text, reasoning, tool calls and their results, built by the rules here as
  if the sub-run were a run of its own), its own ``state`` and ``activities`` (a nested structured output
  does not touch :attr:`StreamProcessor.state`), and the link to where it was called from
  (``parent_tool_call_id`` from ``SUBAGENT_STARTED.parentToolCallId``, ``parent_message_id``,
  ``parent_subagent_run_id``; :meth:`StreamProcessor.subagents_of` finds a tool call's). AG-UI clients keep
  such messages in the one message list tagged with ``subagentRunId``; a :class:`~hookstream.UIMessage`
  carries no attribution and the list is the conversation sent back to the model (where the nested run's
  messages never belong: only the tool's result does), so they are kept apart, as activities are. The
  calling run's tool-call part of the agent tool gets its output, as any call, from the calling run's
  ``TOOL_CALL_RESULT``. ``SUBAGENT_STARTED`` opens the sub-run (events of a sub-run never started open it
  too, without a name); ``SUBAGENT_FINISHED`` ends it (its ``RUN_FINISHED``: open calls complete), status
  ``success`` or ``suspended``, ``result`` and ``outcome`` kept; ``SUBAGENT_ERROR`` ends it as its
  ``RUN_ERROR`` would, status ``error`` with ``error`` = ``(code, message)``, and is not reported to
  ``on_error`` (the calling run goes on). Sub-run text is published at once (the chunk strategy paces the
  loop's own text; the loop's held-back text is published before any sub-run event). A sub-run's unusable
  event is counted in both processors' stats and reported to ``on_error``. ``MESSAGES_SNAPSHOT`` messages
  with a ``subagentRunId`` reconcile that sub-run's list (one never started is not shown) and never the
  loop's. ``*_CHUNK`` blocks close stream-wide as ``transformChunks`` closes them: an event that closes a
  chunk block closes an open one of any run. ``on_subagent_change(subagent_run)`` fires after each event
  that changed a sub-run (its start and end included).
* Events the processor cannot use are counted in :attr:`ProcessorStats.unusable_events` and reported
  to ``on_error`` without stopping the stream (see :meth:`StreamProcessor.process_chunk`).
* Text: a segment is contiguous text. ``TEXT_MESSAGE_START``/``END`` and every new non-text part end
  the segment (pending text is published first). Published text goes into the segment's text part;
  a new segment pushes a new text part, so text that arrived is never overwritten.
* The chunk strategy decides when text is published; held-back text is published before any
  non-text event, at segment end and at :meth:`~StreamProcessor.finalize`, so the final messages do
  not depend on the strategy.
* Reasoning: one :class:`~hookstream.ReasoningUIPart` per reasoning block (``REASONING_*``
  ``message_id`` within a step), updated in place; the older ``STEP_FINISHED`` with ``delta`` feeds one
  part per step name. One part per block, not per message, keeps each block's signature with its text.
* Tool calls: keyed by id in order of first ``TOOL_CALL_START`` (a duplicate start is a no-op, args
  for an unknown or finished id are dropped and counted in :attr:`StreamProcessor.stats`). State
  ``awaiting-input → input-streaming`` (on the first non-empty delta) ``→ input-complete`` on
  ``TOOL_CALL_END`` or, as a safety net, on ``RUN_FINISHED`` and at the end of the stream.
  Arguments are parsed incrementally (``hookstream._processing.partial_json``); ``TOOL_CALL_END.input``
  overrides them. When ``TOOL_CALL_END.arguments`` (set by the engine) holds the same text, the part
  keeps that string and drops its own, so the text is held once in the process. A result
  (``TOOL_CALL_RESULT``, or the older ``TOOL_CALL_END`` with ``result``) sets the call's ``output`` and
  appends a tool-result part.
* The engine's ``CUSTOM`` events are read through :func:`~hookstream.events.parse_custom` (shapes in
  :mod:`hookstream._custom`; a value without its event's shape is an unusable event, code
  ``malformed_custom_event``, that changes nothing). ``tool-input-available`` (value ``{"toolCallId",
  "toolName", "input"}``) completes the call and fires ``on_tool_call``; ``approval-requested`` (value
  ``{"toolCallId", "approvalId", "toolName", "input"}``) sets state ``approval-requested`` with
  ``approval.id`` = ``approvalId`` and fires ``on_approval_request``; ``approval-responded`` (value
  ``{"toolCallId", "approvalId", "approved"}``, sent when the engine's ``approve`` decided) sets
  ``approval.approved`` and state ``approval-responded`` (a denied call's error ``TOOL_CALL_RESULT``
  then makes it ``output-error``); ``tool-call-repaired`` (value ``{"toolCallId", "toolName", "input"}``,
  sent when the engine's ``repair_tool_call`` fixed a call) replaces the part's ``name``, ``input`` and
  ``arguments`` (the input as JSON text) with the repaired call's. ``loop-stopped`` and any other
  ``CUSTOM`` event go to ``on_custom_event``. ``source`` and ``file`` (adapters' citations and
  generated files) append a :class:`~hookstream.SourceUIPart` / :class:`~hookstream.FileUIPart` to the
  assistant message without ending the text part they arrive in.
* Agent state: ``STATE_SNAPSHOT`` replaces :attr:`StreamProcessor.state` (any JSON value),
  ``STATE_DELTA`` applies its RFC 6902 JSON Patch operations (``add``/``replace``/``remove``/``move``/
  ``copy``/``test``, in order, in place; at the first that does not apply the rest are dropped and the
  delta is counted in :attr:`StreamProcessor.stats`). The state lives across agent loops, as AG-UI state does.
  A structured output (``chat(..., output=SPEC)``) streams into ``state["output"]``, also kept as
  :attr:`ProcessorResult.output`; ``on_state_change(state)`` fires after each applied state event.

Costs are linear in the stream: text, reasoning and argument strings grow with ``+=`` while the part
holds the only reference (CPython resizes them in place), and each delta is parsed once.

Callbacks (all optional; they run while the processor holds :attr:`StreamProcessor.lock`):

* ``on_messages_change(messages)``: at most once per event that changed the messages, once per
  timer flush, once per ``add_tool_result``/``add_tool_approval_response``. ``messages`` is the live
  list (copy what you keep).
* ``on_text_update(message_id, text)``: at each publish, with the full text of the current text part.
* ``on_tool_call_state_change(message_id, tool_call_id, state, arguments_text)``: on each state change.
* ``on_stream_end(message)``: at :meth:`~StreamProcessor.finalize`, with the assistant message or None.
* ``on_error(error)``: on ``RUN_ERROR``, with a :class:`RunFailedError` (``code``, ``message``); also for
  an event the processor cannot use (code ``unknown_event`` or ``unusable_event``; the run goes on).
* ``on_tool_call(request)``: :class:`ToolInputRequest` for a client tool.
* ``on_approval_request(request)``: :class:`ApprovalRequest`.
* ``on_custom_event(name, value)``: any other ``CUSTOM`` event (``loop-stopped`` included).
* ``on_state_change(state)``: after each ``STATE_SNAPSHOT``/``STATE_DELTA``, with the live state.
* ``on_activity_change(activity)``: after each change of an :class:`Activity`.
* ``on_subagent_change(subagent_run)``: after each event that changed a :class:`SubagentRun`.

Threads: events are fed from one thread. A timer-driven strategy (debounce, throttle's trailing edge)
publishes from its timer thread, so ``on_text_update`` and ``on_messages_change`` may arrive on
that thread; every state change happens under the re-entrant :attr:`StreamProcessor.lock`, so callbacks
never run concurrently and may call back into the processor. Do not block inside a callback waiting for
another thread that uses the processor.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs

from .._agentloop.partial_output import STATE_KEY, apply_patch
from .._custom import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    FilePayload,
    SourcePayload,
    ToolCallRepairedPayload,
    ToolInputAvailablePayload,
    parse_custom,
)
from .._errors import MalformedCustomEventError, RunFailedError, UnknownPluginError, UnknownToolCallError
from .._events import (
    ActivityDelta,
    ActivitySnapshot,
    AGUIMessage,
    BaseEvent,
    Custom,
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
    parse_arguments,
)
from .._messages import ToolCallPart, tool_output_text
from .._stream.accumulate import merge_metadata
from .convert import file_to_ui, new_message_id, source_to_ui, tool_call_to_model
from .partial_json import PartialJSONError, PartialJSONParser
from .strategies import ChunkStrategy, ImmediateStrategy
from .ui import (
    FileUIPart,
    ReasoningUIPart,
    SourceUIPart,
    TextUIPart,
    ToolApproval,
    ToolCallState,
    ToolCallUIPart,
    ToolResultUIPart,
    UIMessage,
    UIPart,
)

__all__ = [
    "Activity",
    "ApprovalRequest",
    "ProcessorResult",
    "ProcessorStats",
    "RunFailedError",
    "StreamProcessor",
    "SubagentRun",
    "ToolInputRequest",
    "UnknownToolCallError",
    "resolve_strategy",
]

log = logging.getLogger("hookstream.processor")


@attrs.define(slots=True, frozen=True)
class ToolInputRequest:
    """A client tool to run (``CUSTOM`` ``tool-input-available``); answer with ``add_tool_result``."""

    tool_call_id: str
    tool_name: str
    input: Any


@attrs.define(slots=True, frozen=True)
class ApprovalRequest:
    """A tool call waiting for approval; answer with ``add_tool_approval_response(approval_id, ok)``."""

    tool_call_id: str
    tool_name: str
    input: Any
    approval_id: str


@attrs.define(slots=True)
class ProcessorStats:
    """Counts of events that were tolerated rather than applied."""

    dropped_args: int = 0  # TOOL_CALL_ARGS for an unknown or already ended tool call
    duplicate_starts: int = 0  # TOOL_CALL_START for an id already known
    argument_parse_errors: int = 0  # tool calls whose argument text stopped being JSON
    orphan_results: int = 0  # results for a tool call no message holds
    state_patch_errors: int = 0  # STATE_DELTA / ACTIVITY_DELTA events whose JSON Patch did not apply
    unusable_events: int = 0  # events that could not be applied at all (reported to on_error)


@attrs.define(slots=True)
class Activity:
    """An AG-UI activity message (``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA``, or a snapshot's ``activity``
    message): structured progress that is not conversation content. ``content`` is a JSON object,
    ``activity_type`` the producer's open string. Kept in :attr:`StreamProcessor.activities` by id, not in
    the messages (it is not sent back to a model)."""

    id: str
    activity_type: str
    content: dict[str, Any] = attrs.Factory(dict)
    metadata: dict[str, Any] | None = None


@attrs.define(slots=True)
class ProcessorResult:
    """The assistant message of the last agent loop, summarised.

    ``content`` is its text (all text parts joined), ``reasoning`` its reasoning text or ``None``,
    ``tool_calls`` its calls as model :class:`~hookstream.ToolCallPart` (``arguments`` ``None``
    when cut off or invalid: never execute those). ``finish_reason`` is the last ``RUN_FINISHED``'s
    (normalised), ``"error"`` after ``RUN_ERROR``; ``error`` is ``(code, message)`` then.
    ``output`` is the structured output streamed into the agent state (``state["output"]``; partial
    while it streams), ``None`` without one.
    """

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCallPart] = attrs.Factory(list)
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    usage: Usage | None = None
    outcome: Outcome | None = None
    error: tuple[str, str] | None = None
    message: UIMessage | None = None
    output: Any = None


@attrs.define(slots=True, eq=False)
class SubagentRun:
    """One subagent invocation seen on the stream (AG-UI ``SUBAGENT_*``; an agent tool's nested run), kept in
    :attr:`StreamProcessor.subagents` by ``run_id`` (its ``subagentRunId``), never in the calling run's
    messages.

    ``messages`` are its own UI messages, built from the events that carry its ``subagentRunId`` by the same
    rules as the processor's (normally one assistant message, :attr:`message`, with its own id, holding every
    step of the nested run). ``name``, ``description`` and the links to where it was called from
    (``parent_tool_call_id``: the calling run's tool-call part; ``parent_message_id``;
    ``parent_subagent_run_id`` for a subagent of a subagent) come from ``SUBAGENT_STARTED`` (``None`` for a
    run whose events arrived without one). ``status`` is ``running`` until its ``SUBAGENT_FINISHED``
    (``success``, or ``suspended`` for the outcome ``{"type": "suspended"}``; ``result`` and ``outcome`` as
    sent) or ``SUBAGENT_ERROR`` (``error``: ``(code, message)``); a stream cut off before that leaves it
    ``running``. ``state``, ``activities`` and ``stats`` are the nested run's own (its ``STATE_*``,
    ``ACTIVITY_*`` and tolerated events)."""

    run_id: str
    name: str | None = None
    description: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    parent_subagent_run_id: str | None = None
    status: Literal["running", "success", "suspended", "error"] = "running"
    result: Any = None
    outcome: dict[str, Any] | None = None
    error: tuple[str, str] | None = None
    messages: list[UIMessage] = attrs.Factory(list)
    _processor: StreamProcessor | None = attrs.field(default=None, init=False, repr=False)

    @property
    def message(self) -> UIMessage | None:
        """Its (last) assistant message: the nested run's steps; ``None`` before any content."""
        return next((m for m in reversed(self.messages) if m.role == "assistant"), None)

    @property
    def text(self) -> str:
        """The text of :attr:`message` (what the nested run said)."""
        message = self.message
        return message.text if message is not None else ""

    @property
    def state(self) -> Any:
        return self._processor.state if self._processor is not None else {}

    @property
    def activities(self) -> dict[str, Activity]:
        return self._processor.activities if self._processor is not None else {}

    @property
    def stats(self) -> ProcessorStats:
        return self._processor.stats if self._processor is not None else ProcessorStats()


StrategySpec = ChunkStrategy | str | None


def resolve_strategy(strategy: StrategySpec) -> ChunkStrategy:
    """``None`` → :class:`ImmediateStrategy`; a name → the registered factory called with no options
    (:func:`hookstream.get_registry`, kind ``chunk_strategies``); an object → itself.

    Raises :class:`~hookstream.errors.UnknownPluginError` for an unknown name and :class:`TypeError`
    for an object without ``should_emit``/``reset``.
    """
    if strategy is None:
        return ImmediateStrategy()
    if isinstance(strategy, str):
        from .._registry import get_registry

        factory = get_registry().chunk_strategy(strategy)
        made = factory()
        if not isinstance(made, ChunkStrategy):
            raise UnknownPluginError(f"chunk strategy {strategy!r} did not build a ChunkStrategy: {made!r}")
        return made
    if not isinstance(strategy, ChunkStrategy):
        raise TypeError(f"a chunk strategy needs should_emit(chunk, accumulated) and reset(): {strategy!r}")
    return strategy


class _Tool:
    """Bookkeeping of one streaming tool call (the part holds what the UI sees). ``run`` is the AG-UI run
    that was the latest active one when the call started (``None`` outside any run): only that run's
    ``RUN_FINISHED`` completes the call."""

    __slots__ = ("message", "parser", "part", "run")

    def __init__(self, part: ToolCallUIPart, message: UIMessage, run: str | None) -> None:
        self.part = part
        self.message = message
        self.run = run
        self.parser = PartialJSONParser()


class _Target:
    """Where text goes: one UI message (created lazily, with its first part, for assistant messages) and
    its open text segment. ``message_id`` is the id the message gets when it is created; ``run`` the AG-UI
    run the message streams in (its ``RUN_FINISHED`` ends the segment)."""

    __slots__ = ("message", "message_id", "role", "run", "seg_meta", "seg_part")

    def __init__(self, role: Role, message_id: str | None, run: str | None, message: UIMessage | None = None) -> None:
        self.message = message
        self.message_id = message_id
        self.role = role
        self.run = run
        self.seg_part: TextUIPart | None = None
        self.seg_meta: dict[str, Any] | None = None


Role = Literal["system", "user", "assistant"]

# Events before which an open ``*_CHUNK`` block is closed (``@ag-ui/client`` ``transformChunks``); the
# rest (RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE, SUBAGENT_*) pass through without closing it.
_CLOSES_CHUNK: frozenset[type[BaseEvent]] = frozenset({
    TextMessageStart, TextMessageContent, TextMessageEnd, ToolCallStart, ToolCallArgs, ToolCallEnd, ToolCallResult,
    StateSnapshot, StateDelta, MessagesSnapshot, Custom, RunStarted, RunFinished, RunError, StepStarted,
    StepFinished, ReasoningStart, ReasoningMessageStart, ReasoningMessageContent, ReasoningMessageEnd, ReasoningEnd,
})
_CHUNKS: frozenset[type[BaseEvent]] = frozenset({TextMessageChunk, ToolCallChunk, ReasoningMessageChunk})
# Events that may add to held-back text without publishing it first.
_TEXT_FLOW: frozenset[type[BaseEvent]] = frozenset({TextMessageContent, TextMessageChunk})


class StreamProcessor:
    """Events → UI messages. See the module docstring for rules, callbacks and threads.

    ``strategy``: ``None`` (immediate), a registered name (``"word-boundary"``) or an object.
    ``messages``: earlier UI messages (e.g. the conversation so far); the new assistant message is
    appended after them, and content for one of their ids continues that message.

    Thread safety: every method takes :attr:`lock` (re-entrant); events are fed from one thread, a
    timer strategy may publish from its own.

    Raises :class:`~hookstream.errors.UnknownPluginError` for an unknown strategy name.
    """

    def __init__(
        self,
        strategy: StrategySpec = None,
        on_messages_change: Callable[[list[UIMessage]], None] | None = None,
        on_text_update: Callable[[str, str], None] | None = None,
        on_tool_call_state_change: Callable[[str, str, ToolCallState, str], None] | None = None,
        on_stream_end: Callable[[UIMessage | None], None] | None = None,
        on_error: Callable[[RunFailedError], None] | None = None,
        on_tool_call: Callable[[ToolInputRequest], None] | None = None,
        on_approval_request: Callable[[ApprovalRequest], None] | None = None,
        messages: Iterable[UIMessage] | None = None,
        on_custom_event: Callable[[str, Any], None] | None = None,
        on_state_change: Callable[[Any], None] | None = None,
        on_activity_change: Callable[[Activity], None] | None = None,
        on_subagent_change: Callable[[SubagentRun], None] | None = None,
    ) -> None:
        self.strategy = resolve_strategy(strategy)
        self.on_messages_change = on_messages_change
        self.on_text_update = on_text_update
        self.on_tool_call_state_change = on_tool_call_state_change
        self.on_stream_end = on_stream_end
        self.on_error = on_error
        self.on_tool_call = on_tool_call
        self.on_approval_request = on_approval_request
        self.on_custom_event = on_custom_event
        self.on_state_change = on_state_change
        self.on_activity_change = on_activity_change
        self.on_subagent_change = on_subagent_change
        self.state: Any = {}
        self.activities: dict[str, Activity] = {}
        self.lock = threading.RLock()
        self.messages: list[UIMessage] = list(messages or [])
        self.stats = ProcessorStats()
        self.subagents: dict[str, SubagentRun] = {}  # subagentRunId -> its run, in start order
        self._sub_changed: dict[str, SubagentRun] = {}  # sub-runs changed by the event being applied
        self._sub_ending = False  # applying a sub-run's own end (its RUN_ERROR is no error of ours)
        self._own_run: str | None = None  # a sub-run's processor: the subagentRunId it builds
        self._dirty = False
        self._new_loop()
        attach = getattr(self.strategy, "attach", None)
        if callable(attach):
            attach(self._timer_flush)

    # -- state of one agent loop ------------------------------------------------------------------
    def _new_loop(self) -> None:
        self._loop = _Target("assistant", None, None)  # the loop's assistant message
        self._runs: dict[str, _Target] = {}  # active runs, in start order -> their default target
        self._targets: dict[str, _Target] = {}  # AG-UI text message id -> target (several ids may share one)
        self._open: dict[str, _Target] = {}  # text messages started and not ended
        self._pending = ""
        self._pending_to: _Target | None = None
        self._reasoning_parts: dict[str, ReasoningUIPart] = {}
        self._tools: dict[str, _Tool] = {}
        self._chunk: tuple[str, str] | None = None  # open *_CHUNK block: ("text" | "tool" | "reasoning", id)
        self._result = ProcessorResult()
        self._finalized = False

    @property
    def _message(self) -> UIMessage | None:
        return self._loop.message

    # -- public API -------------------------------------------------------------------------------
    def process(self, events: Iterable[BaseEvent]) -> ProcessorResult:
        """Process every event, then :meth:`finalize`. Returns the result."""
        for event in events:
            self.process_chunk(event)
        return self.finalize()

    def process_chunk(self, event: BaseEvent | dict[str, Any]) -> None:
        """Apply one AG-UI event (an event object, or its AG-UI JSON dict, camelCase keys).

        An event the processor cannot use (a dict of unknown ``type`` or shape, an event class it does not
        know, a ``*_CHUNK`` that opens nothing, an ``ACTIVITY_DELTA`` for an unknown activity) changes
        nothing, is counted in :attr:`stats` (``unusable_events``) and reported to ``on_error`` (a
        :class:`RunFailedError` with code ``unknown_event`` or ``unusable_event``; the run goes on and the
        result does not become an error); it is logged (logger ``hookstream``, warning) too, so it is
        never lost silently, and the stream goes on, as the AI SDK's and TanStack AI's processors go on.
        An engine ``CUSTOM`` event (``approval-requested``, ``tool-input-available``...) whose value does
        not have its shape is one of them (code ``malformed_custom_event``), the messages untouched.
        Raises :class:`TypeError` for anything that is neither an event nor a dict (a programming error).
        """
        with self.lock:
            if (type(event) is TextMessageContent and event.subagent_run_id is None and self._chunk is None
                    and not self._finalized and not self.subagents):
                # Most events of a stream: none of the routing below or in _apply concerns them.
                target = self._targets.get(event.message_id)
                delta = event.delta
                if (target is not None and (part := target.seg_part) is not None
                        and (message := target.message) is not None and delta and not self._pending
                        and type(self.strategy) is ImmediateStrategy):
                    # The usual delta: _text_content, _publish, _changed without their calls and checks (the
                    # immediate strategy holds nothing back); dirty until reported, should on_text_update raise.
                    self._pending_to = target
                    text = part.content
                    part.content = ""  # drop the part's reference so += resizes in place
                    text += delta
                    part.content = text
                    self._dirty = True
                    if self.on_text_update is not None:
                        self.on_text_update(message.id, text)
                    self._dirty = False
                    if self.on_messages_change is not None:
                        self.on_messages_change(self.messages)
                    return
                self._text_content(event)
                self._changed()
                return
            if isinstance(event, dict):
                try:
                    event = from_dict(event)
                except Exception as exc:  # cattrs raises its own validation groups besides ValueError
                    self._unusable(f"not an AG-UI event: {exc}", "unknown_event")
                    return
            if not isinstance(event, BaseEvent):
                raise TypeError(f"expected an AG-UI event, got {type(event).__name__}")
            t = type(event)
            if t in _SUBAGENT_EVENTS:
                self._subagent_event(event)
                return
            sub = getattr(event, "subagent_run_id", None)
            if sub is not None:
                self._nested(event, sub)
                return
            if self.subagents and (t in _CLOSES_CHUNK or t in _CHUNKS):
                self._close_nested_chunks(self)
            self._apply(event)

    def _apply(self, event: BaseEvent) -> None:
        """Apply one event of this processor's own run(s) (the caller holds the lock)."""
        if self._finalized:
            self._new_loop()
        t = type(event)
        if self._pending and t not in _TEXT_FLOW:
            self._publish()  # held-back text goes out before any non-text event
        if self._chunk is not None and t in _CLOSES_CHUNK:
            self._close_chunk()
        handler = _HANDLERS.get(t)
        if handler is not None:
            try:
                handler(self, event)
            except MalformedCustomEventError as exc:
                # hookstream's own CUSTOM vocabulary with a value of the wrong shape: messages untouched,
                # the stream goes on (a producer's bug must not lose the rest of the run).
                self._unusable(exc.message, exc.code)
        elif t not in _IGNORED:
            self._unusable(f"{t.__name__} is not an event the processor applies", "unknown_event")
        self._changed()

    def finalize(self) -> ProcessorResult:
        """End the agent loop: close an open ``*_CHUNK`` block, publish pending text, complete open tool
        calls (safety net), reset the strategy, fire ``on_stream_end``. Returns the result; calling it
        again returns the same result."""
        with self.lock:
            if self._finalized:
                return self._result
            if self._chunk is not None:
                self._close_chunk()
            self._end_all_segments()
            for tool in self._tools.values():
                self._complete_tool(tool, None)
            for sub in self.subagents.values():  # a cut-off stream: their calls end too, they stay running
                if sub._processor is not None and sub.status == "running" and not sub._processor._finalized:
                    sub._processor.finalize()
            self._changed()
            self._subagents_changed()
            self._finalized = True
            result = self.result
            if self.on_stream_end is not None:
                self.on_stream_end(self._message)
            return result

    @property
    def result(self) -> ProcessorResult:
        """The result so far (final after :meth:`finalize`)."""
        with self.lock:
            r = self._result
            msg = self._message
            r.message = msg
            if msg is not None:
                r.content = msg.text
                has_reasoning = any(isinstance(p, ReasoningUIPart) for p in msg.parts)
                r.reasoning = msg.reasoning if has_reasoning else None
                r.tool_calls = [tool_call_to_model(p) for p in msg.tool_calls]
            r.output = self.state.get(STATE_KEY) if isinstance(self.state, dict) else None
            return r

    def add_tool_result(self, tool_call_id: str, output: Any, error: str | None = None) -> None:
        """Record a client tool's ``output`` (any JSON value; with ``error`` text: a failure).

        Sets the tool call's output and state and appends a tool-result part to its message. A result
        for a tool call no message holds is kept as a ``TOOL_CALL_RESULT`` for it would be: a tool-result
        part of the current assistant message, counted in ``stats.orphan_results`` and logged (TanStack
        AI's ``addToolResult`` goes on too; nothing the caller gave is lost).
        """
        with self.lock:
            found = self._find_call(lambda p: p.id == tool_call_id)
            if found is None:
                log.warning("add_tool_result: no tool call %r in the messages; kept as an orphan result", tool_call_id)
                self.stats.orphan_results += 1
                self._push(ToolResultUIPart(tool_call_id, tool_output_text(output), "error" if error else "complete",
                                            error))
                self._changed()
                return
            message, part = found
            self._apply_result(message, part, tool_call_id, output, tool_output_text(output), error)
            self._changed()

    def add_tool_approval_response(self, approval_id: str, approved: bool) -> None:
        """Answer an approval request: state ``approval-responded``, ``approval.approved`` set.
        Raises :class:`UnknownToolCallError` for an unknown approval id."""
        with self.lock:
            found = self._find_call(lambda p: p.approval is not None and p.approval.id == approval_id)
            if found is None:
                raise UnknownToolCallError(f"no approval request {approval_id!r} in the messages")
            message, part = found
            assert part.approval is not None
            part.approval.approved = approved
            self._set_state(message, part, "approval-responded")
            self._changed()

    # -- errors that do not stop the stream ----------------------------------------------------------
    def _unusable(self, reason: str, code: str = "unusable_event") -> None:
        # As the AI SDK's and TanStack AI's processors do, the stream goes on: counted, logged, reported.
        self.stats.unusable_events += 1
        log.warning("AG-UI event not applied: %s", reason)
        if self.on_error is not None:
            self.on_error(RunFailedError(reason, code))

    # -- subagents (AG-UI 1.0 SUBAGENT_* and events with subagentRunId) -------------------------------
    def subagents_of(self, tool_call_id: str) -> list[SubagentRun]:
        """The subagent runs a tool call started (``SUBAGENT_STARTED.parentToolCallId``), in start order:
        what an agent tool's part shows besides its output."""
        with self.lock:
            return [s for s in self.subagents.values() if s.parent_tool_call_id == tool_call_id]

    def _subrun(self, run_id: str) -> SubagentRun:
        """The sub-run ``run_id``, opened (with a processor of its own) when it is new."""
        sub = self.subagents.get(run_id)
        if sub is not None:
            return sub
        sub = self.subagents[run_id] = SubagentRun(run_id)

        def changed(*_: Any) -> None:
            self._sub_changed[run_id] = sub

        child = StreamProcessor(on_messages_change=changed, on_error=self._nested_error, on_state_change=changed,
                                on_activity_change=changed)
        child.lock = self.lock  # one lock: its callbacks run under ours
        child.messages = sub.messages
        child._own_run = run_id
        sub._processor = child
        child._apply(RunStarted("", run_id))
        self._sub_changed[run_id] = sub
        return sub

    def _nested(self, event: BaseEvent, run_id: str) -> None:
        """An event of a sub-run: applied to that run's messages only."""
        if self._pending:
            self._publish()  # the calling run's held-back text goes out first
        child = self._subrun(run_id)._processor
        assert child is not None
        t = type(event)
        if t in _CLOSES_CHUNK or t in _CHUNKS:
            self._close_nested_chunks(child)
        try:
            child._apply(event)
        finally:
            self._changed()
            self._subagents_changed()

    def _subagent_event(self, event: BaseEvent) -> None:
        """``SUBAGENT_STARTED`` / ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR``: a sub-run begins or ends."""
        if self._pending:
            self._publish()
        if isinstance(event, SubagentStarted):
            sub = self._subrun(event.subagent_run_id)
            sub.name, sub.description = event.name, event.description
            sub.parent_tool_call_id = event.parent_tool_call_id
            sub.parent_message_id = event.parent_message_id
            sub.parent_subagent_run_id = event.parent_subagent_run_id
        elif isinstance(event, SubagentFinished):
            sub = self._subrun(event.subagent_run_id)
            if sub.status == "running":
                self._end_subrun(sub, RunFinished("", sub.run_id))
            outcome = event.outcome
            sub.status = "suspended" if isinstance(outcome, dict) and outcome.get("type") == "suspended" else "success"
            sub.result, sub.outcome = event.result, outcome
        elif isinstance(event, SubagentError):
            sub = self._subrun(event.subagent_run_id)
            if sub.status == "running":
                self._end_subrun(sub, RunError(event.message, code=event.code))
            sub.status = "error"
            sub.error = (event.code or "error", event.message)
        else:  # pragma: no cover - _SUBAGENT_EVENTS holds the three
            raise AssertionError(type(event))
        self._sub_changed[sub.run_id] = sub
        self._changed()
        self._subagents_changed()

    def _end_subrun(self, sub: SubagentRun, end: RunFinished | RunError) -> None:
        child = sub._processor
        assert child is not None
        if child._finalized:
            return
        self._sub_ending = True
        try:
            child._apply(end)
            child.finalize()
        finally:
            self._sub_ending = False

    def _nested_error(self, error: RunFailedError) -> None:
        """A sub-run's processor reports an event it cannot use: counted and reported here too."""
        if self._sub_ending:
            return  # the sub-run's own error end: recorded on its SubagentRun, the calling run goes on
        self.stats.unusable_events += 1
        if self.on_error is None:
            raise ValueError(str(error))
        self.on_error(error)

    def _close_nested_chunks(self, owner: StreamProcessor) -> None:
        """An open ``*_CHUNK`` block of another run than ``owner``'s closes before this event, as AG-UI's
        ``transformChunks`` closes it (it reads the stream, not the runs)."""
        for proc in (self, *(s._processor for s in self.subagents.values())):
            if proc is not None and proc is not owner and proc._chunk is not None:
                proc._close_chunk()
                proc._changed()

    def _subagents_changed(self) -> None:
        if self._sub_changed:
            changed = list(self._sub_changed.values())
            self._sub_changed.clear()
            if self.on_subagent_change is not None:
                for sub in changed:
                    self.on_subagent_change(sub)

    # -- runs ---------------------------------------------------------------------------------------
    def _current_run(self) -> str | None:
        return next(reversed(self._runs)) if self._runs else None

    def _slot(self) -> _Target:
        """The assistant target of the latest active run: where content without a message id goes."""
        return self._runs[next(reversed(self._runs))] if self._runs else self._loop

    def _run_started(self, event: RunStarted) -> None:
        run_id = event.run_id
        if self._runs and run_id not in self._runs:
            # Another run is still streaming (AG-UI runs may overlap): this one gets its own message.
            self._runs[run_id] = _Target("assistant", None, run_id)
            return
        self._runs[run_id] = self._loop
        self._loop.run = run_id
        self._end_all_segments()
        self._reasoning_parts = {}  # a new model call: its reasoning blocks are new parts

    def _step(self, event: StepStarted) -> None:
        self._end_run_segments(self._current_run())
        self._reasoning_parts = {}

    def _step_finished(self, event: StepFinished) -> None:
        self._end_run_segments(self._current_run())
        if event.delta:  # the older TanStack form: reasoning text rides on STEP_FINISHED
            self._reasoning_delta(f"step:{event.step_name}", event.delta, None)

    def _run_finished(self, event: RunFinished) -> None:
        run_id = event.run_id
        known = run_id in self._runs
        self._end_run_segments(run_id if known else None, every=not known)
        active = set(self._runs) - {run_id}
        for tool in self._tools.values():
            # Only this run's calls: a run finishing never completes (or cuts off) another run's call.
            if tool.run == run_id or (not known and tool.run not in active):
                self._complete_tool(tool, None)
        self._runs.pop(run_id, None)
        r = self._result
        if event.finish_reason is not None:
            r.finish_reason = event.finish_reason
            r.raw_finish_reason = event.raw_finish_reason
        if event.usage is not None:
            r.usage = event.usage
        if event.outcome is not None:
            r.outcome = event.outcome

    def _run_error(self, event: RunError) -> None:
        # RUN_ERROR names no run: it ends the latest active one.
        run_id = self._current_run()
        target = self._slot()
        self._end_run_segments(run_id, every=run_id is None)
        self._ensure(target)
        if run_id is not None:
            self._runs.pop(run_id)
        r = self._result
        r.finish_reason = "error"
        # AG-UI requires a message but servers send "" too; a user is never shown an empty error.
        message = event.message or f"the run failed ({event.code or 'no error message'})"
        r.error = (event.code or "error", message)
        if event.usage is not None:
            r.usage = event.usage
        if self.on_error is not None:
            self.on_error(RunFailedError(message, event.code))

    # -- text ---------------------------------------------------------------------------------------
    def _lookup(self, message_id: str) -> _Target | None:
        """The target of an AG-UI message id: one seen in this loop, or a message already in the list
        (given at construction, hydrated by a snapshot, or streamed in an earlier loop), whose last text
        part then continues (a reconnect that resumes a message adds to it instead of duplicating it)."""
        target = self._targets.get(message_id)
        if target is not None:
            return target
        for target in (self._loop, *self._runs.values()):
            if target.message is not None and target.message.id == message_id:
                self._targets[message_id] = target
                return target
        for message in reversed(self.messages):
            if message.id == message_id:
                target = _Target(message.role, message_id, self._current_run(), message)
                if message.parts and isinstance(message.parts[-1], TextUIPart):
                    target.seg_part = message.parts[-1]
                self._targets[message_id] = target
                return target
        return None

    def _open_text(self, message_id: str, role: str, metadata: dict[str, Any] | None) -> _Target:
        """The target of a text message that starts (explicitly or by its first content)."""
        target = self._lookup(message_id)
        if target is None:
            ui_role: Role = "user" if role == "user" else "system" if role in ("system", "developer") else "assistant"
            slot = self._slot()
            if ui_role != "assistant":
                # A user (or system) message the agent streams: created now, as AG-UI clients do.
                message = UIMessage(message_id, ui_role)
                self.messages.append(message)
                self._dirty = True
                target = _Target(ui_role, message_id, self._current_run(), message)
            elif any(t is slot for t in self._open.values()):
                # Interleaved: another text message of this run is still open, so this one is a message
                # of its own (AG-UI keeps messages apart by messageId).
                target = _Target("assistant", message_id, slot.run)
            else:
                # Sequential: one more text block of the loop's assistant message (the seeds' rule:
                # hookstream's engine names every text block with a fresh id).
                target = slot
                target.message_id = target.message_id or message_id
                self._end_segment(target)
            self._targets[message_id] = target
        if metadata and target.seg_part is None:
            target.seg_meta = metadata
        elif metadata and target.seg_part is not None:
            target.seg_part.provider_metadata = merge_metadata(target.seg_part.provider_metadata, metadata)
            self._dirty = True
        self._open[message_id] = target
        return target

    def _text_start(self, event: TextMessageStart) -> None:
        self._open_text(event.message_id, event.role, event.metadata)

    def _text_content(self, event: TextMessageContent) -> None:
        target = self._targets.get(event.message_id) or self._lookup(event.message_id)
        if target is None:  # content without a start: the start is implied
            target = self._open_text(event.message_id, "assistant", None)
        delta = event.delta
        if not delta:
            return
        if self._pending_to is not target:
            self._publish()
            self._pending_to = target
        # Grow the pending text in place: after the swap this frame holds the only reference.
        pending = self._pending
        self._pending = ""
        pending += delta
        self._pending = pending
        if self.strategy.should_emit(delta, pending):
            self._publish()

    def _text_end(self, event: TextMessageEnd) -> None:
        target = self._open.pop(event.message_id, None) or self._targets.get(event.message_id)
        if target is None:
            return
        part = target.seg_part
        if event.metadata and part is not None:
            part.provider_metadata = merge_metadata(part.provider_metadata, event.metadata)
            self._dirty = True
        self._end_segment(target)

    def _publish(self) -> None:
        pending = self._pending
        target = self._pending_to
        if not pending or target is None:
            return
        self._pending = ""
        part = target.seg_part
        if part is None:
            part = target.seg_part = TextUIPart(pending, target.seg_meta)
            self._push(part, target)
            text = pending
        else:
            text = part.content
            part.content = ""  # drop the part's reference so += resizes in place
            text += pending
            part.content = text
            self._dirty = True
        if self.on_text_update is not None:
            self.on_text_update(self._ensure(target).id, text)

    def _end_segment(self, target: _Target) -> None:
        if self._pending_to is target:
            self._publish()
        if target.seg_part is not None or target.seg_meta is not None:
            target.seg_part = None
            target.seg_meta = None
            self.strategy.reset()

    def _end_run_segments(self, run_id: str | None, every: bool = False) -> None:
        """End the text segments of one run's messages (every message's with ``every``) and close their
        open text messages."""
        targets = {id(t): t for t in (self._loop, *self._runs.values(), *self._targets.values())}
        for target in targets.values():
            if every or target.run == run_id:
                self._end_segment(target)
        for mid in [m for m, t in self._open.items() if every or t.run == run_id]:
            del self._open[mid]

    def _end_all_segments(self) -> None:
        self._end_run_segments(None, every=True)

    def _timer_flush(self) -> None:
        """Publish pending text; called by timer-driven strategies from their own thread."""
        with self.lock:
            if self._finalized:
                return
            try:
                self._publish()
                self._changed()
            except Exception:  # a callback failed on the timer thread: nobody else would see it
                log.exception("chunk-strategy flush failed")

    # -- chunk events (AG-UI "Chunk events": start/content/end in one) -------------------------------
    def _close_chunk(self) -> None:
        assert self._chunk is not None
        kind, ident = self._chunk
        self._chunk = None
        if kind == "text":
            self._text_end(TextMessageEnd(ident))
        elif kind == "tool":
            self._tool_end(ToolCallEnd(ident))
        else:
            self._reasoning_block(ReasoningMessageEnd(ident))

    def _text_chunk(self, event: TextMessageChunk) -> None:
        mid = event.message_id
        chunk = self._chunk
        if chunk is not None and (chunk[0] != "text" or (mid is not None and mid != chunk[1])):
            self._close_chunk()
        if self._chunk is None:
            if mid is None:
                self._unusable("the first TEXT_MESSAGE_CHUNK of a message needs a messageId")
                return
            self._publish()
            self._open_text(mid, event.role or "assistant", event.metadata)
            self._chunk = ("text", mid)
        if event.delta is not None:
            self._text_content(TextMessageContent(self._chunk[1], event.delta))

    def _tool_chunk(self, event: ToolCallChunk) -> None:
        tid = event.tool_call_id
        chunk = self._chunk
        if chunk is not None and (chunk[0] != "tool" or (tid is not None and tid != chunk[1])):
            self._close_chunk()
        if self._chunk is None:
            if tid is None or event.tool_call_name is None:
                self._unusable("the first TOOL_CALL_CHUNK of a call needs a toolCallId and a toolCallName")
                return
            self._publish()
            self._tool_start(ToolCallStart(tid, event.tool_call_name, event.parent_message_id,
                                           metadata=event.metadata))
            self._chunk = ("tool", tid)
        if event.delta is not None:
            self._tool_args(ToolCallArgs(self._chunk[1], event.delta))

    def _reasoning_chunk(self, event: ReasoningMessageChunk) -> None:
        mid = event.message_id
        chunk = self._chunk
        if chunk is not None and (chunk[0] != "reasoning" or (mid is not None and mid != chunk[1])):
            self._close_chunk()
        if self._chunk is None:
            if mid is None:
                self._unusable("the first REASONING_MESSAGE_CHUNK of a message needs a messageId")
                return
            self._publish()
            self._reasoning_block(ReasoningMessageStart(mid, metadata=event.metadata))
            self._chunk = ("reasoning", mid)
        if event.delta is not None:
            self._reasoning_content(ReasoningMessageContent(self._chunk[1], event.delta))

    # -- reasoning ----------------------------------------------------------------------------------
    def _reasoning_content(self, event: ReasoningMessageContent) -> None:
        slot = self._slot()
        slot.message_id = slot.message_id or event.message_id
        self._reasoning_delta(event.message_id, event.delta, None)

    def _reasoning_block(self, event: ReasoningStart | ReasoningMessageStart | ReasoningMessageEnd) -> None:
        slot = self._slot()
        slot.message_id = slot.message_id or event.message_id
        if event.metadata:
            self._reasoning_delta(event.message_id, "", event.metadata)

    def _reasoning_delta(self, key: str, delta: str, metadata: dict[str, Any] | None) -> None:
        part = self._reasoning_parts.get(key)
        if part is None:
            if not delta and not metadata:
                return
            part = self._reasoning_parts[key] = ReasoningUIPart("", None)
            self._push(part)
        if metadata:
            part.provider_metadata = merge_metadata(part.provider_metadata, metadata)
            self._dirty = True
        if delta:
            text = part.content
            part.content = ""
            text += delta
            part.content = text
            self._dirty = True

    def _encrypted(self, event: ReasoningEncryptedValue) -> None:
        meta = event.metadata or {"encrypted": {"value": event.encrypted_value}}
        tool = self._tools.get(event.entity_id)
        if event.subtype == "tool-call" and tool is not None:
            tool.part.provider_metadata = merge_metadata(tool.part.provider_metadata, meta)
            self._dirty = True
        else:
            # Reasoning that is only an encrypted value (no summary text) is still a part to send back.
            self._reasoning_delta(event.entity_id, "", meta)

    # -- messages and parts -----------------------------------------------------------------------
    def _ensure(self, target: _Target) -> UIMessage:
        if target.message is None:
            target.message = UIMessage(target.message_id or new_message_id(), target.role)
            self.messages.append(target.message)
            self._dirty = True
        return target.message

    def _ensure_message(self) -> UIMessage:
        return self._ensure(self._slot())

    def _push(self, part: UIPart, target: _Target | None = None) -> UIMessage:
        """Append a part to a target's message (the current run's assistant message by default). A
        non-text part ends that message's text segment."""
        target = target or self._slot()
        if not isinstance(part, TextUIPart):
            self._end_segment(target)
        msg = self._ensure(target)
        msg.parts.append(part)
        self._dirty = True
        return msg

    def _target_of(self, message: UIMessage) -> _Target | None:
        for target in (self._loop, *self._runs.values(), *self._targets.values()):
            if target.message is message:
                return target
        return None

    def _changed(self) -> None:
        if self._dirty:
            self._dirty = False
            if self.on_messages_change is not None:
                self.on_messages_change(self.messages)

    # -- tool calls ---------------------------------------------------------------------------------
    def _tool_start(self, event: ToolCallStart) -> None:
        if event.tool_call_id in self._tools:
            self.stats.duplicate_starts += 1
            return
        parent = event.parent_message_id
        target = self._lookup(parent) if parent else None
        if target is None or target.role != "assistant":
            target = self._slot()
            if parent:
                # The producer's id for the loop's message (AG-UI ``parentMessageId``): the message takes
                # it when this call creates it, and content under that id continues it.
                target.message_id = target.message_id or parent
                self._targets.setdefault(parent, target)
        part = ToolCallUIPart(event.tool_call_id, event.tool_call_name, provider_metadata=event.metadata)
        msg = self._push(part, target)
        self._tools[event.tool_call_id] = _Tool(part, msg, self._current_run())
        self._state_changed(msg, part)

    def _tool_args(self, event: ToolCallArgs) -> None:
        tool = self._tools.get(event.tool_call_id)
        if tool is None or tool.part.state not in ("awaiting-input", "input-streaming"):
            self.stats.dropped_args += 1
            log.debug("dropped TOOL_CALL_ARGS for unknown or ended tool call %r", event.tool_call_id)
            return
        delta = event.delta
        if not delta:
            return
        part = tool.part
        raw = part.arguments
        part.arguments = ""  # drop the part's reference so += resizes in place
        raw += delta
        part.arguments = raw
        parser = tool.parser
        if parser.error is None:
            try:
                parser.feed(delta)
                part.input = parser.value
            except PartialJSONError as exc:
                self.stats.argument_parse_errors += 1
                log.debug("tool call %s arguments are not JSON: %s", part.id, exc)
        self._dirty = True
        if part.state == "awaiting-input":
            self._set_state(tool.message, part, "input-streaming")

    def _complete_tool(self, tool: _Tool, override: Any) -> None:
        part = tool.part
        if part.state not in ("awaiting-input", "input-streaming"):
            return
        parser = tool.parser
        if override is not None:
            part.input = override
        else:
            try:
                complete = parser.close()
            except PartialJSONError:
                complete = False
            # A cut-off text never yields an input: a truncated tool call is never executed.
            part.input = parser.value if complete else parse_arguments(part.arguments)
        self._set_state(tool.message, part, "input-complete")

    def _tool_end(self, event: ToolCallEnd) -> None:
        tool = self._tools.get(event.tool_call_id)
        if tool is None:
            self.stats.dropped_args += 1
            return
        if event.metadata:
            tool.part.provider_metadata = merge_metadata(tool.part.provider_metadata, event.metadata)
            self._dirty = True
        shared = event.arguments
        if shared is not None and shared is not tool.part.arguments and shared == tool.part.arguments:
            # The engine's string of the same text: keep it and free ours (arguments can be megabytes).
            tool.part.arguments = shared
        self._complete_tool(tool, event.input)
        if event.result is not None:  # the older form: TOOL_CALL_END carries the result
            content = event.result if isinstance(event.result, str) else tool_output_text(event.result)
            self._apply_result(tool.message, tool.part, tool.part.id, _output_of(content), content, None)

    def _tool_result(self, event: ToolCallResult) -> None:
        files = [file_to_ui(FilePayload.from_value(f).part) for f in event.files or ()]
        found = self._find_call(lambda p: p.id == event.tool_call_id)
        output = _output_of(event.content)
        if found is None:
            self.stats.orphan_results += 1
            part = ToolResultUIPart(event.tool_call_id, event.content, "error" if event.error else "complete",
                                    event.error, provider_metadata=event.metadata, files=files)
            self._push(part)
        else:
            message, call = found
            self._apply_result(message, call, call.id, output, event.content, event.error, event.metadata, files)
        self._reasoning_parts = {}  # the next model call's reasoning is a new block

    def _apply_result(
        self,
        message: UIMessage,
        call: ToolCallUIPart,
        tool_call_id: str,
        output: Any,
        content: str,
        error: str | None,
        metadata: dict[str, Any] | None = None,
        files: list[FileUIPart] | None = None,
    ) -> None:
        tool = self._tools.get(tool_call_id)
        if tool is not None:
            self._complete_tool(tool, None)
        call.output = output
        part = ToolResultUIPart(tool_call_id, content, "error" if error is not None else "complete", error,
                                provider_metadata=metadata, files=files or [])
        target = None if self._finalized else self._target_of(message)
        if target is not None:
            self._push(part, target)
        else:  # a call of an earlier message (a client tool answered after its stream ended)
            message.parts.append(part)
            self._dirty = True
        self._set_state(message, call, "output-error" if error is not None else "output-available")

    def _find_call(self, match: Callable[[ToolCallUIPart], bool]) -> tuple[UIMessage, ToolCallUIPart] | None:
        for message in reversed(self.messages):
            for part in message.parts:
                if isinstance(part, ToolCallUIPart) and match(part):
                    return message, part
        return None

    def _set_state(self, message: UIMessage, part: ToolCallUIPart, state: ToolCallState) -> None:
        if part.state != state:
            part.state = state
            self._dirty = True
            self._state_changed(message, part)

    def _state_changed(self, message: UIMessage, part: ToolCallUIPart) -> None:
        if self.on_tool_call_state_change is not None:
            self.on_tool_call_state_change(message.id, part.id, part.state, part.arguments)

    # -- agent state, custom events -----------------------------------------------------------------
    def _state_snapshot(self, event: StateSnapshot) -> None:
        self.state = event.snapshot
        if self.on_state_change is not None:
            self.on_state_change(self.state)

    def _state_delta(self, event: StateDelta) -> None:
        try:
            self.state = _apply_json_patch(self.state, event.delta)
        except ValueError:
            self.stats.state_patch_errors += 1
            log.warning("STATE_DELTA did not apply to the state; dropped")
            return
        if self.on_state_change is not None:
            self.on_state_change(self.state)

    def _custom(self, event: Custom) -> None:
        # Parsed before any change: a malformed value raises with the messages untouched.
        payload = parse_custom(event)
        if isinstance(payload, ToolInputAvailablePayload):
            request = ToolInputRequest(payload.tool_call_id, payload.tool_name, payload.input)
            tool = self._tools.get(request.tool_call_id)
            if tool is not None:
                self._complete_tool(tool, request.input)
            if self.on_tool_call is not None:
                self.on_tool_call(request)
        elif isinstance(payload, ApprovalRequestedPayload):
            self._approval_requested(payload)
        elif isinstance(payload, ApprovalRespondedPayload):
            self._approval_responded(payload)
        elif isinstance(payload, ToolCallRepairedPayload):
            self._tool_call_repaired(payload)
        elif isinstance(payload, SourcePayload):
            self._attach(source_to_ui(payload.part))
        elif isinstance(payload, FilePayload):
            self._attach(file_to_ui(payload.part))
        elif self.on_custom_event is not None:
            self.on_custom_event(event.name, event.value)

    def _attach(self, part: SourceUIPart | FileUIPart) -> None:
        # Not _push: a citation arriving mid-text must not split the text part it annotates.
        self._ensure_message().parts.append(part)
        self._dirty = True

    def _approval_requested(self, payload: ApprovalRequestedPayload) -> None:
        tool_call_id = payload.tool_call_id
        tool = self._tools.get(tool_call_id)
        found = (tool.message, tool.part) if tool is not None else self._find_call(lambda p: p.id == tool_call_id)
        if found is not None:
            message, part = found
            if tool is not None:
                self._complete_tool(tool, payload.input)
            part.approval = ToolApproval(payload.approval_id, True)
            self._set_state(message, part, "approval-requested")
        else:
            self.stats.orphan_results += 1
        if self.on_approval_request is not None:
            self.on_approval_request(
                ApprovalRequest(tool_call_id, payload.tool_name, payload.input, payload.approval_id)
            )

    def _approval_responded(self, payload: ApprovalRespondedPayload) -> None:
        # The engine's approve callback answered (server side): record the answer on the part.
        tool_call_id = payload.tool_call_id
        found = self._find_call(lambda p: p.id == tool_call_id)
        if found is None:
            self.stats.orphan_results += 1
            return
        message, part = found
        if part.approval is None:
            part.approval = ToolApproval(payload.approval_id or f"approval_{tool_call_id}")
        part.approval.approved = payload.approved
        self._dirty = True
        if not part.has_output:
            self._set_state(message, part, "approval-responded")

    def _tool_call_repaired(self, payload: ToolCallRepairedPayload) -> None:
        # repair_tool_call replaced the streamed name and arguments: show the call that runs.
        tool_call_id = payload.tool_call_id
        tool = self._tools.get(tool_call_id)
        found = (tool.message, tool.part) if tool is not None else self._find_call(lambda p: p.id == tool_call_id)
        if found is None:
            self.stats.orphan_results += 1
            return
        message, part = found
        if tool is not None:
            self._complete_tool(tool, None)
        if payload.tool_name:
            part.name = payload.tool_name
        new_input = payload.input
        part.input = new_input
        part.arguments = json.dumps(new_input, ensure_ascii=False) if new_input is not None else part.arguments
        self._dirty = True
        self._state_changed(message, part)

    # -- snapshots and activities (AG-UI "State Management" and "Activity" events) --------------------
    def _messages_snapshot(self, event: MessagesSnapshot) -> None:
        """Reconcile the list with the producer's messages (see the module docstring)."""
        self._end_all_segments()
        own = (None, self._own_run)
        snapshot = [m for m in event.messages if m.subagent_run_id in own]
        nested: dict[str, list[AGUIMessage]] = {}
        for m in event.messages:
            if m.subagent_run_id not in own and m.subagent_run_id in self.subagents:
                nested.setdefault(m.subagent_run_id, []).append(m)
        for run_id, messages in nested.items():  # a sub-run's messages: that run's list, not ours
            child = self.subagents[run_id]._processor
            assert child is not None
            child._apply(MessagesSnapshot(messages))
        if any(m.role == "activity" for m in snapshot):  # the snapshot declares the whole activity set
            kept = {m.id for m in snapshot if m.role == "activity"}
            for mid in [a for a in self.activities if a not in kept]:
                del self.activities[mid]
        by_id = {m.id: m for m in self.messages}
        incoming = _snapshot_messages(snapshot, self)
        wanted = {m.id for m in incoming}
        merged: list[UIMessage] = [m for m in self.messages if m.id in wanted]
        fresh: list[UIMessage] = []
        for new in incoming:
            old = by_id.get(new.id)
            if old is not None:
                _merge_message(old, new)
            else:
                fresh.append(new)
        self.messages[:] = merged + fresh
        for result in _snapshot_results(snapshot):
            self._snapshot_result(result)
        # Streaming bookkeeping that points at a message the snapshot dropped is forgotten.
        live = {id(m) for m in self.messages}
        for target in (self._loop, *self._runs.values()):
            if target.message is not None and id(target.message) not in live:
                target.message = None
                target.message_id = None
        self._targets = {k: t for k, t in self._targets.items() if t.message is None or id(t.message) in live}
        self._open = {k: t for k, t in self._open.items() if k in self._targets}
        for tid in [k for k, tool in self._tools.items()
                    if id(tool.message) not in live or not any(p is tool.part for p in tool.message.parts)]:
            del self._tools[tid]
        self._reasoning_parts = {}
        self._dirty = True

    def _snapshot_result(self, message: AGUIMessage) -> None:
        """A ``tool`` message of a snapshot: the result of a call some assistant message holds."""
        assert message.tool_call_id is not None
        content = message.content if isinstance(message.content, str) else tool_output_text(message.content)
        found = self._find_call(lambda p: p.id == message.tool_call_id)
        if found is None:
            self.stats.orphan_results += 1
            log.warning("MESSAGES_SNAPSHOT: tool message %r answers no known tool call", message.id)
            return
        owner, call = found
        state: ToolCallState = "output-error" if message.error is not None else "output-available"
        for part in owner.parts:
            if isinstance(part, ToolResultUIPart) and part.tool_call_id == call.id:
                part.content, part.error = content, message.error
                part.state = "error" if message.error is not None else "complete"
                break
        else:
            owner.parts.append(ToolResultUIPart(call.id, content, "error" if message.error is not None else "complete",
                                                message.error, provider_metadata=message.metadata))
        call.output = _output_of(content)
        self._set_state(owner, call, state)

    def _activity_snapshot(self, event: ActivitySnapshot) -> None:
        current = self.activities.get(event.message_id)
        if current is not None and event.replace is False:
            return
        if current is None:
            current = self.activities[event.message_id] = Activity(event.message_id, event.activity_type, {})
        current.activity_type = event.activity_type
        current.content = copy.deepcopy(event.content)
        if event.metadata:
            current.metadata = merge_metadata(current.metadata, event.metadata)
        if self.on_activity_change is not None:
            self.on_activity_change(current)

    def _activity_delta(self, event: ActivityDelta) -> None:
        current = self.activities.get(event.message_id)
        if current is None:
            self._unusable(f"ACTIVITY_DELTA for unknown activity {event.message_id!r}")
            return
        try:
            content = _apply_json_patch(copy.deepcopy(current.content), event.patch)
        except ValueError as exc:
            self.stats.state_patch_errors += 1
            log.warning("ACTIVITY_DELTA did not apply to activity %r: %s", event.message_id, exc)
            return
        current.content = content
        current.activity_type = event.activity_type
        if self.on_activity_change is not None:
            self.on_activity_change(current)

# One typed handler per event class the processor applies. TEXT_MESSAGE_CONTENT and TOOL_CALL_ARGS, one per
# chunk, cost this one dict lookup and one call.
_HANDLERS: dict[type[BaseEvent], Callable[[StreamProcessor, Any], None]] = {
    TextMessageContent: StreamProcessor._text_content,
    ToolCallArgs: StreamProcessor._tool_args,
    ReasoningMessageContent: StreamProcessor._reasoning_content,
    TextMessageStart: StreamProcessor._text_start,
    TextMessageEnd: StreamProcessor._text_end,
    TextMessageChunk: StreamProcessor._text_chunk,
    ToolCallStart: StreamProcessor._tool_start,
    ToolCallEnd: StreamProcessor._tool_end,
    ToolCallChunk: StreamProcessor._tool_chunk,
    ToolCallResult: StreamProcessor._tool_result,
    ReasoningStart: StreamProcessor._reasoning_block,
    ReasoningMessageStart: StreamProcessor._reasoning_block,
    ReasoningMessageEnd: StreamProcessor._reasoning_block,
    ReasoningMessageChunk: StreamProcessor._reasoning_chunk,
    ReasoningEncryptedValue: StreamProcessor._encrypted,
    RunStarted: StreamProcessor._run_started,
    StepStarted: StreamProcessor._step,
    StepFinished: StreamProcessor._step_finished,
    RunFinished: StreamProcessor._run_finished,
    RunError: StreamProcessor._run_error,
    Custom: StreamProcessor._custom,
    StateSnapshot: StreamProcessor._state_snapshot,
    StateDelta: StreamProcessor._state_delta,
    MessagesSnapshot: StreamProcessor._messages_snapshot,
    ActivitySnapshot: StreamProcessor._activity_snapshot,
    ActivityDelta: StreamProcessor._activity_delta,
}

# Events the processor reads and that change nothing in the UI state: they only publish held-back text.
# REASONING_END closes a block the parts already hold; RAW is a provider's own event.
_IGNORED: frozenset[type[BaseEvent]] = frozenset({ReasoningEnd, Raw})
# SUBAGENT_* open and end a sub-run (StreamProcessor.subagents), before any routing by subagentRunId.
_SUBAGENT_EVENTS: frozenset[type[BaseEvent]] = frozenset({SubagentStarted, SubagentFinished, SubagentError})


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise ValueError(f"not a JSON Pointer: {path!r:.100}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")] if path else []


def _get(doc: Any, path: Any) -> Any:
    value = doc
    try:
        for token in _pointer(path):
            value = value[int(token)] if isinstance(value, list) else value[token]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"JSON Pointer {path!r:.100} does not exist") from exc
    return value


def _apply_json_patch(doc: Any, ops: list[Any]) -> Any:
    """RFC 6902 JSON Patch on ``doc`` (in place; returns the document): ``add``, ``replace`` and ``remove``
    through :func:`hookstream._agentloop.partial_output.apply_patch`, ``move``, ``copy`` and ``test`` here.
    Raises :class:`ValueError` for an operation that does not apply (those before it stay applied)."""
    if not isinstance(ops, list):
        raise ValueError("a JSON Patch is a list of operations")
    for op in ops:
        kind = op.get("op") if isinstance(op, dict) else None
        if kind == "test":
            if _get(doc, op.get("path")) != op.get("value"):
                raise ValueError(f"JSON Patch test failed at {op.get('path')!r:.100}")
        elif kind in ("move", "copy"):
            value = copy.deepcopy(_get(doc, op.get("from")))
            if kind == "move":
                doc = apply_patch(doc, [{"op": "remove", "path": op.get("from")}])
            doc = apply_patch(doc, [{"op": "add", "path": op.get("path"), "value": value}])
        else:
            doc = apply_patch(doc, [op])
    return doc


def _user_part(item: Any) -> UIPart | None:
    """One AG-UI input part (``text`` or a media part with a ``data``/``url`` source) as a UI part; a
    part the UI cannot show (a provider ``file`` handle, an unknown type) is ``None``."""
    if not isinstance(item, dict):
        return None
    if item.get("type") == "text":
        return TextUIPart(str(item.get("text", "")), item.get("metadata") if isinstance(item.get("metadata"), dict)
                          else None)
    source = item.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("value"), str):
        return None
    media_type = str(source.get("mimeType") or "application/octet-stream")
    if source.get("type") == "data":
        return FileUIPart(media_type, f"data:{media_type};base64,{source['value']}")
    if source.get("type") == "url":
        return FileUIPart(media_type, source["value"])
    return None


def _snapshot_messages(messages: list[AGUIMessage], processor: StreamProcessor) -> list[UIMessage]:
    """AG-UI messages as UI messages: ``user``/``system``/``developer`` (as ``system``) with their text and
    files, ``assistant`` with its text and tool calls (state ``input-complete``), a ``reasoning`` message as
    a thinking part of the next assistant message (of the previous one when none follows). ``tool``
    messages become results afterwards (:func:`_snapshot_results`); ``activity`` messages go to
    :attr:`StreamProcessor.activities`."""
    out: list[UIMessage] = []
    reasoning: list[ReasoningUIPart] = []
    for m in messages:
        if m.role == "tool":
            continue
        if m.role == "activity":
            content = m.content if isinstance(m.content, dict) else {}
            activity = processor.activities.get(m.id)
            if activity is None:
                activity = processor.activities[m.id] = Activity(m.id, m.activity_type or "", {})
            activity.activity_type, activity.content = m.activity_type or "", copy.deepcopy(content)
            if processor.on_activity_change is not None:
                processor.on_activity_change(activity)
            continue
        if m.role == "reasoning":
            meta = {"encrypted": {"value": m.encrypted_value}} if m.encrypted_value else None
            reasoning.append(ReasoningUIPart(str(m.content or ""), merge_metadata(meta, m.metadata or {}) or None))
            continue
        parts: list[UIPart] = []
        if m.role == "assistant":
            parts.extend(reasoning)
            reasoning = []
            if m.content:
                parts.append(TextUIPart(str(m.content)))
            for call in m.tool_calls or ():
                args = call.function.arguments
                parts.append(ToolCallUIPart(call.id, call.function.name, args, "input-complete",
                                            parse_arguments(args), provider_metadata=call.metadata))
            out.append(UIMessage(m.id, "assistant", parts))
            continue
        if isinstance(m.content, str):
            parts.append(TextUIPart(m.content))
        elif isinstance(m.content, list):
            parts.extend(p for p in map(_user_part, m.content) if p is not None)
        out.append(UIMessage(m.id, "user" if m.role == "user" else "system", parts))
    if reasoning:
        last = next((u for u in reversed(out) if u.role == "assistant"), None)
        if last is not None:
            last.parts.extend(reasoning)
    return out


def _snapshot_results(messages: list[AGUIMessage]) -> list[AGUIMessage]:
    return [m for m in messages if m.role == "tool"]


def _merge_message(old: UIMessage, new: UIMessage) -> None:
    """Bring ``old`` (kept, same object, so streaming bookkeeping stays valid) to the snapshot's ``new``
    version of it. The snapshot decides the role, the text and which tool calls exist with which
    arguments; what it cannot carry stays: parts the text equals, thinking, sources and files of an
    assistant message, tool-call state, approval and output, and calls it omits (still streaming)."""
    old.role = new.role
    new_text = "".join(p.content for p in new.parts if isinstance(p, TextUIPart))
    if old.role != "assistant":
        if old.text != new_text or any(isinstance(p, FileUIPart) for p in new.parts):
            old.parts[:] = new.parts
        return
    if old.text != new_text:
        first = next((i for i, p in enumerate(old.parts) if isinstance(p, TextUIPart)), 0)
        rest: list[UIPart] = [p for p in old.parts if not isinstance(p, TextUIPart)]
        text: list[UIPart] = [TextUIPart(new_text)] if new_text else []
        old.parts[:] = rest[:first] + text + rest[first:]
    calls = {p.id: p for p in old.parts if isinstance(p, ToolCallUIPart)}
    has_thinking = any(isinstance(p, ReasoningUIPart) for p in old.parts)
    for part in new.parts:
        if isinstance(part, ToolCallUIPart):
            mine = calls.get(part.id)
            if mine is None:
                old.parts.append(part)
            elif mine.arguments != part.arguments and mine.state not in ("awaiting-input", "input-streaming"):
                mine.name, mine.arguments, mine.input = part.name, part.arguments, part.input
        elif isinstance(part, ReasoningUIPart) and not has_thinking:
            old.parts.insert(0, part)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _output_of(content: str) -> Any:
    """A tool result's text as a value: JSON text becomes its value, any other text stays text."""
    try:
        return json.loads(content, parse_constant=_reject_constant)
    except ValueError:
        return content
