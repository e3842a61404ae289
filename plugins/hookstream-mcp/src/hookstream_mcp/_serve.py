"""``hookstream mcp serve``: hookstream tools, and a hookstream agent as one tool, offered as an MCP server
through the MCP SDK's low-level server (``mcp.server.lowlevel.Server``), over stdio or streamable HTTP
(MCP spec 2025-11-25, "Transports"; docs/mcp.md, "Serving tools over MCP").

What it offers (``tools/list``): each configured :class:`hookstream.Tool` (``--tool MODULE:FUNC``, and the
tools of ``--mcp`` servers, passed through) under its own name, with its JSON Schema as ``inputSchema``;
with an agent (``--agent --model PROVIDER:MODEL``), one more tool, ``ask(prompt: str)``, which runs the
agent (:func:`hookstream.chat` with those tools) and answers with its final text; a tool call that needs
approval is asked of the client's user as MCP elicitation (form mode, ``{"approve": boolean}``; spec
"Client Features" > "Elicitation"), and the run goes on with the answer (a decline, a cancel or a client
without elicitation denies the call). ``tools/call``: the
tool's output as one text content (JSON for a value that is not text); a tool that raises, or an agent
run that fails, answers ``isError: true`` with the error as text (spec "Tools" > "Error Handling"), an
unknown tool a JSON-RPC error. While ``ask`` runs, each step and each tool call the agent makes is sent
as ``notifications/progress`` when the client asked for progress (a ``progressToken``).

Over HTTP the endpoint is ``/mcp``; with ``authenticate`` (``--auth-tokens FILE`` or
``$HOOKSTREAM_AUTH_TOKENS``, the same token file as ``hookstream serve``) every request must carry
``Authorization: Bearer TOKEN`` (``401`` with ``WWW-Authenticate: Bearer`` otherwise); on a loopback host
the SDK's DNS-rebinding protection checks ``Host`` and ``Origin``.

Who calls: over HTTP with ``authenticate``, a tool that takes a :class:`hookstream.ToolContext` gets the
principal the authenticator verified for that very request as ``ctx.principal`` (the agent behind ``ask``
runs for it, so its tools see it too), as under ``hookstream serve``; over stdio or without
authentication it is ``None``. It comes from the authenticator alone, never from the call's
``arguments`` or ``_meta``. A 2026-era ``ask`` retry is resumed only for the principal that started it.

Thread safety: the tools are called on worker threads (``anyio.to_thread``), several at once when a
client sends concurrent calls; a tool must be thread-safe, as for the engine's thread executor.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs
import mcp_types as types
from hookstream import CancellationToken, LoopSettings, Tool, ToolContext, chat
from hookstream.events import Interrupt, RunError, RunFinished, StepStarted, ToolCallStart
from hookstream.server import Principal
from mcp.server.lowlevel import Server

from ._version import __version__

__all__ = ["ASK_TOOL", "build_server", "serve_http", "serve_stdio"]

log = logging.getLogger("hookstream_mcp")

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


# Where _Authenticated keeps the verified principal in the ASGI scope's per-request state (a server-side
# dict the client cannot write), and where the tool handler reads it back through the SDK's request.
_PRINCIPAL_STATE = "hookstream.principal"


def _principal(ctx: Any) -> Principal | None:
    """The principal ``_Authenticated`` verified for the HTTP request carrying this MCP request (the SDK's
    ``ServerRequestContext.request``, a Starlette request); ``None`` over stdio or without authentication."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    state = scope.get("state") if isinstance(scope, Mapping) else None
    found = state.get(_PRINCIPAL_STATE) if isinstance(state, Mapping) else None
    return found if isinstance(found, Principal) else None


def _call_tool(t: Tool, arguments: Mapping[str, Any], principal: Principal | None = None) -> types.CallToolResult:
    """Run one hookstream tool (on a worker thread) for ``principal``: its output, or its error as
    ``isError``."""
    kwargs = dict(arguments)
    if t.context_param:
        kwargs[t.context_param] = ToolContext(f"call_{uuid.uuid4().hex}", [], CancellationToken(),
                                              principal=principal)
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


