"""``hookstream mcp serve``: hookstream tools, and a hookstream agent as one tool, offered as an MCP server
through the MCP SDK's low-level server (``mcp.server.lowlevel.Server``), over stdio or streamable HTTP
(MCP spec 2025-11-25, "Transports"; docs/mcp.md, "Serving tools over MCP").

What it offers (``tools/list``): each configured :class:`hookstream.Tool` (``--tool MODULE:FUNC``, and the
tools of ``--mcp`` servers, passed through) under its own name, with its JSON Schema as ``inputSchema``;
with an agent (``--agent --model PROVIDER:MODEL``), one more tool, ``ask(prompt: str)``, which runs the
agent (:func:`hookstream.chat` with those tools) and answers with its final text. ``tools/call``: the
tool's output as one text content (JSON for a value that is not text); a tool that raises, or an agent
run that fails, answers ``isError: true`` with the error as text (spec "Tools" > "Error Handling"), an
unknown tool a JSON-RPC error. While ``ask`` runs, each step and each tool call the agent makes is sent
as ``notifications/progress`` when the client asked for progress (a ``progressToken``).

Over HTTP the endpoint is ``/mcp``; with ``authenticate`` (``--auth-tokens FILE`` or
``$HOOKSTREAM_AUTH_TOKENS``, the same token file as ``hookstream serve``) every request must carry
``Authorization: Bearer TOKEN`` (``401`` with ``WWW-Authenticate: Bearer`` otherwise); on a loopback host
the SDK's DNS-rebinding protection checks ``Host`` and ``Origin``.

Thread safety: the tools are called on worker threads (``anyio.to_thread``), several at once when a
client sends concurrent calls; a tool must be thread-safe, as for the engine's thread executor.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from hookstream import CancellationToken, Tool, ToolContext, chat
from hookstream.events import RunError, RunFinished, StepStarted, TextMessageContent, ToolCallStart
from mcp.server.lowlevel import Server

from . import __version__

__all__ = ["ASK_TOOL", "build_server", "serve_http", "serve_stdio"]

ASK_TOOL = "ask"
"""The name of the tool that runs the agent (``ask(prompt)``)."""

_ASK_SCHEMA = {"type": "object", "properties": {"prompt": {"type": "string", "description": "What to ask the agent."}},
               "required": ["prompt"]}


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)


def _call_tool(t: Tool, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """Run one hookstream tool (on a worker thread): its output, or its error as ``isError``."""
    kwargs = dict(arguments)
    if t.context_param:
        kwargs[t.context_param] = ToolContext(f"call_{uuid.uuid4().hex}", [], CancellationToken())
    if t.fn is None:
        return types.CallToolResult(content=[types.TextContent(text=f"tool {t.name!r} has no function")],
                                    is_error=True)
    try:
        output = t.fn(**kwargs)
    except Exception as exc:  # the tool's own failure is the caller's to see (spec: isError, not a protocol error)
        return types.CallToolResult(content=[types.TextContent(text=f"{type(exc).__name__}: {exc}")], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=_text(output))])


def _progress_text(ev: Any) -> str | None:
    if isinstance(ev, StepStarted):
        return f"step {ev.step_name}"
    if isinstance(ev, ToolCallStart):
        return f"calling {ev.tool_call_name}"
    return None


def _ask(model: Any, tools: Sequence[Tool], system: str | None, prompt: str,
         progress: Callable[[float, str], None]) -> types.CallToolResult:
    """Run the agent on ``prompt`` (on a worker thread), reporting its steps and tool calls."""
    fields: dict[str, Any] = {"system": system} if system else {}
    stream = chat(model, prompt, tools=list(tools), **fields)
    text: list[str] = []
    count = 0
    try:
        for ev in stream:
            note = _progress_text(ev)
            if note is not None:
                count += 1
                progress(count, note)
            elif isinstance(ev, TextMessageContent):
                text.append(ev.delta)
            elif isinstance(ev, RunError):
                return types.CallToolResult(content=[types.TextContent(text=f"the agent failed: {ev.message}")],
                                            is_error=True)
            elif isinstance(ev, RunFinished) and ev.outcome is not None and ev.outcome.type == "interrupt":
                return types.CallToolResult(content=[types.TextContent(
                    text="the agent stopped for an approval, which this server cannot ask for")], is_error=True)
    finally:
        stream.cancel()
    result = stream.result()
    return types.CallToolResult(content=[types.TextContent(text=result.text if result.text else "".join(text))])


def build_server(tools: Sequence[Tool], *, agent_model: Any = None, system: str | None = None,
                 name: str = "hookstream") -> Server[Any]:
    """The MCP SDK server offering ``tools`` and, with ``agent_model`` (a ``"PROVIDER:MODEL"`` or a
    provider), the agent as the tool :data:`ASK_TOOL`. Raises :class:`ValueError` for two tools of one
    name."""
    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools) or (agent_model is not None and ASK_TOOL in by_name):
        raise ValueError("two tools share a name: MCP tool names must be unique")
    listing = [types.Tool(name=t.name, description=t.description or None, input_schema=t.parameters)
               for t in tools]
    if agent_model is not None:
        listing.append(types.Tool(name=ASK_TOOL, description="Ask the hookstream agent; it may use its own tools.",
                                  input_schema=_ASK_SCHEMA))
    schemas = {t.name: t.input_schema for t in listing}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == ASK_TOOL and agent_model is not None:
            prompt = arguments.get("prompt")
            if not isinstance(prompt, str) or not prompt:
                return types.CallToolResult(content=[types.TextContent(text="prompt must be a non-empty string")],
                                            is_error=True)

            def progress(done: float, message: str) -> None:
                anyio.from_thread.run(ctx.session.report_progress, done, None, message)

            return await anyio.to_thread.run_sync(_ask, agent_model, tools, system, prompt, progress)
        t = by_name.get(params.name)
        if t is None:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {params.name!r}")],
                                        is_error=True)
        return await anyio.to_thread.run_sync(_call_tool, t, arguments)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=schemas.get)


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class _Authenticated:
    """ASGI middleware: every HTTP request must name a principal of ``authenticate`` (a
    :data:`hookstream.server.Authenticator`, called with a WSGI-style environ of the request's headers)."""

    def __init__(self, app: Any, authenticate: Callable[[Mapping[str, Any]], Any]) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            environ: dict[str, Any] = {"REQUEST_METHOD": scope.get("method", "GET"), "PATH_INFO": scope.get("path")}
            for key, value in scope.get("headers") or ():
                environ["HTTP_" + key.decode("latin-1").upper().replace("-", "_")] = value.decode("latin-1")
            if self.authenticate(environ) is None:
                body = b'{"error": "authentication required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="hookstream"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(server: Server[Any], host: str, port: int, *, authenticate: Any = None,
               announce: Callable[[str], None] = print) -> None:
    """Serve ``server`` as streamable HTTP at ``http://host:port/mcp`` (``port`` 0: a free one) on uvicorn
    until interrupted; ``announce`` gets the URL once the socket listens. Raises :class:`OSError` when the
    address cannot be bound."""
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if authenticate is not None:
        app = _Authenticated(app, authenticate)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections queue from now on: the announced URL is reachable at once
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{sock.getsockname()[1]}/mcp")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
