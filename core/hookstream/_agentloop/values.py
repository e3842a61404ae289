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

from .._events import Usage
from .._messages import FilePart, Message, SourcePart, ToolCallPart, ToolResultPart
from .._stream.accumulate import StepResult
from .._stream.transport import DEFAULT_MAX_EVENT_BYTES

if TYPE_CHECKING:
    from .._principal import Principal
    from .._stream.provider import Provider
    from .tools import Tool

__all__ = [
    "Callbacks",
    "LoopSettings",
    "PendingApproval",
    "RepairRequest",
    "Resume",
    "RunResult",
    "StepSettings",
    "StepStart",
    "approval_id",
]


def approval_in_messages(call: ToolCallPart) -> bool | None:
    """The approval answer a client sent inside the conversation for ``call``: ``True`` / ``False``, or
    ``None`` when there is none. It rides in ``call.provider_metadata["hookstream"]["approval"]``
    (``{"approved": bool, "reason"?: str}``), where the AG-UI and AI SDK message readers put an
    approval answered in the client (AI SDK 6 ``addToolApprovalResponse``, a tool call's ``approval``
    in AG-UI messages)."""
    approval = _approval_meta(call)
    return bool(approval["approved"]) if approval is not None else None


def reason_in_messages(call: ToolCallPart) -> str | None:
    """The reason a client sent with its approval answer for ``call`` (see :func:`approval_in_messages`)."""
    approval = _approval_meta(call)
    reason = approval.get("reason") if approval is not None else None
    return reason if isinstance(reason, str) and reason else None


def _approval_meta(call: ToolCallPart) -> dict[str, Any] | None:
    meta = (call.provider_metadata or {}).get("hookstream")
    approval = meta.get("approval") if isinstance(meta, dict) else None
    return approval if isinstance(approval, dict) and isinstance(approval.get("approved"), bool) else None


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
    ``reasons`` maps an approval id (or call id) to the text the user gave with a denial; the model
    receives it in the denial result.
    """

    messages: list[Message] | None = None
    approvals: dict[str, bool] = attrs.Factory(dict)
    tool_outputs: dict[str, Any] = attrs.Factory(dict)
    reasons: dict[str, str] = attrs.Factory(dict)

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
        reasons: dict[str, str] = {}
        for entry in value:
            if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
                raise ValueError(f"a resume entry needs an interruptId, got {entry!r:.200}")
            payload = entry.get("payload")
            approved = entry.get("status", "resolved") == "resolved"
            if approved and isinstance(payload, dict) and "approved" in payload:
                approved = bool(payload["approved"])
            approvals[entry["interruptId"]] = approved
            if isinstance(payload, dict) and isinstance(payload.get("reason"), str) and payload["reason"]:
                reasons[entry["interruptId"]] = payload["reason"]
        return cls(None, approvals, reasons=reasons)

    def reason_for(self, tool_call_id: str) -> str | None:
        """The reason given with the answer for ``tool_call_id`` (by approval id or call id), if any."""
        return self.reasons.get(approval_id(tool_call_id), self.reasons.get(tool_call_id))

    def approval_for(self, tool_call_id: str) -> bool | None:
        value = self.approvals.get(approval_id(tool_call_id), self.approvals.get(tool_call_id))
        return None if value is None else bool(value)

    def output_for(self, call: ToolCallPart) -> ToolResultPart | None:
        if call.id not in self.tool_outputs:
            return None
        out = self.tool_outputs[call.id]
        if isinstance(out, ToolResultPart):
            return ToolResultPart(call.id, call.name, out.output, out.is_error, out.provider_metadata,
                                  files=list(out.files))
        return ToolResultPart(call.id, call.name, out)


@attrs.define(slots=True)
class Callbacks:
    """Observers of a run, each optional. Exceptions they raise are logged and ignored. All but ``on_chunk``
    are called by a built-in run plugin on the run hooks (``on_step_finish`` from ``hookstream_step_end``,
    ``on_finish`` from ``hookstream_run_end``...), so they see a step as every other plugin left it.

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


