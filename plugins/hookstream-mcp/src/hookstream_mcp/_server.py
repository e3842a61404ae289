"""An MCP server as a source of hookstream tools: started for a run, stopped at its end.

:class:`MCPServer` connects with the official MCP Python SDK (``mcp.Client``: the handshake, or
``server/discover`` on 2026-era servers; MCP spec, "Base Protocol" > "Lifecycle") over stdio (the SDK
starts the command as a child process in its own process group and, on close, closes its stdin, then
sends SIGTERM and SIGKILL to the group: spec "Transports" > "stdio") or streamable HTTP (spec
"Transports" > "Streamable HTTP"; the session is ended with a DELETE on close). All SDK work runs on
the server's private event-loop thread (:mod:`hookstream_mcp._loop_thread`); the methods here are
synchronous and thread-safe, so the engine's executor threads may call several tools at once.

Lifetime: ``with MCPServer.stdio([...]) as server:`` starts it and always closes it, also when the block
raises; :meth:`MCPServer.close` does the same by hand and may be called any number of times. After
close, its tools give error results (the model sees ``Error: MCPToolError: ...``), never a hang.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import IO, Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import attrs
from hookstream import CancellationToken, Tool, ToolContext
from mcp import Client, Implementation, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ._auth import ClientCredentials, OAuth, build_provider
from ._elicit import ElicitationHandler
from ._errors import MCPAuthError, MCPServerError, MCPToolError
from ._inrun import Call, current_call, in_run_elicitation, log, sdk_callback
from ._loop_thread import LoopThread
from ._results import tool_output
from ._version import __version__

__all__ = ["MCPServer"]

# The keyword the engine passes the ToolContext under; a name no MCP tool parameter will have.
_CONTEXT = "_hookstream_mcp_context"
# How often a waiting tool call looks at its cancellation token, in seconds. Only latency of a cancel.
_POLL = 0.05
# Pages of tools/list read at most, so a server whose cursor never ends cannot hang the start.
_MAX_PAGES = 100
# Seconds close() waits for the SDK's shutdown (stdio: up to 2 s for the process to exit after its stdin
# closes, 2 s more after SIGTERM, then SIGKILL); a guard against a hang, not an expected duration.
_SHUTDOWN_WAIT = 20.0
# Seconds an idle HTTP connection is kept for the next request: below the idle timeouts servers drop
# keep-alive connections at (Node and uvicorn 5 s, gunicorn 2 s). With httpx's own 5 s, a request can
# go out on a connection the server is closing and fail with a bare ReadError; the request after a
# login is one, its connection idle while the login talked to the authorization server.
_KEEPALIVE = 1.0


@attrs.define(slots=True, frozen=True)
class _Stdio:
    command: str
    args: list[str]
    env: dict[str, str] | None
    cwd: str | None
    stderr: IO[str] | int | None

    def label(self) -> str:
        return shlex.join([self.command, *self.args])


@attrs.define(slots=True, frozen=True)
class _Http:
    url: str
    headers: dict[str, str] | None = attrs.field(repr=False)
    auth: OAuth | ClientCredentials | None = None

    def label(self) -> str:
        # Credentials may sit in the user info or the query string: neither is shown.
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _describe(exc: BaseException) -> str:
    """A one-line cause: the first leaf of an exception group, MCP errors with their JSON-RPC code."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _stderr_target(stderr: IO[str] | int | None) -> Any:
    """Where a stdio server's stderr goes: as given, else this process's stderr when it is a real file
    (a server's log lines and crash reports stay visible), else nowhere (a captured ``sys.stderr``
    without a file descriptor, as under click's CliRunner, cannot be handed to a child process)."""
    if stderr is not None:
        return stderr
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL
    return sys.stderr


class _StderrTail:
    """A stdio server's stderr when none was given: a pipe whose lines a daemon thread passes on to where
    they would have gone (:func:`_stderr_target`) and keeps the last of, so the error about a server
    that died can say what it said (a missing module, a bad argument) instead of "Connection closed"."""

    _KEEP = 12  # lines
    _WAIT = 1.0  # seconds to let the pipe drain once the server is known to be gone

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.child_end: IO[str] | None = os.fdopen(write_fd, "w")  # the child's stderr (our copy is closed later)
        self._lines: collections.deque[str] = collections.deque(maxlen=self._KEEP)
        self._forward = _stderr_target(None)
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), name="hookstream-mcp stderr", daemon=True)
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip()
                self._lines.append(line)
                if self._forward is not subprocess.DEVNULL:
                    try:
                        self._forward.write(line + "\n")
                        self._forward.flush()
                    except (OSError, ValueError):
                        pass  # our stderr closed: the lines are still kept for the error

    def close(self) -> None:
        """Close this process's copy of the pipe's write end (the child keeps its own until it exits)."""
        end, self.child_end = self.child_end, None
        if end is not None:
            end.close()

    def said(self) -> str:
        """The server's last stderr lines (``""`` for none), once what it wrote before dying is read."""
        self.close()
        self._thread.join(self._WAIT)
        text = " | ".join(line for line in list(self._lines) if line.strip())
        return text[-800:]