_MAX_APPROVAL_ROUNDS = 16  # approvals asked for one ask() call, at most: a model that keeps asking stops
_MAX_PENDING = 256  # asks waiting for a 2026-era client's answers, at most (the oldest is forgotten)
_MODERN = "2026-07-28"  # from this protocol version a question travels in the tool call's result (SEP-2322)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@attrs.define(slots=True)
class _Waiting:
    """An agent run stopped for approvals: its conversation and what it waits for."""

    messages: list[Any]
    interrupts: list[Interrupt]
    principal: Principal | None = None


def _run_agent(model: Any, tools: Sequence[Tool], system: str | None, conversation: Any,
               resume: list[dict[str, Any]] | None, progress: Callable[[str], None],
               principal: Principal | None = None) -> types.CallToolResult | _Waiting:
    """One agent run for ``principal`` (on a worker thread): its final text, its error, or what it waits for."""
    fields: dict[str, Any] = {"system": system} if system else {}
    stream = chat(model, conversation, tools=list(tools), resume=resume, loop=LoopSettings(principal=principal),
                  **fields)
    waiting: list[Interrupt] = []
    try:
        for ev in stream:
            note = _progress_text(ev)
            if note is not None:
                progress(note)
            elif isinstance(ev, RunError):
                return _error(f"the agent failed: {ev.message}")
            elif isinstance(ev, RunFinished) and ev.outcome is not None and ev.outcome.type == "interrupt":
                waiting = list(ev.outcome.interrupts or ())
    finally:
        stream.cancel()
    result = stream.result()
    if waiting:
        return _Waiting(list(result.messages), waiting, principal)
    return types.CallToolResult(content=[types.TextContent(text=result.text or "")])


_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["approve"],
    "properties": {"approve": {"type": "boolean", "title": "Approve",
                               "description": "Let the agent run this tool call."}}}


def _question(interrupt: Interrupt) -> str:
    return interrupt.message or f"The agent asks to run tool call {interrupt.tool_call_id}. Approve?"


def _approved(answer: Any) -> bool:
    """Whether an elicitation answer approves: only an accepted ``approve: true`` does."""
    content = getattr(answer, "content", None) or {}
    return getattr(answer, "action", None) == "accept" and content.get("approve") is True


async def _elicit_approval(ctx: Any, interrupt: Interrupt) -> bool:
    """Ask the client's user (MCP elicitation, form mode) whether the agent may make the call; anything but
    an accepted ``approve: true`` (a decline, a cancel, a client without elicitation) is a denial."""
    try:
        answer = await ctx.session.elicit_form(_question(interrupt), _APPROVAL_SCHEMA,
                                               related_request_id=ctx.request_id)
    except Exception as exc:  # the client cannot ask (no elicitation capability) or failed: no approval
        log.warning("approval of %s denied: the client did not answer the question (%s: %s)",
                    interrupt.tool_call_id, type(exc).__name__, exc)
        return False
    return _approved(answer)


def _resume(approved: Mapping[str, bool]) -> list[dict[str, Any]]:
    """The engine's ``resume`` entries for the answers (interrupt id -> approved)."""
    return [{"interruptId": ident, "status": "resolved", "payload": {"approved": ok}} for ident, ok in approved.items()]


