"""hookstream: synchronous, thread-based streaming LLM chat with tool calls, as AG-UI events.

Start with :func:`hookstream.chat`; see ``docs/`` for the guide and the plugin hooks.
"""

from __future__ import annotations

__version__ = "0.1.0"

# ``hookstream.chat`` is the function: it shadows the submodule of the same name on purpose, so that
# ``hookstream.chat("openai:gpt-4o-mini", "hi")`` works; import ChatStream from here too.
from .chat import ChatStream, chat
from .errors import HookstreamError
from .events import Usage
from .hookspecs import hookimpl
from .messages import Message
from .provider import ModelRequest, Provider, ToolSpec

__all__ = [
    "ChatStream",
    "HookstreamError",
    "Message",
    "ModelRequest",
    "Provider",
    "ToolSpec",
    "Usage",
    "__version__",
    "chat",
    "hookimpl",
]
