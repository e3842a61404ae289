"""hookstream: synchronous, thread-based streaming LLM chat with tool calls, as AG-UI events.

What a user of :func:`chat` needs is importable from here: start with :func:`chat` (and :func:`get_model`
to set a provider's base URL, API key and connection pool once); tools (:func:`tool`), the agent loop's
settings, messages, :class:`StreamProcessor` and its UI messages, batches. The rest is grouped in small
public modules: :mod:`hookstream.events` (AG-UI events, their JSON/SSE forms, ``CUSTOM`` payloads),
:mod:`hookstream.errors` (every exception, under :class:`HookstreamError`), :mod:`hookstream.server` (the
AG-UI WSGI app, authentication, limits) and :mod:`hookstream.stores` (conversation stores). Plugin authors
import from :mod:`hookstream.plugin`; test helpers live in :mod:`hookstream.testing`. Modules whose names
start with an underscore are the implementation and may change without notice.

Names load on first use (PEP 562), so ``import hookstream`` stays cheap for a short CLI call; the public
modules load on first use too (``hookstream.events.RunError`` works after ``import hookstream``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_attributes

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ._agentloop.agent import Agent
    from ._agentloop.executors import BoundedExecutor, ProcessExecutor, SequentialExecutor, ThreadExecutor
    from ._agentloop.observe import Observer
    from ._agentloop.output import final_json
    from ._agentloop.stop import (
        StopCondition,
        cost_exceeds,
        finish_reason_is,
        has_tool_call,
        step_count_is,
        total_tokens_exceed,
    )
    from ._agentloop.structured import Output
    from ._agentloop.timeouts import Timeouts
    from ._agentloop.tools import CancellationToken, Tool, ToolContext, tool
    from ._agentloop.values import (
        Callbacks,
        LoopSettings,
        PendingApproval,
        RepairRequest,
        Resume,
        RunResult,
        StepSettings,
        StepStart,
    )
    from ._batch import BatchResult, BatchRun, batch
    from ._batch_file import BatchInput
    from ._chat import ChatStream, chat, get_model
    from ._errors import HookstreamError
    from ._messages import (
        FilePart,
        Message,
        Part,
        ReasoningPart,
        Role,
        SourcePart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
    )
    from ._models import models
    from ._prices import ModelInfo
    from ._processing.convert import model_messages_to_ui_messages, ui_messages_to_model_messages
    from ._processing.processor import (
        ApprovalRequest,
        ProcessorResult,
        ProcessorStats,
        StreamProcessor,
        SubagentRun,
        ToolInputRequest,
    )
    from ._processing.strategies import ChunkStrategy, ImmediateStrategy
    from ._processing.ui import (
        FileUIPart,
        ReasoningUIPart,
        SourceUIPart,
        TextUIPart,
        ToolApproval,
        ToolCallUIPart,
        ToolResultUIPart,
        UIMessage,
        UIPart,
    )
    from ._ratelimit import RateLimiter
    from ._record import Recorder
    from ._registry import get_registry
    from ._settings import RunSettings
    from ._stream.accumulate import StepResult
    from ._stream.count import TokenCount
    from ._stream.fallback import FallbackModel
    from ._stream.provider import Provider
    from ._tokens import count_tokens

_LAZY: dict[str, str] = {
    "chat": "_chat",
    "get_model": "_chat",
    "ChatStream": "_chat",
    "models": "_models",
    "ModelInfo": "_prices",
    "FallbackModel": "_stream.fallback",
    "Provider": "_stream.provider",
    "get_registry": "_registry",
    "Agent": "_agentloop.agent",
    "HookstreamError": "_errors",
    "tool": "_agentloop.tools",
    "Tool": "_agentloop.tools",
    "ToolContext": "_agentloop.tools",
    "CancellationToken": "_agentloop.tools",
    "BoundedExecutor": "_agentloop.executors",
    "ProcessExecutor": "_agentloop.executors",
    "SequentialExecutor": "_agentloop.executors",
    "ThreadExecutor": "_agentloop.executors",
    "StopCondition": "_agentloop.stop",
    "cost_exceeds": "_agentloop.stop",
    "finish_reason_is": "_agentloop.stop",
    "has_tool_call": "_agentloop.stop",
    "step_count_is": "_agentloop.stop",
    "total_tokens_exceed": "_agentloop.stop",
    "Callbacks": "_agentloop.values",
    "LoopSettings": "_agentloop.values",
    "PendingApproval": "_agentloop.values",
    "RepairRequest": "_agentloop.values",
    "Resume": "_agentloop.values",
    "RunResult": "_agentloop.values",
    "StepSettings": "_agentloop.values",
    "StepStart": "_agentloop.values",
    "Timeouts": "_agentloop.timeouts",
    "Output": "_agentloop.structured",
    "final_json": "_agentloop.output",
    "StepResult": "_stream.accumulate",
    "Message": "_messages",
    "Part": "_messages",
    "Role": "_messages",
    "TextPart": "_messages",
    "ReasoningPart": "_messages",
    "FilePart": "_messages",
    "SourcePart": "_messages",
    "ToolCallPart": "_messages",
    "ToolResultPart": "_messages",
    "StreamProcessor": "_processing.processor",
    "ProcessorResult": "_processing.processor",
    "ProcessorStats": "_processing.processor",
    "ApprovalRequest": "_processing.processor",
    "ToolInputRequest": "_processing.processor",
    "SubagentRun": "_processing.processor",
    "ChunkStrategy": "_processing.strategies",
    "ImmediateStrategy": "_processing.strategies",
    "UIMessage": "_processing.ui",
    "UIPart": "_processing.ui",
    "TextUIPart": "_processing.ui",
    "ReasoningUIPart": "_processing.ui",
    "SourceUIPart": "_processing.ui",
    "FileUIPart": "_processing.ui",
    "ToolCallUIPart": "_processing.ui",
    "ToolResultUIPart": "_processing.ui",
    "ToolApproval": "_processing.ui",
    "model_messages_to_ui_messages": "_processing.convert",
    "ui_messages_to_model_messages": "_processing.convert",
    "batch": "_batch",
    "BatchResult": "_batch",
    "BatchRun": "_batch",
    "BatchInput": "_batch_file",
    "RateLimiter": "_ratelimit",
    "Observer": "_agentloop.observe",
    "Recorder": "_record",
    "RunSettings": "_settings",
    "count_tokens": "_tokens",
    "TokenCount": "_stream.count",
}

# The public modules beside the names above; ``hookstream.errors`` after ``import hookstream`` imports it.
_SUBMODULES = frozenset({"events", "errors", "plugin", "server", "stores", "testing"})

__all__ = [
    "Agent",
    "ApprovalRequest",
    "BatchInput",
    "BatchResult",
    "BatchRun",
    "BoundedExecutor",
    "Callbacks",
    "CancellationToken",
    "ChatStream",
    "ChunkStrategy",
    "FallbackModel",
    "FilePart",
    "FileUIPart",
    "HookstreamError",
    "ImmediateStrategy",
    "LoopSettings",
    "Message",
    "ModelInfo",
    "Observer",
    "Output",
    "Part",
    "PendingApproval",
    "ProcessExecutor",
    "ProcessorResult",
    "ProcessorStats",
    "Provider",
    "RateLimiter",
    "ReasoningPart",
    "ReasoningUIPart",
    "Recorder",
    "RepairRequest",
    "Resume",
    "Role",
    "RunResult",
    "RunSettings",
    "SequentialExecutor",
    "SourcePart",
    "SourceUIPart",
    "StepResult",
    "StepSettings",
    "StepStart",
    "StopCondition",
    "StreamProcessor",
    "SubagentRun",
    "TextPart",
    "TextUIPart",
    "ThreadExecutor",
    "Timeouts",
    "TokenCount",
    "Tool",
    "ToolApproval",
    "ToolCallPart",
    "ToolCallUIPart",
    "ToolContext",
    "ToolInputRequest",
    "ToolResultPart",
    "ToolResultUIPart",
    "UIMessage",
    "UIPart",
    "__version__",
    "batch",
    "chat",
    "cost_exceeds",
    "count_tokens",
    "final_json",
    "finish_reason_is",
    "get_model",
    "get_registry",
    "has_tool_call",
    "model_messages_to_ui_messages",
    "models",
    "step_count_is",
    "tool",
    "total_tokens_exceed",
    "ui_messages_to_model_messages",
]


_names_getattr, __dir__ = lazy_attributes(__name__, {name: f"hookstream.{module}" for name, module in _LAZY.items()})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    return _names_getattr(name)
