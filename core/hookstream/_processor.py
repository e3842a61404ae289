"""StreamProcessor: AG-UI events in, :class:`~hookstream.UIMessage` list out; the single owner of
UI state.

Follows TanStack AI's chat-stream ``StreamProcessor`` (``@tanstack/ai``
``activities/chat/stream/processor.ts`` and its architecture document), with these rules:

* One assistant message per agent loop, created lazily with its first part (a run with no content
  leaves no empty message). It takes every step of the loop, in both stream forms: the adapters'
  per-call form (``RUN_STARTED … RUN_FINISHED`` per model call) and the engine's single run
  (``STEP_STARTED``/``STEP_FINISHED`` per call, ``TOOL_CALL_RESULT`` and ``CUSTOM`` inside, one
  ``RUN_FINISHED``). :meth:`StreamProcessor.finalize` ends it; the next event starts a new one.
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
  Arguments are parsed incrementally (``hookstream._partial_json``); ``TOOL_CALL_END.input``
  overrides them. When ``TOOL_CALL_END.arguments`` (set by the engine) holds the same text, the part
  keeps that string and drops its own, so the text is held once in the process. A result
  (``TOOL_CALL_RESULT``, or the older ``TOOL_CALL_END`` with ``result``) sets the call's ``output`` and
  appends a tool-result part.
* The engine's ``CUSTOM`` events are read through :func:`~hookstream.parse_custom` (shapes in
  :mod:`hookstream._custom`; a value without its event's shape raises
  :class:`~hookstream.MalformedCustomEventError`). ``tool-input-available`` (value ``{"toolCallId",
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
* Agent state: ``STATE_SNAPSHOT`` replaces :attr:`StreamProcessor.state`, ``STATE_DELTA`` applies its
  JSON Patch operations (``add``/``replace``/``remove``; a delta that does not apply is counted in
  :attr:`StreamProcessor.stats` and dropped). The state lives across agent loops, as AG-UI state does.
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
* ``on_error(error)``: on ``RUN_ERROR``, with a :class:`RunFailedError` (``code``, ``message``).
* ``on_tool_call(request)``: :class:`ToolInputRequest` for a client tool.
* ``on_approval_request(request)``: :class:`ApprovalRequest`.
* ``on_custom_event(name, value)``: any other ``CUSTOM`` event (``loop-stopped`` included).
* ``on_state_change(state)``: after each ``STATE_SNAPSHOT``/``STATE_DELTA``, with the live state.

Threads: events are fed from one thread. A timer-driven strategy (debounce, throttle's trailing
edge) publishes from its timer thread, so ``on_text_update`` and ``on_messages_change`` may arrive on
that thread; every state change happens under the re-entrant :attr:`StreamProcessor.lock`, so callbacks
never run concurrently and may call back into the processor. Do not block inside a callback waiting for
another thread that uses the processor.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ._accumulate import merge_metadata
from ._convert import file_to_ui, new_message_id, source_to_ui, tool_call_to_model
from ._custom import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    FilePayload,
    SourcePayload,
    ToolCallRepairedPayload,
    ToolInputAvailablePayload,
    parse_custom,
)
from ._errors import RunFailedError, UnknownPluginError, UnknownToolCallError
from ._events import (
    BaseEvent,
    Custom,
    Outcome,
    ReasoningEncryptedValue,
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
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    Usage,
    from_dict,
    parse_arguments,
)
from ._messages import ToolCallPart, tool_output_text
from ._partial_json import PartialJSONError, PartialJSONParser
from ._partial_output import STATE_KEY, apply_patch
from ._strategies import ChunkStrategy, ImmediateStrategy
from ._ui import (
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
    "ApprovalRequest",
    "ProcessorResult",
    "ProcessorStats",
    "RunFailedError",
    "StreamProcessor",
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
    state_patch_errors: int = 0  # STATE_DELTA events whose JSON Patch did not apply to the state


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


StrategySpec = ChunkStrategy | str | None


def resolve_strategy(strategy: StrategySpec) -> ChunkStrategy:
    """``None`` → :class:`ImmediateStrategy`; a name → the registered factory called with no options
    (:func:`hookstream.get_registry`, kind ``chunk_strategies``); an object → itself.

    Raises :class:`~hookstream.UnknownPluginError` for an unknown name and :class:`TypeError`
    for an object without ``should_emit``/``reset``.
    """
    if strategy is None:
        return ImmediateStrategy()
    if isinstance(strategy, str):
        from ._registry import get_registry

        factory = get_registry().chunk_strategy(strategy)
        made = factory()
        if not isinstance(made, ChunkStrategy):
            raise UnknownPluginError(f"chunk strategy {strategy!r} did not build a ChunkStrategy: {made!r}")
        return made
    if not isinstance(strategy, ChunkStrategy):
        raise TypeError(f"a chunk strategy needs should_emit(chunk, accumulated) and reset(): {strategy!r}")
    return strategy


class _Tool:
    """Bookkeeping of one streaming tool call (the part holds what the UI sees)."""

    __slots__ = ("message", "parser", "part")

    def __init__(self, part: ToolCallUIPart, message: UIMessage) -> None:
        self.part = part
        self.message = message
        self.parser = PartialJSONParser()


class StreamProcessor:
    """Events → UI messages. See the module docstring for rules, callbacks and threads.

    ``strategy``: ``None`` (immediate), a registered name (``"word-boundary"``) or an object.
    ``messages``: earlier UI messages (e.g. the conversation so far); the new assistant message is
    appended after them.

    Raises :class:`~hookstream.UnknownPluginError` for an unknown strategy name.
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
        self.state: Any = {}
        self.lock = threading.RLock()
        self.messages: list[UIMessage] = list(messages or [])
        self.stats = ProcessorStats()
        self._dirty = False
        self._new_loop()
        attach = getattr(self.strategy, "attach", None)
        if callable(attach):
            attach(self._timer_flush)

    # -- state of one agent loop ------------------------------------------------------------------
    def _new_loop(self) -> None:
        self._message: UIMessage | None = None
        self._message_id: str | None = None
        self._seg_part: TextUIPart | None = None
        self._seg_meta: dict[str, Any] | None = None
        self._pending = ""
        self._reasoning_parts: dict[str, ReasoningUIPart] = {}
        self._tools: dict[str, _Tool] = {}
        self._result = ProcessorResult()
        self._finalized = False

    # -- public API -------------------------------------------------------------------------------
    def process(self, events: Iterable[BaseEvent]) -> ProcessorResult:
        """Process every event, then :meth:`finalize`. Returns the result."""
        for event in events:
            self.process_chunk(event)
        return self.finalize()

    def process_chunk(self, event: BaseEvent | dict[str, Any]) -> None:
        """Apply one AG-UI event (an event object, or its JSON dict).

        Raises :class:`TypeError` for anything else, :class:`ValueError` for a dict of unknown type,
        :class:`~hookstream.MalformedCustomEventError` (a ``ValueError``) for an engine ``CUSTOM`` event
        whose value does not have its shape.
        """
        if isinstance(event, dict):
            event = from_dict(event)
        if not isinstance(event, BaseEvent):
            raise TypeError(f"expected an AG-UI event, got {type(event).__name__}")
        with self.lock:
            if self._finalized:
                self._new_loop()
            t = type(event)
            if self._pending and t is not TextMessageContent:
                self._publish()  # held-back text goes out before any non-text event
            handler = _HANDLERS.get(t)
            if handler is not None:
                handler(self, event)
            self._changed()

    def finalize(self) -> ProcessorResult:
        """End the agent loop: publish pending text, complete open tool calls (safety net), reset the
        strategy, fire ``on_stream_end``. Returns the result; calling it again returns the same result."""
        with self.lock:
            if self._finalized:
                return self._result
            self._end_segment()
            for tool in self._tools.values():
                self._complete_tool(tool, None)
            self._changed()
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

        Sets the tool call's output and state and appends a tool-result part to its message.
        Raises :class:`UnknownToolCallError` when no message holds that tool call.
        """
        with self.lock:
            found = self._find_call(lambda p: p.id == tool_call_id)
            if found is None:
                raise UnknownToolCallError(f"no tool call {tool_call_id!r} in the messages")
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

    # -- lifecycle and text handlers (see _HANDLERS) ----------------------------------------------
    def _new_call(self, event: RunStarted | StepStarted) -> None:
        self._end_segment()
        self._reasoning_parts = {}  # a new model call: its reasoning blocks are new parts

    def _step_finished(self, event: StepFinished) -> None:
        self._end_segment()
        if event.delta:  # the older TanStack form: reasoning text rides on STEP_FINISHED
            self._reasoning_delta(f"step:{event.step_name}", event.delta, None)

    def _text_start(self, event: TextMessageStart) -> None:
        self._end_segment()
        self._message_id = self._message_id or event.message_id
        self._seg_meta = event.metadata

    def _text_end(self, event: TextMessageEnd) -> None:
        part = self._seg_part
        if event.metadata and part is not None:
            part.provider_metadata = merge_metadata(part.provider_metadata, event.metadata)
            self._dirty = True
        self._end_segment()

    def _reasoning_content(self, event: ReasoningMessageContent) -> None:
        self._message_id = self._message_id or event.message_id
        self._reasoning_delta(event.message_id, event.delta, None)

    def _reasoning_block(self, event: ReasoningStart | ReasoningMessageStart | ReasoningMessageEnd) -> None:
        self._message_id = self._message_id or event.message_id
        if event.metadata:
            self._reasoning_delta(event.message_id, "", event.metadata)

    # -- messages and parts -----------------------------------------------------------------------
    def _ensure_message(self) -> UIMessage:
        if self._message is None:
            self._message = UIMessage(self._message_id or new_message_id(), "assistant")
            self.messages.append(self._message)
            self._dirty = True
        return self._message

    def _push(self, part: UIPart) -> UIMessage:
        """Append a part to the loop's message. A non-text part ends the text segment."""
        if not isinstance(part, TextUIPart):
            self._end_segment()
        msg = self._ensure_message()
        msg.parts.append(part)
        self._dirty = True
        return msg

    def _changed(self) -> None:
        if self._dirty:
            self._dirty = False
            if self.on_messages_change is not None:
                self.on_messages_change(self.messages)

    # -- text ---------------------------------------------------------------------------------------
    def _text_content(self, event: TextMessageContent) -> None:
        delta = event.delta
        if not delta:
            return
        # Grow the pending text in place: after the swap this frame holds the only reference.
        pending = self._pending
        self._pending = ""
        pending += delta
        self._pending = pending
        if self.strategy.should_emit(delta, pending):
            self._publish()

    def _publish(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = ""
        part = self._seg_part
        if part is None:
            part = self._seg_part = TextUIPart(pending, self._seg_meta)
            self._push(part)
            text = pending
        else:
            text = part.content
            part.content = ""  # drop the part's reference so += resizes in place
            text += pending
            part.content = text
            self._dirty = True
        if self.on_text_update is not None:
            self.on_text_update(self._ensure_message().id, text)

    def _end_segment(self) -> None:
        self._publish()
        if self._seg_part is not None or self._seg_meta is not None:
            self._seg_part = None
            self._seg_meta = None
            self.strategy.reset()

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

    # -- reasoning ----------------------------------------------------------------------------------
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

    # -- tool calls ---------------------------------------------------------------------------------
    def _tool_start(self, event: ToolCallStart) -> None:
        if event.tool_call_id in self._tools:
            self.stats.duplicate_starts += 1
            return
        part = ToolCallUIPart(event.tool_call_id, event.tool_call_name, provider_metadata=event.metadata)
        msg = self._push(part)
        self._tools[event.tool_call_id] = _Tool(part, msg)
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
        if message is self._message and not self._finalized:
            self._push(part)
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

    # -- run end, errors, custom events -------------------------------------------------------------
    def _run_finished(self, event: RunFinished) -> None:
        self._end_segment()
        for tool in self._tools.values():
            self._complete_tool(tool, None)
        r = self._result
        if event.finish_reason is not None:
            r.finish_reason = event.finish_reason
            r.raw_finish_reason = event.raw_finish_reason
        if event.usage is not None:
            r.usage = event.usage
        if event.outcome is not None:
            r.outcome = event.outcome

    def _run_error(self, event: RunError) -> None:
        self._end_segment()
        self._ensure_message()
        r = self._result
        r.finish_reason = "error"
        r.error = (event.code or "error", event.message)
        if event.usage is not None:
            r.usage = event.usage
        if self.on_error is not None:
            self.on_error(RunFailedError(event.message, event.code))

    def _state_snapshot(self, event: StateSnapshot) -> None:
        self.state = event.snapshot
        if self.on_state_change is not None:
            self.on_state_change(self.state)

    def _state_delta(self, event: StateDelta) -> None:
        try:
            self.state = apply_patch(self.state, event.delta)
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


# One typed handler per event class the processor applies; other events (ReasoningEnd, state and
# activity events...) only publish held-back text. TEXT_MESSAGE_CONTENT and TOOL_CALL_ARGS, one per
# chunk, cost this one dict lookup and one call.
_HANDLERS: dict[type[BaseEvent], Callable[[StreamProcessor, Any], None]] = {
    TextMessageContent: StreamProcessor._text_content,
    ToolCallArgs: StreamProcessor._tool_args,
    ReasoningMessageContent: StreamProcessor._reasoning_content,
    TextMessageStart: StreamProcessor._text_start,
    TextMessageEnd: StreamProcessor._text_end,
    ToolCallStart: StreamProcessor._tool_start,
    ToolCallEnd: StreamProcessor._tool_end,
    ToolCallResult: StreamProcessor._tool_result,
    ReasoningStart: StreamProcessor._reasoning_block,
    ReasoningMessageStart: StreamProcessor._reasoning_block,
    ReasoningMessageEnd: StreamProcessor._reasoning_block,
    ReasoningEncryptedValue: StreamProcessor._encrypted,
    RunStarted: StreamProcessor._new_call,
    StepStarted: StreamProcessor._new_call,
    StepFinished: StreamProcessor._step_finished,
    RunFinished: StreamProcessor._run_finished,
    RunError: StreamProcessor._run_error,
    Custom: StreamProcessor._custom,
    StateSnapshot: StreamProcessor._state_snapshot,
    StateDelta: StreamProcessor._state_delta,
}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _output_of(content: str) -> Any:
    """A tool result's text as a value: JSON text becomes its value, any other text stays text."""
    try:
        return json.loads(content, parse_constant=_reject_constant)
    except ValueError:
        return content
