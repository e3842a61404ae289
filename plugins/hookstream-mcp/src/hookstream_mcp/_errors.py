"""The plugin's typed errors, both :class:`hookstream.errors.HookstreamError` subclasses."""

from __future__ import annotations

from hookstream import HookstreamError
from hookstream.errors import ToolError


class MCPServerError(HookstreamError):
    """An MCP server could not be started or reached, did not answer the handshake or the tool listing
    in time, or was used after :meth:`~hookstream_mcp.MCPServer.close`. The message names the server
    (command or URL without credentials) and the cause."""

    code = "mcp_server_error"


class MCPToolError(ToolError):
    """An MCP tool call failed: the result had ``isError`` set (MCP spec, "Tools" > "Error Handling":
    the text is the tool's own), the server answered with a JSON-RPC error (``MCP error <code>: ...``),
    the connection broke, or the call was cancelled. Raised inside the tool function, so the engine
    turns it into an error result (``ToolResultPart.is_error``) the model sees."""

    code = "mcp_tool_error"


class MCPAuthError(MCPServerError):
    """The MCP server refused the connection for want of a login: HTTP ``status`` (401: no or a bad
    token; 403: not allowed, or more scope needed) with its ``WWW-Authenticate`` header kept verbatim in
    ``www_authenticate`` (MCP spec, "Authorization" > "Authorization Server Discovery": it names the
    ``resource_metadata`` URL, an ``error`` and the ``scope`` wanted), or a login that did not complete.
    The message says what to set: ``auth=OAuth()`` / ``ClientCredentials(...)`` in Python,
    ``--mcp-auth oauth|client-credentials`` on the command line. No token is ever in the message."""

    code = "mcp_auth_error"

    def __init__(self, message: str, *, status: int | None = None, www_authenticate: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.www_authenticate = www_authenticate