class _RemoteTool:
    """The function of one MCP tool's :class:`~hookstream.Tool`: calls the tool on the server."""

    __slots__ = ("name", "server")

    def __init__(self, server: MCPServer, name: str) -> None:
        self.server = server
        self.name = name

    def __call__(self, **arguments: Any) -> Any:
        context = arguments.pop(_CONTEXT, None)
        return self.server.call(self.name, arguments, context=context if isinstance(context, ToolContext) else None)

    def __repr__(self) -> str:
        return f"<MCP tool {self.name!r} of {self.server!r}>"


class MCPServer:
    """One MCP server: :meth:`stdio` (a command) or :meth:`http` (a streamable HTTP URL).

    Use it as a context manager (or :meth:`start` and :meth:`close`); :meth:`tools` gives its tools as
    :class:`hookstream.Tool` objects, :meth:`call` calls one directly. Timeouts are in seconds:
    ``startup_timeout`` bounds the connect, handshake and tool listing; ``call_timeout`` (None: no
    limit) bounds one tool call and becomes each tool's ``Tool.timeout``.
    """

    __slots__ = ("_calls", "_client", "_closed", "_denied", "_done", "_failure", "_listing", "_lock", "_loop",
                 "_stderr", "_stop_event", "_stopping", "_target", "_task", "call_timeout", "elicitation", "name",
                 "startup_timeout")

    def __init__(self, target: _Stdio | _Http, *, name: str | None = None, startup_timeout: float = 60.0,
                 call_timeout: float | None = None, elicitation: ElicitationHandler | Literal["run"] | None = None,
                 ) -> None:
        self._target = target
        self.elicitation = in_run_elicitation() if elicitation == "run" else elicitation
        # The tool calls in flight, for telling which one a pre-2026 session's question belongs to.
        self._calls: list[Call] = []
        # The last HTTP refusal (status, WWW-Authenticate) the endpoint answered, for MCPAuthError.
        self._denied: tuple[int, str | None] | None = None
        self.name = name or target.label()
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._closed = False
        self._done = threading.Event()
        self._listing: list[Any] | None = None
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop_event: asyncio.Event | None = None
        self._stopping = False
        self._failure: str | None = None
        self._stderr: _StderrTail | None = None

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def stdio(cls, command: str | Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
              stderr: IO[str] | int | None = None, name: str | None = None, startup_timeout: float = 60.0,
              call_timeout: float | None = None, elicitation: ElicitationHandler | Literal["run"] | None = None,
              ) -> MCPServer:
        """A server started as a child process speaking MCP over its stdin/stdout.

        ``command`` is an argument list (``["uvx", "mcp-server-time"]``) or one string split like a
        POSIX shell would (:func:`shlex.split`; no shell runs). The child gets the MCP SDK's default
        environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``) plus ``env``;
        ``cwd`` is its working directory; its stderr goes to ``stderr`` (a file or file descriptor),
        by default to this process's stderr. ``elicitation`` answers the server's questions: a callback
        (see :class:`~hookstream_mcp.Elicitation`), or ``"run"`` to ask in the run that made the tool
        call (:func:`~hookstream_mcp.in_run_elicitation`, answered with
        :func:`~hookstream_mcp.answer_elicitation`); without it the server is told the client cannot answer.
        Raises :class:`ValueError` for an empty command.
        """
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("MCPServer.stdio: the command is empty")
        return cls(_Stdio(argv[0], argv[1:], dict(env) if env is not None else None, cwd, stderr),
                   name=name, startup_timeout=startup_timeout, call_timeout=call_timeout, elicitation=elicitation)

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None,
             auth: OAuth | ClientCredentials | None = None, name: str | None = None, startup_timeout: float = 60.0,
             call_timeout: float | None = None, elicitation: ElicitationHandler | Literal["run"] | None = None,
             ) -> MCPServer:
        """A server at a streamable HTTP endpoint (``http://host:port/mcp``). ``headers`` go with every
        request (``Authorization``...); they never appear in a repr or an error message. ``auth`` logs
        in when the server asks (401): :class:`~hookstream_mcp.OAuth` (a person, in a browser) or
        :class:`~hookstream_mcp.ClientCredentials` (a program); the login counts in ``startup_timeout``.
        A server that refuses the connection raises :class:`~hookstream_mcp.MCPAuthError` from
        :meth:`start`. ``elicitation`` as for :meth:`stdio`. Raises :class:`ValueError` for a URL that is
        not ``http://`` or ``https://``."""
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"MCPServer.http: expected an http:// or https:// URL, got {_Http(url, None).label()!r}")
        return cls(_Http(url, dict(headers) if headers is not None else None, auth), name=name,
                   startup_timeout=startup_timeout, call_timeout=call_timeout, elicitation=elicitation)

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> MCPServer:
        """The server a ``hookstream chat --mcp SPEC`` option names: an ``http://``/``https://`` URL is
        streamable HTTP, anything else a command line for stdio (``"uvx mcp-server-time"``). ``options``
        go to :meth:`http` or :meth:`stdio`. Raises :class:`ValueError` for an empty spec."""
        spec = spec.strip()
        if spec.startswith(("http://", "https://")):
            return cls.http(spec, **options)
        return cls.stdio(spec, **options)

    def __repr__(self) -> str:
        kind = "stdio" if isinstance(self._target, _Stdio) else "http"
        state = "closed" if self._closed else "running" if self._listing is not None else "not started"
        return f"MCPServer.{kind}({self.name!r}, {state})"

    def _why(self, exc: BaseException) -> str:
        """:func:`_describe` with the URL (its user info and query may hold credentials) and the header
        values masked, whatever the SDK or the HTTP client put into their messages."""
        text = _describe(exc)
        target = self._target
        if isinstance(target, _Http):
            text = text.replace(target.url, target.label())
            secrets = list((target.headers or {}).values())
            secret = getattr(target.auth, "client_secret", None)
            if secret:
                secrets.append(secret)
            for value in secrets:
                if len(value) >= 4:
                    text = text.replace(value, "***")
        return text

    # -- lifetime ----------------------------------------------------------------------------------

    def __enter__(self) -> MCPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> MCPServer:
        """Start the server (stdio) or connect (HTTP), complete the MCP handshake and list its tools;
        returns ``self``; a second call does nothing. Raises :class:`MCPServerError` when the command
        cannot be started, the URL does not answer, the server fails the handshake or the listing, or
        all that takes longer than ``startup_timeout``; everything started is stopped first."""
        with self._lock:
            if self._closed:
                raise MCPServerError(f"MCP server {self.name}: closed; make a new MCPServer to start it again")
            if self._loop is not None:
                return self
            self._loop = LoopThread(f"hookstream-mcp {self.name}")
            ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
            self._loop.submit(self._serve(ready))
        try:
            listing = ready.result(timeout=self.startup_timeout)
        except BaseException as exc:
            timed_out = isinstance(exc, TimeoutError) and not ready.done()
            self.close()
            if timed_out:
                raise MCPServerError(f"MCP server {self.name}: no answer to the MCP handshake and tool listing "
                                     f"within {self.startup_timeout} s (startup_timeout)") from None
            if isinstance(exc, Exception):
                raise self._start_error(exc) from None
            raise  # KeyboardInterrupt, SystemExit: the server is stopped, the caller's interrupt goes on
        self._listing = listing
        return self

    def close(self) -> None:
        """Stop the server: end the MCP session and, for stdio, the process (its whole process group);
        tool calls still waiting get an error. Idempotent; safe from any thread; returns when done."""
        with self._lock:
            self._closed = True
            loop, self._loop = self._loop, None
        if loop is None:
            return
        loop.call_soon(self._request_stop)
        self._done.wait(_SHUTDOWN_WAIT)
        loop.stop(_SHUTDOWN_WAIT)
        if self._stderr is not None:
            self._stderr.close()

    def _request_stop(self) -> None:
        """On the loop thread: let a running session end gracefully, cancel one still starting."""
        self._stopping = True
        if self._stop_event is not None and self._client is not None:
            self._stop_event.set()
        elif self._task is not None:
            self._task.cancel()

    async def _serve(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """The session's task: connect, list the tools, report them through ``ready``, then hold the
        session open until :meth:`close`. The SDK's task groups are entered and left in this task."""
        self._task = asyncio.current_task()
        self._stop_event = asyncio.Event()
        try:
            if self._stopping:
                raise asyncio.CancelledError
            async with AsyncExitStack() as stack:
                # No read timeout on the client: startup_timeout bounds the start, call() each call.
                me = Implementation(name="hookstream-mcp", version=__version__)
                callback = (sdk_callback(self.name, self.elicitation, self._asking_call)
                            if self.elicitation is not None else None)
                client = await stack.enter_async_context(
                    Client(await self._transport(stack), client_info=me, elicitation_callback=callback))
                listing: list[Any] = []
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    listing += page.tools
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                self._client = client
                ready.set_result(listing)
                await self._stop_event.wait()
                self._client = None
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not self._stopping:
                # The connection ended on its own (the process died, the HTTP server went away): later
                # calls say why instead of waiting.
                self._failure = self._why(exc) + self._server_said()
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            self._done.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        target = self._target
        if isinstance(target, _Stdio):
            params = StdioServerParameters(command=target.command, args=target.args, env=target.env, cwd=target.cwd)
            if target.stderr is None:
                self._stderr = _StderrTail()
                return stdio_client(params, errlog=cast(Any, self._stderr.child_end))
            return stdio_client(params, errlog=cast(Any, _stderr_target(target.stderr)))
        import httpx2  # the MCP SDK's HTTP client

        auth = await build_provider(target.url, target.auth, stack) if target.auth is not None else None
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=target.headers, auth=auth, timeout=httpx2.Timeout(30.0, read=300.0),
            limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=_KEEPALIVE),
            event_hooks={"response": [self._watch]}))
        return streamable_http_client(target.url, http_client=http)

    async def _watch(self, response: Any) -> None:
        """Every HTTP response of the session (the OAuth flow's too): keeps the endpoint's last 401/403
        (the SDK turns it into a bare JSON-RPC error) so a failed start can say what the server asked."""
        target = self._target
        if not isinstance(target, _Http) or str(response.request.url).split("?")[0] != target.url.split("?")[0]:
            return
        if response.status_code in (401, 403):
            self._denied = (response.status_code, response.headers.get("www-authenticate"))
        elif response.status_code < 400:
            self._denied = None

    def _server_said(self) -> str:
        """``"; the server said: ..."`` with a dead stdio server's last stderr lines, else ``""``."""
        said = self._stderr.said() if self._stderr is not None else ""
        return f"; the server said: {said}" if said else ""

    def _start_error(self, exc: Exception) -> MCPServerError:
        """The error :meth:`start` raises: :class:`MCPAuthError` when the server refused for want of a
        login or the login failed, naming what to set; else :class:`MCPServerError` with the cause."""
        from mcp.client.auth import OAuthFlowError

        leaf: BaseException = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        target = self._target
        if isinstance(leaf, OAuthFlowError):
            return MCPAuthError(f"MCP server {self.name}: the login failed: {self._why(leaf)}")
        if self._denied is None or not isinstance(target, _Http):
            return MCPServerError(f"MCP server {self.name}: could not start: {self._why(exc)}{self._server_said()}")
        status, challenge = self._denied
        shown = f" (WWW-Authenticate: {challenge})" if challenge else ""
        if target.auth is not None:
            # Why, when it is not the SDK's stand-in for the refusal above: a login can also stop for want
            # of its loopback port, or of an answer to the request it was made for.
            cause = "" if isinstance(leaf, MCPError) else f" ({self._why(leaf)})"
            todo = f"the login did not give access{cause}; check the client's scopes and registration"
        elif target.headers and any(k.lower() == "authorization" for k in target.headers):
            todo = "the Authorization header was refused; log in with --mcp-auth oauth (Python: auth=OAuth())"
        else:
            todo = ("log in with --mcp-auth oauth, or --mcp-auth client-credentials with "
                    "HOOKSTREAM_MCP_CLIENT_ID and HOOKSTREAM_MCP_CLIENT_SECRET set "
                    "(Python: MCPServer.http(url, auth=OAuth()) or auth=ClientCredentials(id, secret))")
        return MCPAuthError(f"MCP server {self.name}: HTTP {status}{shown}: {todo}",
                            status=status, www_authenticate=challenge)

    # -- tools -------------------------------------------------------------------------------------

    def tools(self, *, prefix: str = "", needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
              ) -> list[Tool]:
        """One :class:`hookstream.Tool` per tool the server listed at start: ``prefix`` + its name, its
        description (or title), its ``inputSchema`` as ``parameters``; calling it calls :meth:`call`
        (through the MCP connection, on the private loop thread). ``needs_approval`` is set on each.
        Raises :class:`MCPServerError` before :meth:`start`."""
        listing = self._listing
        if listing is None:
            raise MCPServerError(f"MCP server {self.name}: not started; use `with MCPServer...` or start() first")
        out = []
        for t in listing:
            parameters = dict(t.input_schema or {"type": "object"})
            parameters.setdefault("properties", {})  # some providers reject an object schema without it
            out.append(Tool(prefix + t.name, t.description or getattr(t, "title", None) or "", parameters,
                            _RemoteTool(self, t.name), needs_approval=needs_approval, timeout=self.call_timeout,
                            context_param=_CONTEXT))
        return out

    def _asking_call(self) -> Call | None:
        """On the loop thread, for a question that names no call: the single call in flight, else None
        (logged: with several, which one asked cannot be told)."""
        with self._lock:
            calls = list(self._calls)
        if len(calls) > 1:
            log.warning("MCP server %s asked a question with %d tool calls in flight; cannot tell which one "
                        "asked", self.name, len(calls))
        return calls[0] if len(calls) == 1 else None

    async def _call_tool(self, client: Client, call: Call, name: str, arguments: dict[str, Any],
                         timeout: float | None) -> Any:
        # The call's own task: a 2026-07-28 session's questions arrive inside it and find the call here.
        current_call.set(call)
        return await client.call_tool(name, arguments, read_timeout_seconds=timeout)

    def call(self, name: str, arguments: dict[str, Any] | None = None, *,
             cancellation: CancellationToken | None = None, context: ToolContext[Any] | None = None) -> Any:
        """Call tool ``name`` with ``arguments``; thread-safe. Returns the output (see
        :func:`hookstream_mcp.tool_output`: text, or structured content). Raises :class:`MCPToolError`
        for an ``isError`` result, a JSON-RPC error, a broken connection, a closed server, or when
        ``cancellation`` is set while waiting (the SDK then cancels the request). Without a
        ``cancellation`` token, ``call_timeout`` is the SDK's read timeout for the call (MCP error -32001
        past it); with one, the token's owner enforces it (the engine does, from ``Tool.timeout``).
        ``context``: the run's :class:`~hookstream.ToolContext` for this call (its token is then the
        ``cancellation``), where ``elicitation="run"`` asks the server's questions."""
        if context is not None:
            cancellation = context.cancellation
        call = Call(context)
        with self._lock:
            self._calls.append(call)
        try:
            return self._call(name, arguments, cancellation, call)
        finally:
            with self._lock:
                self._calls.remove(call)
            call.end()

    def _call(self, name: str, arguments: dict[str, Any] | None, cancellation: CancellationToken | None,
              call: Call) -> Any:
        loop, client = self._loop, self._client
        if loop is None or client is None:
            why = f": {self._failure}" if self._failure else ""
            state = "closed" if self._closed else "not connected" + why
            raise MCPToolError(f"MCP server {self.name} is {state}")
        # Under the engine the token carries call_timeout (Tool.timeout) and the run's cancellation, so one
        # clock decides; a direct call has no token and gets the SDK's read timeout instead.
        timeout = self.call_timeout if cancellation is None else None
        try:
            future = loop.submit(self._call_tool(client, call, name, arguments or {}, timeout))
        except RuntimeError:  # the loop stopped between the check and here
            raise MCPToolError(f"MCP server {self.name} is closed") from None
        while True:
            done, _ = concurrent.futures.wait([future], timeout=_POLL if cancellation is not None else None)
            if done:
                break
            if cancellation is not None and cancellation.cancelled:
                future.cancel()
                raise MCPToolError(f"the call to {name!r} was cancelled ({cancellation.reason})")
        try:
            result = future.result()
        except concurrent.futures.CancelledError:
            raise MCPToolError(f"MCP server {self.name} was closed during the call to {name!r}") from None
        except Exception as exc:
            denied = self._denied
            if denied is not None:  # a token revoked or out of scope mid-session: say so, not "-32603"
                raise MCPToolError(f"MCP server {self.name} refused the call to {name!r}: HTTP {denied[0]}"
                                   + (f" (WWW-Authenticate: {denied[1]})" if denied[1] else "")) from None
            raise MCPToolError(self._why(exc)) from None
        return tool_output(result)
