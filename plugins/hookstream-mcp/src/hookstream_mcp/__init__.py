"""hookstream-mcp: the tools of MCP servers as hookstream tools.

``MCPServer.stdio([...])`` starts a server process, ``MCPServer.http(url)`` connects to a streamable
HTTP endpoint (``auth=OAuth()`` or ``ClientCredentials(...)`` when it needs a login; ``elicitation=`` a
callback answering the server's questions, or ``"run"`` to stream them in the run that made the tool call
and answer them with :func:`answer_elicitation`); ``server.tools()`` gives one :class:`hookstream.Tool` per
MCP tool, to pass to :func:`hookstream.chat` beside plain functions. The MCP SDK's asyncio API stays
inside this package, on a private thread with its own event loop; everything here is synchronous.

Names load on first use (PEP 562), so the ``hookstream`` entry point does not import the MCP SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._auth import ClientCredentials, OAuth, token_path
    from ._elicit import Elicitation, ElicitationAnswer
    from ._errors import MCPAuthError, MCPServerError, MCPToolError
    from ._inrun import answer_elicitation, in_run_elicitation
    from ._results import tool_output
    from ._server import MCPServer
    from ._version import __version__

_LAZY = {
    "ClientCredentials": "_auth",
    "Elicitation": "_elicit",
    "ElicitationAnswer": "_elicit",
    "MCPAuthError": "_errors",
    "MCPServer": "_server",
    "OAuth": "_auth",
    "token_path": "_auth",
    "MCPServerError": "_errors",
    "MCPToolError": "_errors",
    "answer_elicitation": "_inrun",
    "in_run_elicitation": "_inrun",
    "tool_output": "_results",
    "__version__": "_version",
}

__all__ = ["ClientCredentials", "Elicitation", "ElicitationAnswer", "MCPAuthError", "MCPServer", "MCPServerError",
           "MCPToolError", "OAuth", "__version__", "answer_elicitation", "in_run_elicitation", "token_path",
           "tool_output"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hookstream_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