@attrs.define(slots=True, frozen=True)
class LoopSettings:
    """How the agent loop runs, beyond ``chat()``'s common arguments; every field is optional.

    * ``prepare_step(StepStart) -> StepSettings | dict | None``: change a step's model, tools,
      ``tool_choice``, active tools, system prompt or messages before its request.
    * ``repair_tool_call(RepairRequest) -> ToolCallPart | None``: fix a call to an unknown tool or with
      invalid input (``None``: the model gets an error result).
    * ``stream_tool_call_responses``: ``False`` streams only the final answer (steps the loop continues
      after are not yielded; callbacks still see them).
    * ``max_retries``: retries of a model call that failed before its first byte (connect errors,
      HTTP 408/409/429/5xx, or an in-stream overload/rate-limit error before any content), with backoff
      and jitter or the server's ``Retry-After`` (honoured and shown in the error message; default 2).
    * ``max_event_bytes``: the largest SSE event accepted, in bytes (default 16 MiB); a longer one
      ends the run with ``RUN_ERROR`` ``line_too_long``.
    * ``run_id``: the AG-UI run id (default: a fresh ``run_<hex>``).
    * ``parent_run_id``: the run this one was started by (``RUN_STARTED.parentRunId``), as an agent run
      as a tool sets it (:meth:`hookstream.Agent.as_tool`).
    * ``include_raw``: forward the provider events an adapter did not understand as AG-UI ``RAW``
      events (``{"type": "RAW", "event": <provider JSON>, "source": <provider>}``). They are always
      counted (``StepResult.unknown_events``); without this flag they are not streamed.
    * ``output_retries``: with ``chat(..., output=SPEC)``, how many more model calls an invalid structured
      output gets (default 0: an invalid output ends the run with ``RUN_ERROR`` ``output_invalid``). Each
      retry sends the validation problems back to the model (a user message, or an error tool result in
      the forced-tool form) and calls it again; retries are not counted against ``max_steps``.
    * ``principal``: who the run is for, a :class:`~hookstream.server.Principal` its server verified (the
      server's stream factory sets it from ``RunInput.principal``, never from the request body); tools see
      it as :attr:`hookstream.ToolContext.principal`, run hooks as ``RunContext.principal``. ``None``
      (the default) outside a server.
    """

    prepare_step: Callable[[StepStart], StepSettings | dict[str, Any] | None] | None = None
    repair_tool_call: Callable[[RepairRequest], ToolCallPart | None] | None = None
    stream_tool_call_responses: bool = True
    max_retries: int = 2
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    run_id: str | None = None
    include_raw: bool = False
    output_retries: int = 0
    parent_run_id: str | None = None
    principal: Principal | None = None

    @classmethod
    def coerce(cls, value: LoopSettings | dict[str, Any] | None) -> LoopSettings:
        """A :class:`LoopSettings` from itself, a dict of its fields, or ``None`` (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, LoopSettings):
            return value
        return cls(**value)


@attrs.define(slots=True)
class RunResult:
    """What a run produced, available even after an error or a cancellation.

    ``text``/``tool_calls``/``finish_reason`` are the last step's; ``usage`` is summed over steps
    (each step's own is ``steps[i].usage``); ``messages`` is the whole conversation (input plus every
    assistant and tool message); ``error`` is the typed exception when the run ended with
    ``RUN_ERROR``; ``outcome`` is ``success``, ``interrupt``, ``cancelled`` or ``error``.
    ``pending_approvals`` and ``pending_tool_calls`` (client tools) are what an interrupted run waits
    for; :meth:`resume` builds the value that continues it. ``result`` is the tool output that ended a
    ``return_direct`` run (one output, or a list for several calls). ``stopped_by`` is ``max_steps``
    or ``stop_condition`` when the loop ended although the last step's tools ran and the model would
    have been called again (the answer to those results was never asked for), else ``None``.
    ``sources`` and ``files`` are the citations and generated files of **all** steps, in order (a
    source found while the model was still calling tools supports the final answer too); each
    step's own are ``steps[i].sources`` / ``steps[i].files``.
    ``output`` is the validated structured output of ``chat(..., output=SPEC)`` (an instance of the
    class, or the JSON value for a JSON Schema dict), ``None`` without one or when it was invalid
    (``error`` is then an :class:`~hookstream.errors.OutputValidationError` keeping the raw text).
    ``tools_left_running`` are the ids of tool calls whose code was still running when the run stopped
    waiting for them (a cancel, a time limit): Python cannot kill a thread, so their token was set and
    they were abandoned; a tool that ignores its :class:`~hookstream.CancellationToken` may still be
    working (``on_finish`` receives this result, so it is reported, not silent).
    ``unsent_messages`` are messages :meth:`~hookstream.ChatStream.add_message` accepted that the run
    ended before sending (an error, a cancel, an interrupt, ``max_steps`` or a stop condition, a
    structured output accepted): they are in no request and not in ``messages``; send them with the
    next run.
    """

    steps: list[StepResult]
    messages: list[Message]
    usage: Usage
    outcome: str
    error: BaseException | None = None
    pending_approvals: list[PendingApproval] = attrs.Factory(list)
    pending_tool_calls: list[ToolCallPart] = attrs.Factory(list)
    result: Any = None
    resumed_results: list[ToolResultPart] = attrs.Factory(list)
    stopped_by: str | None = None
    output: Any = None
    tools_left_running: list[str] = attrs.Factory(list)
    unsent_messages: list[Message] = attrs.Factory(list)

    @property
    def last_step(self) -> StepResult | None:
        return self.steps[-1] if self.steps else None

    @property
    def text(self) -> str:
        return self.steps[-1].text if self.steps else ""

    @property
    def reasoning(self) -> str | None:
        return self.steps[-1].reasoning if self.steps else None

    @property
    def tool_calls(self) -> list[Any]:
        return self.steps[-1].tool_calls if self.steps else []

    @property
    def finish_reason(self) -> str | None:
        return self.steps[-1].finish_reason if self.steps else None

    @property
    def raw_finish_reason(self) -> str | None:
        return self.steps[-1].raw_finish_reason if self.steps else None

    @property
    def sources(self) -> list[SourcePart]:
        return [src for s in self.steps for src in s.sources]

    @property
    def files(self) -> list[FilePart]:
        return [f for s in self.steps for f in s.files]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return list(self.resumed_results) + [r for s in self.steps for r in s.tool_results]

    def resume(
        self, approvals: dict[str, bool] | None = None, tool_outputs: dict[str, Any] | None = None
    ) -> Resume:
        """The :class:`~hookstream.Resume` continuing this run with these answers."""
        return Resume(list(self.messages), dict(approvals or {}), dict(tool_outputs or {}))
