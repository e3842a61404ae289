"""Agents: a model, tools, a system prompt and chat settings bundled, and agents used as tools.

:class:`Agent` keeps what ``chat()`` needs besides the conversation; :meth:`Agent.chat` is ``chat()``
with those. :meth:`Agent.as_tool` makes a :class:`~hookstream.Tool` whose call runs the agent on the
tool's ``prompt`` argument and answers with the agent's final text. The agent's run streams inside the
calling run, as it happens, as AG-UI 1.0 subagent events::

    (parent)  STEP_FINISHED step-1  (the model called the agent tool, call id C)
    SUBAGENT_STARTED   {subagentRunId: R, name, description, parentToolCallId: C}
      STEP_STARTED step-1 {subagentRunId: R}  TEXT_MESSAGE_* {subagentRunId: R} ...  STEP_FINISHED
      TOOL_CALL_* / TOOL_CALL_RESULT {subagentRunId: R}        (the agent's own tools)
    SUBAGENT_FINISHED  {subagentRunId: R, result: <final text>, outcome: {type: success}}
                      | SUBAGENT_ERROR {subagentRunId: R, message, code}
    (parent)  TOOL_CALL_RESULT C <final text>

``R`` is the nested run's own ``runId`` (its ``RUN_STARTED``, seen by callbacks of the agent's own run,
has ``parentRunId`` = the parent's run id); its ``RUN_*`` events become the ``SUBAGENT_*`` ones, since an
AG-UI stream holds one run at a time (``@ag-ui/client`` ``verifyEvents`` rejects a ``RUN_STARTED`` inside
a run). An agent tool inside an agent tool nests again (``parentSubagentRunId``).

The events travel through the run's :class:`~hookstream._agentloop.tools.ToolChannel`
(:meth:`~hookstream.ToolContext.emit`), which in-process executors (``thread``, ``sequential``,
``bounded``) provide; the agent's token usage is added to the calling run's (``RunResult.usage``,
``RUN_FINISHED.usage``). Cancelling the calling run cancels the agent's run (its tool's cancellation
token cancels the agent's stream); so does the tool's time limit. ``process`` and ``ray`` cannot run
an agent tool (its function is a closure).

Thread safety: an :class:`Agent` is immutable after construction and may run on many threads at once;
each :meth:`Agent.chat` is a run of its own. An agent tool runs on the executor's thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import attrs

from .._chat import ChatStream, chat
from .._errors import AgentToolError
from .._events import (
    Attributable,
    BaseEvent,
    RunError,
    RunFinished,
    RunStarted,
    SubagentError,
    SubagentFinished,
    SubagentStarted,
)
from .._ids import new_id
from .._messages import Message
from .._settings import RunSettings
from .._stream.provider import Provider
from .tool_phase import NestedBlocks
from .tools import Tool, ToolContext
from .values import RunResult

__all__ = ["Agent", "AgentToolError"]

class Agent:
    """A model and its :class:`~hookstream.RunSettings` (tools, system prompt, limits...), bundled:
    ``Agent("openai:gpt-4o-mini", tools=[search], system="You research.", max_steps=5)``.

    ``model`` is what ``chat()`` takes (``"PROVIDER:MODEL"``, a provider object, a
    :class:`~hookstream.FallbackModel`); ``settings`` a :class:`~hookstream.RunSettings`, and ``fields``
    any of its fields (``tools``, ``system``, ``max_steps``, ``temperature``, ``executor``, ``loop``,
    ``timeouts``, ``output``, ``context``, ``plugins``...), which replace the settings' own; both are checked
    now. ``name`` names the agent (default ``"agent"``; :meth:`as_tool` uses the tool name).

    Raises :class:`TypeError` for a field ``RunSettings`` does not have or of the wrong type, and what
    :func:`hookstream.tool` raises for a tool it cannot describe.
    """

    def __init__(
        self,
        model: str | Provider,
        *,
        settings: RunSettings | None = None,
        name: str = "agent",
        **fields: Any,
    ) -> None:
        self.model = model
        self.settings = RunSettings.of(settings, **fields)
        self.name = name

    @property
    def tools(self) -> dict[str, Tool]:
        """The agent's tools by name."""
        return {t.name: t for t in self.settings.tools}

    @property
    def system(self) -> str | None:
        """The agent's system prompt."""
        return self.settings.system

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r}, tools={list(self.tools)!r})"

    def chat(
        self,
        messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]] | None = None,
        **overrides: Any,
    ) -> ChatStream:
        """``chat()`` with the agent's model and settings; ``overrides`` (any ``chat()`` keyword argument,
        ``tools`` and ``system`` included) replace the agent's for this run. Raises what ``chat()`` raises."""
        return chat(self.model, messages_or_prompt, settings=self.settings, **overrides)

    def run(self, messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]], **overrides: Any
            ) -> RunResult:
        """:meth:`chat` consumed: the run's :class:`~hookstream.RunResult`."""
        return self.chat(messages_or_prompt, **overrides).result()

    def as_tool(self, name: str, description: str, *, parameter: str = "prompt",
                timeout: float | None = None) -> Tool:
        """A :class:`~hookstream.Tool` named ``name`` that runs this agent.

        The model calls it with one string argument, ``parameter`` (``prompt`` by default; ``input``
        reads well too): the agent's user message. The agent's run streams inside the calling run as
        nested events (see the module documentation), its usage adds to the calling run's, and the tool's
        output is the agent's final text. An agent run that fails, is cancelled or stops for an approval
        gives the calling model an error result (``Error: AgentToolError: ...``). ``timeout`` is the
        tool's time limit in seconds (the agent's run is cancelled when it passes).

        Unless the agent has its own ``context`` setting, it receives the calling run's
        (``chat(..., context=obj)``), so its tools see the same ``ToolContext.deps``.
        """
        schema = {"type": "object",
                  "properties": {parameter: {"type": "string",
                                             "description": "What to ask the agent, as a complete request."}},
                  "required": [parameter], "additionalProperties": False}
        agent = self

        def call_agent(ctx: ToolContext[Any], **arguments: Any) -> str:
            return agent._run_as_tool(name, description, str(arguments[parameter]), ctx)

        call_agent.__qualname__ = call_agent.__name__ = f"agent_tool_{name}"
        return Tool(name, description, schema, call_agent, timeout=timeout, context_param="ctx")

    def _run_as_tool(self, name: str, description: str, prompt: str, ctx: ToolContext[Any]) -> str:
        """Run the agent for one tool call: stream its events into the calling run, nested, through
        ``ctx``; add its usage; return its final text or raise :class:`AgentToolError`."""
        sub_run = new_id("run")
        overrides: dict[str, Any] = {}
        # The agent's run is for the calling run's caller: its tools and plugins see the same principal.
        overrides["loop"] = attrs.evolve(self.settings.loop, run_id=sub_run, parent_run_id=ctx.run_id,
                                         principal=ctx.principal or self.settings.loop.principal)
        if self.settings.context is None:
            overrides["context"] = ctx.deps
        stream = self.chat(prompt, **overrides)
        ctx.cancellation.on_cancel(stream.cancel)
        streaming = True
        opened = NestedBlocks()  # what the agent's run left open when it failed (RUN_ERROR ends it as is)
        for ev in stream:
            nested = _nest(ev, sub_run, name, description, ctx.tool_call_id)
            if nested is not None and streaming:
                opened.see(nested)
                streaming = ctx.emit(nested)
        result = stream.result()
        ctx.add_usage(result.usage)
        end: BaseEvent
        if result.outcome in ("success", "interrupt") and result.error is None:
            if result.outcome == "interrupt":
                ids = [p.approval_id for p in result.pending_approvals]
                end = SubagentFinished(sub_run, result=None, outcome={"type": "suspended", "interruptIds": ids})
            else:
                end = SubagentFinished(sub_run, result=result.text, outcome={"type": "success"})
        else:
            error = result.error
            code = getattr(error, "code", None) or result.outcome
            message = (getattr(error, "message", None) or (str(error) if error is not None else "")
                       or f"the agent's run was {result.outcome}")
            end = SubagentError(sub_run, message, code=code)
        if streaming:
            for close in opened.close_blocks(sub_run) if isinstance(end, SubagentError) else ():
                ctx.emit(close)
            ctx.emit(end)
        if isinstance(end, SubagentError):
            raise AgentToolError(f"agent {name!r} failed ({end.code}): {end.message}")
        if result.outcome == "interrupt":
            raise AgentToolError(f"agent {name!r} stopped to wait for an approval or a client tool, which an "
                                 "agent used as a tool cannot ask for; give it an approve= setting")
        return result.text


def _nest(ev: BaseEvent, sub_run: str, name: str, description: str, tool_call_id: str) -> BaseEvent | None:
    """``ev`` of the agent's run as the calling run streams it: ``RUN_STARTED`` becomes
    ``SUBAGENT_STARTED``, the run's end is sent after the run (``None`` here), other events carry
    ``subagent_run_id`` (events of a deeper agent keep theirs)."""
    t = type(ev)
    if t is RunStarted:
        return SubagentStarted(sub_run, name, description=description or None, parent_tool_call_id=tool_call_id)
    if t is RunFinished or t is RunError:
        return None
    if t is SubagentStarted:
        started = cast(SubagentStarted, ev)  # its type was checked above, by identity
        return started if started.parent_subagent_run_id else attrs.evolve(started, parent_subagent_run_id=sub_run)
    if t is SubagentFinished or t is SubagentError:
        return ev
    if isinstance(ev, Attributable):
        return ev if ev.subagent_run_id is not None else attrs.evolve(ev, subagent_run_id=sub_run)
    return None  # run-scoped (MESSAGES_SNAPSHOT): the calling run's conversation is its own