class _Agent:
    """The ``ask`` tool: runs the agent; its approvals are asked as elicitation, in the session's back
    channel (2025 protocol versions) or, from 2026-07-28 on, as the call's ``InputRequiredResult`` whose
    answers come with the client's retry of the call (``request_state`` names the waiting run, kept here).
    Thread-safe: the waiting runs are kept under a lock."""

    def __init__(self, model: Any, tools: Sequence[Tool], system: str | None) -> None:
        self.model, self.tools, self.system = model, list(tools), system
        self._pending: dict[str, _Waiting] = {}
        self._lock = threading.Lock()

    def _keep(self, waiting: _Waiting) -> str:
        token = f"ask_{uuid.uuid4().hex}"
        with self._lock:
            while len(self._pending) >= _MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
            self._pending[token] = waiting
        return token

    def _take(self, token: str, principal: Principal | None) -> _Waiting | None:
        """The run waiting under ``token``, claimed once, and only by the principal it runs for."""
        with self._lock:
            waiting = self._pending.get(token)
            if waiting is None or waiting.principal != principal:
                return None
            return self._pending.pop(token)

    async def call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult | Any:
        count = [0]

        def progress(message: str) -> None:
            count[0] += 1
            anyio.from_thread.run(ctx.session.report_progress, count[0], None, message)

        principal = _principal(ctx)
        conversation: Any = (params.arguments or {}).get("prompt")
        resume: list[dict[str, Any]] | None = None
        if params.request_state is not None:  # a 2026-era retry carrying the answers to our questions
            waiting = self._take(params.request_state, principal)
            if waiting is None:
                return _error("this question was already answered or has expired: ask again")
            answers = params.input_responses or {}
            conversation = waiting.messages
            resume = _resume({i.id: _approved(answers.get(i.id)) for i in waiting.interrupts})
        elif not isinstance(conversation, str) or not conversation:
            return _error("prompt must be a non-empty string")
        for _ in range(_MAX_APPROVAL_ROUNDS):
            outcome = await anyio.to_thread.run_sync(_run_agent, self.model, self.tools, self.system, conversation,
                                                     resume, progress, principal)
            if not isinstance(outcome, _Waiting):
                return outcome
            if str(getattr(ctx, "protocol_version", "")) >= _MODERN:
                requests: types.InputRequests = {i.id: types.ElicitRequest(params=types.ElicitRequestFormParams(
                    message=_question(i), requested_schema=_APPROVAL_SCHEMA)) for i in outcome.interrupts}
                return types.InputRequiredResult(input_requests=requests, request_state=self._keep(outcome))
            conversation = outcome.messages
            resume = _resume({i.id: await _elicit_approval(ctx, i) for i in outcome.interrupts})
        return _error(f"the agent asked for more than {_MAX_APPROVAL_ROUNDS} rounds of approvals")


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
    agent = _Agent(agent_model, tools, system) if agent_model is not None else None
    if agent is not None:
        listing.append(types.Tool(name=ASK_TOOL, description="Ask the hookstream agent; it may use its own tools.",
                                  input_schema=_ASK_SCHEMA))
    schemas = {t.name: t.input_schema for t in listing}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        if params.name == ASK_TOOL and agent is not None:
            return await agent.call(ctx, params)
        t = by_name.get(params.name)
        if t is None:
            return _error(f"unknown tool {params.name!r}")
        return await anyio.to_thread.run_sync(_call_tool, t, params.arguments or {}, _principal(ctx))

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
    :data:`hookstream.server.Authenticator`, called with a WSGI-style environ of the request's headers),
    kept for the tools in a copy of the request's ``scope["state"]`` (see :func:`_principal`)."""

    def __init__(self, app: Any, authenticate: Callable[[Mapping[str, Any]], Any]) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            environ: dict[str, Any] = {"REQUEST_METHOD": scope.get("method", "GET"), "PATH_INFO": scope.get("path")}
            for key, value in scope.get("headers") or ():
                environ["HTTP_" + key.decode("latin-1").upper().replace("-", "_")] = value.decode("latin-1")
            principal = self.authenticate(environ)
            if principal is None:
                body = b'{"error": "authentication required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="hookstream"')]})
                await send({"type": "http.response.body", "body": body})
                return
            # A fresh dict: uvicorn's per-request state is a copy of the lifespan state, but ours must
            # never leak into another request whatever the server does.
            state = scope.get("state")
            scope = {**scope, "state": {**(state if isinstance(state, Mapping) else {}), _PRINCIPAL_STATE:
                                        principal if isinstance(principal, Principal) else None}}
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
