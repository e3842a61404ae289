"""The values the agent loop hands to callbacks and takes back: step settings, repair requests,
callbacks, pending approvals and the resume value.

* ``prepare_step(StepStart) -> StepSettings | dict | None`` runs before each model call and may change
  that call's model, tools, ``tool_choice``, active tools, system prompt and messages.
* ``repair_tool_call(RepairRequest) -> ToolCallPart | None`` gets an unknown tool or input that failed
  its JSON Schema; a returned call replaces the broken one (same tool call id), ``None`` sends the
  model an error result.
* ``approve(ToolCallPart) -> bool`` decides a tool that needs approval synchronously. Without it the
  run ends with outcome ``interrupt``; :class:`Resume` continues it.
* :class:`Callbacks` observe the run; they fire on success, on error and on abort.

Thread safety: plain values; callbacks are called on the thread that iterates the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .accumulate import StepResult
from .messages import Message, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from .engine import RunResult
    from .provider import Provider
    from .tools import Tool

__all__ = [
    "Callbacks",
    "PendingApproval",
    "RepairRequest",
    "Resume",
    "StepSettings",
    "StepStart",
    "approval_id",
]


def approval_id(tool_call_id: str) -> str:
    """The approval id of a tool call: ``approval_<tool call id>`` (stable, so a resume needs no state)."""
    return f"approval_{tool_call_id}"


@attrs.define(slots=True)
class StepStart:
    """What a step is about to send: ``number`` (1-based), earlier ``steps`` of this run, the
    conversation ``messages``, and the ``model``, ``tools`` and ``tool_choice`` it would use."""

    number: int
    steps: list[StepResult]
    messages: list[Message]
    model: str
    tools: dict[str, Tool]
    tool_choice: str | dict[str, Any] | None


@attrs.define(slots=True)
class StepSettings:
    """Changes for one step; ``None`` keeps the run's setting.

    ``model``: a model name of the same provider, ``"provider:model"``, or a Provider instance.
    ``tools``: replaces the tool set (functions, Tool objects or dicts). ``active_tools``: names of the
    tools offered and runnable in this step. ``system``: replaces the system prompt of this request.
    ``messages``: sent instead of the conversation for this request only (the history is unchanged).
    """

    model: str | Provider | None = None
    tools: Iterable[Any] | dict[str, Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    active_tools: Sequence[str] | None = None
    system: str | None = None
    messages: Sequence[Message] | None = None

    @classmethod
    def coerce(cls, value: StepSettings | dict[str, Any] | None) -> StepSettings:
        if value is None:
            return cls()
        if isinstance(value, StepSettings):
            return value
        return cls(**value)


@attrs.define(slots=True)
class RepairRequest:
    """A tool call that cannot run as it is: ``problem`` says why (unknown tool, arguments not JSON,
    schema mismatch); ``tools`` are the tools of the step; ``messages`` the conversation so far."""

    call: ToolCallPart
    problem: str
    tools: dict[str, Tool]
    messages: list[Message]


@attrs.define(slots=True, frozen=True)
class PendingApproval:
    """A tool call waiting for a yes/no: ``approval_id`` (AG-UI interrupt id) and the ``call``."""

    approval_id: str
    call: ToolCallPart


@attrs.define(slots=True)
class Resume:
    """How ``chat(..., resume=...)`` continues a run that ended waiting for approvals or client tools.

    ``messages`` is the interrupted run's ``RunResult.messages`` (the conversation up to and including
    the assistant message with the pending tool calls, plus any results already produced); when
    ``None``, ``chat``'s ``messages_or_prompt`` is used. ``approvals`` maps an approval id (or the tool
    call id) to True (run the tool) or False (the model gets a denial result). ``tool_outputs`` maps a
    client tool's call id to its output (any JSON value, or a :class:`ToolResultPart` to mark an
    error). Calls with no answer stay pending and the resumed run ends the same way again.
    """

    messages: list[Message] | None = None
    approvals: dict[str, bool] = attrs.Factory(dict)
    tool_outputs: dict[str, Any] = attrs.Factory(dict)

    @classmethod
    def coerce(cls, value: Resume | dict[str, Any] | list[dict[str, Any]]) -> Resume:
        """A Resume from itself, a dict of its fields, or AG-UI 1.0 ``RunAgentInput.resume`` entries
        ``[{"interruptId", "status": "resolved" | "cancelled", "payload"}]``: ``resolved`` approves
        unless ``payload.approved`` is false, ``cancelled`` denies. Raises :class:`ValueError`."""
        if isinstance(value, Resume):
            return value
        if isinstance(value, dict):
            return cls(value.get("messages"), dict(value.get("approvals") or {}), dict(value.get("tool_outputs") or {}))
        approvals: dict[str, bool] = {}
        for entry in value:
            if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
                raise ValueError(f"a resume entry needs an interruptId, got {entry!r:.200}")
            payload = entry.get("payload")
            approved = entry.get("status", "resolved") == "resolved"
            if approved and isinstance(payload, dict) and "approved" in payload:
                approved = bool(payload["approved"])
            approvals[entry["interruptId"]] = approved
        return cls(None, approvals)

    def approval_for(self, tool_call_id: str) -> bool | None:
        value = self.approvals.get(approval_id(tool_call_id), self.approvals.get(tool_call_id))
        return None if value is None else bool(value)

    def output_for(self, call: ToolCallPart) -> ToolResultPart | None:
        if call.id not in self.tool_outputs:
            return None
        out = self.tool_outputs[call.id]
        if isinstance(out, ToolResultPart):
            return ToolResultPart(call.id, call.name, out.output, out.is_error, out.provider_metadata)
        return ToolResultPart(call.id, call.name, out)


@attrs.define(slots=True)
class Callbacks:
    """Observers of a run, each optional. Exceptions they raise are logged and ignored.

    * ``on_chunk(event)``: every content event of a model call (text, reasoning, tool-call events)
      and every ``TOOL_CALL_RESULT``, as it happens (also when ``stream_tool_call_responses=False``).
    * ``on_step_start(StepStart)``: before each model call's request.
    * ``on_step_finish(StepResult)``: after each step and its tools (number, text, tool calls, tool
      results, finish reason, usage; ``error`` set when it failed), also for a failed or aborted step.
    * ``on_finish(RunResult)``: once at the end of every run (all steps, summed usage, ``outcome``).
    * ``on_error(exception)``: when the run ends with ``RUN_ERROR`` (before ``on_finish``).
    * ``on_abort(RunResult)``: when the run is cancelled (before ``on_finish``).
    """

    on_chunk: Callable[[Any], None] | None = None
    on_step_start: Callable[[StepStart], None] | None = None
    on_step_finish: Callable[[StepResult], None] | None = None
    on_finish: Callable[[RunResult], None] | None = None
    on_error: Callable[[BaseException], None] | None = None
    on_abort: Callable[[RunResult], None] | None = None
