"""AG-UI over HTTP: events framed as SSE, and a WSGI application that runs a chat per POSTed run.

:func:`to_sse` frames a run's events the way AG-UI's HTTP transport reads them (``data: {json}``
followed by a blank line; camelCase JSON from :func:`hookstream.events.to_json`; ``RUN_STARTED``
carries ``protocolVersion``, ``RUN_FINISHED`` carries the summed usage).

:func:`make_app` returns a WSGI application. ``POST`` (any path) takes an AG-UI ``RunAgentInput``::

    {"threadId": str, "runId": str, "messages": [Message...], "tools": [Tool...],
     "state": any, "context": [...], "forwardedProps": any, "resume": [...]?}

and answers ``text/event-stream`` with the run's events, one SSE frame per event, written as soon as
the engine yields it. ``GET /`` serves the bundled chat page (``hookstream/web``). Source: AG-UI
protocol 1.0, ``RunAgentInput`` and the HTTP agent (``@ag-ui/client`` ``HttpAgent`` POSTs the input as
JSON with ``Accept: text/event-stream``).

Message conversion (:func:`messages_from_agui`): ``user``/``system``/``developer`` text becomes a
user/system message; a user message's media parts become :class:`~hookstream.FilePart`: AG-UI 1.0
``{"type": "image" | "audio" | "video" | "document", "source": {"type": "data", "value": base64,
"mimeType"} | {"type": "url", "value", "mimeType"?}}`` (spec/1.0 ``InputContent``), and the legacy
``{"type": "binary", "mimeType", "data" | "url", "filename"?}`` (``BinaryInputContent``, which 1.0
moved to ``ag_ui.core.deprecated``; older clients still send it). A ``{"type": "file"}`` source or a
binary ``id`` (a handle only its provider can read) cannot be resolved here and is an
:class:`~hookstream.errors.AGUIInputError`; an ``assistant``
message becomes text plus :class:`~hookstream.ToolCallPart` for each of its ``toolCalls`` (a call's
``approval: {"approved", "reason"?, "id"?}``, an approval answered in the client, is kept in its
``provider_metadata["hookstream"]["approval"]``; :func:`make_app` acts on it only for a call its own model
made, :mod:`hookstream_server.trust`);
consecutive ``tool`` messages become one ``tool`` message of
:class:`~hookstream.ToolResultPart`. ``reasoning`` and ``activity`` messages are UI-only and are
not sent to the model. Frontend-defined tools (``RunAgentInput.tools``) become client tools: the model
may call them, the run then ends and the frontend answers with a ``tool`` message in its next POST.

``POST /api/chat`` speaks the Vercel AI SDK UI message stream protocol instead (what ``useChat`` and its
``DefaultChatTransport`` send and read): the body ``{"id", "messages": [UIMessage...], "trigger",
"messageId"?}`` is read by :func:`hookstream_server.ui_message_stream.parse_chat_request` (``id`` is the thread id; an
``approval-responded`` tool part answers the pending approval, passed to the run as its ``resume``),
and the answer is the run framed by :func:`hookstream_server.ui_message_stream.to_ui_message_stream` with
``x-vercel-ai-ui-message-stream: v1``. Authentication, limits, thread ownership and the store apply
exactly as for AG-UI runs.

Thread safety: the application object is immutable after :func:`make_app` and serves concurrent requests
(one engine per request). A client that disconnects leaves its run going for
``ServerLimits.detached_run_seconds`` (its frames logged, for a reconnect: :mod:`hookstream_server.resume`);
with ``make_app(resumable=False)`` the run is cancelled at once.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any, Protocol
from urllib.parse import unquote

import attrs
from hookstream import (
    ChatStream,
    FilePart,
    Message,
    Part,
    Provider,
    Resume,
    RunSettings,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    chat,
    get_model,
)
from hookstream.errors import AGUIInputError, AlreadyAnsweredError, SteeringLimitError
from hookstream.events import BaseEvent, to_sse
from hookstream.plugin import approval_id
from hookstream.stores import ConversationStore, InMemoryStore, OwnedStore

from .auth import Authenticator, Principal
from .limits import PrincipalLimits, RunDeadlines, ServerLimits, TimedRun, retry_after
from .openai_compat import OPENAI_PREFIX, openai_error, responses_framing, serve_openai
from .openai_compat import PROTOCOL as OPENAI_RESPONSES
from .resume import PING, Pump, Recorder, Released, parse_last_event_id, tail
from .runlog import MemoryRunLog, RunLog, run_log_of
from .threads import StoreUnavailableError, ThreadKeeper, agui_ids, merge, stored_tool_calls
from .trust import ApprovalSigner, SignedApprovals, UsedApprovals, check_ids, vet
from .ui_message_stream import (
    UI_MESSAGE_STREAM_HEADERS,
    ChatRequest,
    parse_chat_request,
    to_ui_message_stream,
)

__all__ = [
    "AGUIInputError",
    "RunInput",
    "RunStream",
    "StreamFactory",
    "chat_factory",
    "make_app",
    "messages_from_agui",
    "parse_run_input",
    "to_sse",
    "to_ui_message_stream",
]

log = logging.getLogger("hookstream.agui")

SSE_HEADERS = [
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),
    # Reverse proxies (nginx) buffer responses unless told not to; an SSE stream must not be buffered.
    ("X-Accel-Buffering", "no"),
]

_UI_ONLY_ROLES = frozenset({"reasoning", "activity"})
_MAX_DEPTH = 64  # nesting of JSON arrays and objects in a request; deeper is refused before any work
_BODY_READ_TIMEOUT = 30.0  # seconds a client may take per read of its body (a slow sender is cut off)


# -- RunAgentInput ------------------------------------------------------------------------------------


@attrs.define(slots=True)
class RunInput:
    """The parts of an AG-UI ``RunAgentInput`` hookstream uses. ``tools`` are the frontend's tool
    definitions (``{"name", "description", "parameters"}``); ``resume`` holds the client's answers to
    the interrupts of the previous run (AG-UI 1.0 ``resume``), passed to the engine unchanged;
    ``principal`` is the authenticated caller, for a factory that serves each user differently."""

    thread_id: str
    run_id: str
    messages: list[Message]
    tools: list[dict[str, Any]]
    state: Any = None
    resume: list[dict[str, Any]] | None = None
    forwarded_props: Any = None
    principal: Principal | None = None
    """Who asked (``None`` on a server without authentication)."""
    message_id: str | None = None
    """The AI SDK route's run: the id of the assistant message its stream answers (the ``start``
    chunk's ``messageId``; kept so a run started again sends the same stream)."""


def _text_content(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for item in content:
            if not isinstance(item, dict) or item.get("type") != "text" or not isinstance(item.get("text"), str):
                raise AGUIInputError(f"{where}: only text content is supported, got {item!r:.200}")
            texts.append(item["text"])
        return "".join(texts)
    raise AGUIInputError(f"{where}: content must be a string or a list of text parts, got {type(content).__name__}")


def _user_parts(content: Any, where: str) -> list[Part]:
    """A user message's content: text parts and, from binary content parts, file parts, in order."""
    if not isinstance(content, list) or all(isinstance(c, dict) and c.get("type") == "text" for c in content):
        return [TextPart(_text_content(content, where))]
    parts: list[Part] = []
    for i, item in enumerate(content):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            parts.append(TextPart(item["text"]))
        elif kind in ("binary", "image", "audio", "document", "video"):
            parts.append(_binary_part(item, f"{where}.content[{i}]"))
        else:
            raise AGUIInputError(f"{where}: a user content part must be text or media, got {item!r:.200}")
    return parts


def _binary_part(item: dict[str, Any], where: str) -> FilePart:
    """A media part (``source`` form of AG-UI 1.0, or the legacy ``binary`` form) as a FilePart; raises
    AGUIInputError."""
    source = item.get("source")
    if isinstance(source, dict):  # {"type": "image", "source": {"type": "data" | "url", "value", "mimeType"}}
        mime = source.get("mimeType") or item.get("mimeType")
        data = source.get("value") if source.get("type") == "data" else None
        url = source.get("value") if source.get("type") == "url" else None
    else:
        mime, data, url = item.get("mimeType"), item.get("data"), item.get("url")
    filename = item.get("filename")
    if not isinstance(data, str) and not isinstance(url, str):
        raise AGUIInputError(f"{where}: a media part needs data or a url (a file id/handle cannot be resolved here)")
    try:
        if isinstance(data, str):
            f = FilePart.from_data_url(data if data.startswith("data:") else
                                       f"data:{mime or 'application/octet-stream'};base64,{data}")
        else:
            f = FilePart.from_url(str(url), mime if isinstance(mime, str) else None)
    except ValueError as exc:
        raise AGUIInputError(f"{where}: {exc}") from None
    if isinstance(mime, str) and mime:
        f.media_type = mime
    if isinstance(filename, str):
        f.filename = filename
    return f


def _tool_call_part(call: Any, where: str) -> ToolCallPart:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(call.get("id"), str) or not isinstance(fn.get("name"), str):
        raise AGUIInputError(f"{where}: a tool call needs id and function.name, got {call!r:.200}")
    raw = fn.get("arguments")
    raw = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        parsed = None
    part = ToolCallPart(call["id"], fn["name"], parsed if isinstance(parsed, dict) else None, raw)
    approval = call.get("approval")
    if isinstance(approval, dict) and (isinstance(approval.get("approved"), bool)
                                       or isinstance(approval.get("id"), str)):
        # An approval answered in the client and sent back on the call (as TanStack AI clients do), with
        # the approval id the server sent: the server turns it into the run's resume when the call is
        # one its model made (hookstream_server.trust).
        answer: dict[str, Any] = {"reason": approval.get("reason")}
        if isinstance(approval.get("approved"), bool):
            answer["approved"] = approval["approved"]
        if isinstance(approval.get("id"), str):
            answer["id"] = approval["id"]
        part.provider_metadata = {"hookstream": {"approval": answer}}
    return part


def messages_from_agui(messages: Any) -> list[Message]:
    """AG-UI messages to model messages (see the module docstring). Raises :class:`AGUIInputError` for
    a message that is not an object, an unknown role, content other than text (and binary parts in user
    messages), or a tool result whose ``toolCallId`` answers no earlier tool call."""
    if not isinstance(messages, list):
        raise AGUIInputError(f"messages must be a list, got {type(messages).__name__}")
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise AGUIInputError(f"{where} must be an object")
        role = m.get("role")
        if role in _UI_ONLY_ROLES:
            continue
        if role in ("system", "developer"):
            out.append(Message("system", [TextPart(_text_content(m.get("content"), where))]))
        elif role == "user":
            out.append(Message("user", _user_parts(m.get("content"), where)))
        elif role == "assistant":
            parts: list[Part] = []
            text = _text_content(m.get("content"), where)
            if text:
                parts.append(TextPart(text))
            for call in m.get("toolCalls") or []:
                part = _tool_call_part(call, where)
                names[part.id] = part.name
                parts.append(part)
            if parts:
                out.append(Message("assistant", parts))
        elif role == "tool":
            call_id = m.get("toolCallId")
            if not isinstance(call_id, str) or call_id not in names:
                raise AGUIInputError(f"{where}: toolCallId {call_id!r} answers no earlier assistant tool call")
            error = m.get("error")
            content = _text_content(m.get("content"), where)
            result = ToolResultPart(call_id, names[call_id], content or (error or ""), is_error=bool(error))
            if out and out[-1].role == "tool":
                out[-1].parts.append(result)
            else:
                out.append(Message("tool", [result]))
        else:
            raise AGUIInputError(f"{where}: unknown role {role!r}")
    return out


def parse_run_input(doc: Any) -> RunInput:
    """Read a decoded ``RunAgentInput`` JSON object. Raises :class:`AGUIInputError` naming the bad field."""
    if not isinstance(doc, dict):
        raise AGUIInputError("the body must be a JSON object (AG-UI RunAgentInput)")
    thread_id, run_id = doc.get("threadId"), doc.get("runId")
    if not isinstance(thread_id, str) or not thread_id:
        raise AGUIInputError("threadId must be a non-empty string")
    if not isinstance(run_id, str) or not run_id:
        raise AGUIInputError("runId must be a non-empty string")
    tools = doc.get("tools") or []
    if not isinstance(tools, list):
        raise AGUIInputError("tools must be a list")
    client_tools = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise AGUIInputError(f"tools[{i}] needs a name")
        client_tools.append({"name": t["name"], "description": t.get("description") or "",
                             "parameters": t.get("parameters") or {"type": "object", "properties": {}}})
    resume = doc.get("resume")
    if resume is not None and not isinstance(resume, list):
        resume = [resume]
    raw = doc.get("messages") or []
    messages = messages_from_agui(raw)
    agui_ids(raw, messages)
    return RunInput(thread_id, run_id, messages, client_tools, doc.get("state"), resume, doc.get("forwardedProps"))


def _parse_stored(keeper: ThreadKeeper, doc: Any) -> tuple[RunInput, list[Message], list[Message]]:
    """``parse_run_input`` against the thread's stored history: the model receives the history plus the
    request's new messages (merged by message id; returned too, after the request's messages as read),
    and a ``tool`` message may answer a stored call."""
    thread_id = doc.get("threadId") if isinstance(doc, dict) else None
    if not isinstance(thread_id, str) or not thread_id:
        run = parse_run_input(doc)  # raises, naming the field
        return run, run.messages, []
    history = keeper.history(thread_id)
    calls = stored_tool_calls(history)
    raw = doc.get("messages") or []
    if calls and isinstance(raw, list):
        # The stored calls go first as one assistant message, so the reader knows what a tool message
        # answers; that message is dropped again below.
        run = parse_run_input({**doc, "messages": [{"role": "assistant", "toolCalls": calls}, *raw]})
        run.messages = run.messages[1:]
    else:
        run = parse_run_input(doc)
    incoming = run.messages
    new = merge(history, incoming)
    run.messages = [*history, *new]
    return run, incoming, new


# -- the AI SDK chat request --------------------------------------------------------------------------

UI_CHAT_PATH = "/api/chat"
"""Where ``POST`` speaks the AI SDK UI message stream protocol (``useChat``'s default ``api``)."""


def _ui_run(doc: Any, keeper: ThreadKeeper | None
            ) -> tuple[RunInput, list[Message], list[Message], Callable[[RunStream], Generator[bytes, None, None]]]:
    """An AI SDK chat request (:func:`~hookstream_server.ui_message_stream.parse_chat_request`) as a :class:`RunInput`
    (thread id = the chat ``id``, a fresh run id, ``message_id`` the assistant message the answer
    continues or a fresh ``msg-<hex>``; with ``keeper``, the stored history plus the request's
    new messages, merged by id as for AG-UI), the request's messages as read, its new messages, and the
    framing of the answer. Approvals answered in the messages stay on their calls; the server's trust
    rule turns those of pending calls into the run's ``resume``. Raises :class:`AGUIInputError`,
    :class:`StoreUnavailableError`."""
    chat: ChatRequest = parse_chat_request(doc)
    messages, new = chat.messages, list(chat.messages)
    if keeper is not None:
        history = keeper.history(chat.chat_id)
        new = merge(history, chat.messages)
        messages = [*history, *new]
    # The approvals stay on the calls: the trust rule (hookstream_server.trust.vet) makes the resume.
    # An answer to an approval continues the client's assistant message: same id in ``start``.
    run = RunInput(chat.chat_id, f"run_{uuid.uuid4().hex}", messages, [], None, None, chat.extra or None,
                   message_id=chat.continues or f"msg-{uuid.uuid4().hex}")
    return run, chat.messages, new, _ui_frames(run)


def _ui_frames(run: RunInput) -> Callable[[RunStream], Generator[bytes, None, None]]:
    """The AI SDK framing of ``run``'s stream, made from ``run`` alone (so a run started again in another
    process sends the same frames): ``start`` names ``run.message_id``; a call ``run.resume`` denies
    (what the trust rule made of the request's answers, read when the run starts) ends
    ``tool-output-denied``."""

    def frames(stream: RunStream) -> Generator[bytes, None, None]:
        answers = Resume.coerce(run.resume or [])
        prefix = approval_id("")
        denied = {key.removeprefix(prefix) for key, approved in answers.approvals.items() if not approved}
        return to_ui_message_stream(stream, message_id=run.message_id, denied=denied)

    return frames


# -- the WSGI application -----------------------------------------------------------------------------

class RunStream(Protocol):
    """What a :data:`StreamFactory` returns: an iterable of the run's events that can be cancelled from
    another thread (:class:`~hookstream.ChatStream` is one)."""

    def __iter__(self) -> Iterator[BaseEvent]: ...

    def cancel(self) -> None: ...


StreamFactory = Callable[[RunInput], RunStream]
"""Builds the run's event stream from the request; :func:`chat_factory` is the default."""



def chat_factory(
    model: str | Provider,
    *,
    settings: RunSettings | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **fields: Any,
) -> StreamFactory:
    """A :data:`StreamFactory` running :func:`hookstream.chat` with ``model`` and the server's
    :class:`~hookstream.RunSettings` (``settings``, and/or its fields as keywords: ``tools``, ``system``,
    ``max_steps``, ``plugins``...), the request's frontend tools added as client tools. ``base_url`` and
    ``api_key`` build the one provider every run shares. Raises :class:`ValueError` at build time for a
    malformed ``model`` or duplicate server tool names, :class:`TypeError` for an unknown field. Each run's
    ``LoopSettings.principal`` is ``RunInput.principal`` (what the server's authenticator verified), so its
    tools see it as :attr:`hookstream.ToolContext.principal` and its run hooks as ``RunContext.principal``."""
    run_settings = RunSettings.of(settings, **fields)
    server_tools = {t.name: t for t in run_settings.tools}
    # One provider object for every run the server starts: one connection pool to the model's API.
    provider = get_model(model, base_url=base_url, api_key=api_key)
    loop = run_settings.loop

    def start(run: RunInput) -> ChatStream:
        clash = sorted(set(server_tools) & {t["name"] for t in run.tools})
        if clash:
            raise AGUIInputError(f"tools {clash} are defined by both the server and the frontend")
        return chat(provider, run.messages, settings=run_settings, tools=[*server_tools.values(), *run.tools],
                    thread_id=run.thread_id, resume=run.resume,
                    # The authenticated caller, never the body's word: tools read it as ToolContext.principal.
                    loop=attrs.evolve(loop, run_id=run.run_id, principal=run.principal))

    return start


def _static(name: str) -> bytes:
    return resources.files("hookstream_server").joinpath("web", name).read_bytes()


_STATIC_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8"}


def _json_error(start_response: Callable[..., Any], status: str, message: str,
                headers: Sequence[tuple[str, str]] = (), code: str | None = None) -> list[bytes]:
    error = {"message": message} if code is None else {"message": message, "code": code}
    body = json.dumps({"error": error}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers])
    return [body]


_DEADLINES = RunDeadlines()  # every run's max_run_seconds in this process, on one thread


class _RunBody:
    """The response body of one run: SSE frames as the engine yields them, produced on a pool thread
    (:class:`~hookstream_server.resume.Pump`) so that a quiet run still writes a ``: ping`` every
    ``ping_seconds`` and a client that left is noticed. Closing it early (client gone) cancels the run
    so its HTTP call and tools stop, or, with a recorder, leaves it going detached (its frames logged,
    for the client's reconnect) for up to ``detached_seconds`` (``None``: until it ends). ``release``
    runs once when the run is done (the principal's running-run count); a run still going after
    ``max_seconds`` is cancelled and ends with ``RUN_ERROR`` code ``run_timeout``."""

    def __init__(self, stream: RunStream, release: Callable[[], None] | None = None,
                 max_seconds: float | None = None,
                 frames: Callable[[RunStream], Generator[bytes, None, None]] = to_sse,
                 recorder: Recorder | None = None, detached_seconds: float | None = 0.0,
                 ping_seconds: float | None = None) -> None:
        # Past max_seconds the run ends with RUN_ERROR run_timeout (limits.TimedRun), not as a cancel.
        self._deadline = None if max_seconds is None else TimedRun(stream, max_seconds, _DEADLINES)
        self._stream: RunStream = stream if self._deadline is None else self._deadline
        self._frames: Generator[bytes, None, None] = frames(self._stream)
        self._release = release
        self._recorder = recorder
        self._detached_seconds = detached_seconds
        self._detached: int | None = None  # the deadline key of a detached run
        self._lock = threading.Lock()
        self._done = [False, False]  # the run has ended, the response is closed: then release
        # Chosen once: the frames as they are, or each numbered and logged by the recorder.
        source = self._frames if recorder is None else map(recorder.frame, self._frames)
        self._pump = Pump(source, ping_seconds, self._end)

    def __iter__(self) -> Iterator[bytes]:
        # Chosen once: without log-then-send the server reads the pump itself, no per-frame check.
        return self if self._recorder is not None and self._recorder.log_then_send else self._pump

    def __next__(self) -> bytes:
        frame = next(self._pump)
        if self._recorder is not None and frame is not PING:
            self._recorder.sent()  # log-then-send: the frame is in the log before the client has it
        return frame

    def close(self) -> None:
        """The response is done (a client gone before the run's end: see the class docstring)."""
        if not self._pump.detach():
            if self._recorder is None or self._detached_seconds == 0.0:
                self._stream.cancel()
            elif self._detached_seconds is not None:
                self._detached = _DEADLINES.add(self._detached_seconds, self._stream.cancel)
        self._settle(1)

    def _end(self) -> None:
        """The run is done (on the pump's thread)."""
        try:
            self._frames.close()
        finally:
            if self._recorder is not None:
                self._recorder.end()
            if self._deadline is not None:
                self._deadline.close()
            if self._detached is not None:
                _DEADLINES.cancel(self._detached)
            self._settle(0)

    def _settle(self, which: int) -> None:
        """Note the run's end (0) or the response's close (1); after both, ``release`` (a run steered
        until its response closes, as before the pump, and counted until it has ended)."""
        with self._lock:
            self._done[which] = True
            release = self._release if all(self._done) else None
            if release is not None:
                self._release = None
        if release is not None:
            release()


def _too_deep(doc: Any, limit: int) -> bool:
    """Whether ``doc`` nests arrays and objects deeper than ``limit`` (iteratively: no recursion to
    exhaust on a hostile body)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _read_body(environ: Mapping[str, Any], length: int) -> bytes:
    """The request body; a client that stalls longer than ``_BODY_READ_TIMEOUT`` per read (slowloris)
    is cut off: gunicorn hands the socket over as ``gunicorn.socket``; waitress buffers the whole body
    before the application runs, so nothing is read slowly there."""
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        try:
            sock.settimeout(_BODY_READ_TIMEOUT)
        except OSError:
            pass
    return bytes(environ["wsgi.input"].read(length)) if length else b""


def _cors_headers(environ: Mapping[str, Any], origins: frozenset[str]) -> list[tuple[str, str]]:
    origin = environ.get("HTTP_ORIGIN")
    if not origins or not isinstance(origin, str):
        return []
    if origin in origins or "*" in origins:
        return [("Access-Control-Allow-Origin", origin if "*" not in origins else "*"), ("Vary", "Origin")]
    return [("Vary", "Origin")]


def make_app(
    model: str | Provider | None = None,
    *,
    settings: RunSettings | None = None,
    base_url: str | None = None,
    stream_factory: StreamFactory | None = None,
    serve_page: bool = True,
    store: ConversationStore | None = None,
    authenticate: Authenticator | None = None,
    limits: ServerLimits | None = None,
    cors_origins: Iterable[str] = (),
    approval_secret: str | bytes | None = None,
    resumable: bool = True,
    **fields: Any,
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """A WSGI application serving AG-UI runs of ``model`` (``"PROVIDER:MODEL"``) with the server's
    :class:`~hookstream.RunSettings` (``settings`` and/or its fields as keywords, as :func:`chat_factory`
    takes them: ``tools``, ``system``, ``max_steps``, ``plugins``...).

    ``POST`` (any path): body = AG-UI ``RunAgentInput``; answer = ``text/event-stream`` of the run.
    ``POST /api/chat``: body = the Vercel AI SDK chat request (``useChat``); answer = the run as the AI SDK
    UI message stream (:mod:`hookstream_server.ui_message_stream`), through the same authentication, limits and store.
    ``POST /v1/chat/completions``, ``POST /v1/responses`` and ``GET /v1/models``: the agent as an OpenAI model
    (:mod:`hookstream_server.openai_compat`, docs/openai-endpoint.md), through the same authentication,
    limits, trust rule and store, errors in OpenAI's shape.
    ``POST /agui/threads/{threadId}/messages`` with ``{"content": str}``: a steering message for the running
    run of that thread, from the principal that started it (``202``; ``404`` for anyone else or no run
    streaming in this process, ``409`` once the run has ended; :func:`_post_message`).
    Bad input answers ``400`` with ``{"error": {"message": ...}}`` (invalid JSON or UTF-8, values
    nested deeper than 64, a malformed ``RunAgentInput``); a failure during the run ends the
    stream with ``RUN_ERROR``. ``GET /`` and ``GET /app.js`` serve the chat page when ``serve_page``.
    ``stream_factory`` replaces the default (:func:`chat_factory` of ``model``), e.g. to serve the
    offline demo.
    ``store`` keeps each thread's conversation (:func:`hookstream.stores.open_store`: SQLite, PostgreSQL):
    a request's messages are merged into the stored history by message id and what the run adds is
    saved when it ends, so any worker process serves any turn and resumes any interrupt
    (``hookstream_server.threads``; docs/agui-server.md, "Scaling out"). A store that fails answers
    ``503`` with ``{"error": {"message": "conversation store unavailable: ..."}}``.

    ``authenticate`` (``authenticate(environ) -> Principal | None``, see :mod:`hookstream_server.auth`)
    makes every ``POST`` name its principal: without one the answer is ``401`` with
    ``WWW-Authenticate: Bearer``. With a store, every thread belongs to the principal that created it
    (:meth:`~hookstream._stores.memory.OwnedStore.claim`): a run, a ``resume`` or a tool result on a thread of
    another principal is ``404`` and nothing is stored or run. ``limits`` (:class:`ServerLimits`,
    defaults when ``None``) answer ``429`` with ``Retry-After`` for an authenticated principal over its
    runs at once or per minute (without ``authenticate`` there is no principal to count), ``413`` for
    too many messages or bytes, and cancel a run past ``max_run_seconds`` (it ends with ``RUN_ERROR`` code
    ``run_timeout``).
    ``cors_origins`` are the browser origins allowed to call (``Access-Control-Allow-Origin`` set to
    the caller's origin when listed; none by default).

    Trust (:mod:`hookstream_server.trust`, docs/agui-server.md "Deployment"): a server-side tool runs
    only for a call this server's model made in that thread. With a ``store``, an assistant tool call
    the store does not hold is refused (``400``, ``{"error": {"message", "code": "untrusted_tool_call"}}``);
    without one, the approval ids the server hands out are signed with ``approval_secret`` (text or
    bytes, at least 16 bytes; default ``$HOOKSTREAM_APPROVAL_SECRET``, else random per application
    object, so worker processes must share the object or the secret) and a pending call runs only with
    a valid one, handed to the same principal at most an hour before
    (:data:`hookstream_server.trust.APPROVAL_SECONDS`). Ids longer than 128 characters or outside
    ``A-Z a-z 0-9 - _ . : ~ @ + =`` are ``400``.
    A thread is claimed only once its request passed authentication, limits and these checks; then its
    answers are: the pending calls it settles in the store (``claim_answers``), or the signed approval
    ids it used in a SQLite file the application makes (:class:`~hookstream_server.trust.UsedApprovals`,
    shared by worker processes forked after it). A second answer to one pending call, or a replayed
    approval id, is ``409`` (``{"error": {"code": "already_answered"}}``) and runs nothing.

    ``resumable`` (docs/agui-server.md, "Resuming a stream"): every SSE frame of a run carries
    ``id: <runId>:<seq>`` and is kept in an event log (the SQL store's, shared by worker processes; else
    this process's memory) within ``limits``' ``event_log_events`` / ``event_log_bytes``, for
    ``event_log_seconds`` after the run ends. ``GET /agui/threads/{threadId}/runs/{runId}/events`` with
    ``Last-Event-ID`` resumes an AG-UI run; ``GET /api/chat/{id}/stream`` replays the AI SDK chat's
    running stream (``204`` when none); only the principal that started the run may (``404``). A client
    that disconnects leaves its run going for ``detached_run_seconds``. ``resumable=False``: no ids, no
    log, a client that disconnects cancels its run at once.

    Raises :class:`ValueError` when neither ``model`` nor ``stream_factory`` is given, for an
    ``approval_secret`` under 16 bytes,
    :class:`TypeError` for an ``authenticate`` that is not callable, or a ``store`` that keeps no
    owners (no ``claim``) given with ``authenticate``.
    """
    if stream_factory is None:
        if model is None:
            raise ValueError("make_app needs a model or a stream_factory")
        stream_factory = chat_factory(model, settings=settings, base_url=base_url, **fields)
    if authenticate is not None and not callable(authenticate):
        raise TypeError(f"authenticate must be callable, not {type(authenticate).__name__}")
    if authenticate is not None and store is not None and not isinstance(store, OwnedStore):
        raise TypeError(f"{type(store).__name__} keeps no thread owners (no claim()): with authenticate, "
                        "threads of one principal would be open to all")
    if limits is not None and not isinstance(limits, ServerLimits):
        raise TypeError(f"limits must be ServerLimits, not {type(limits).__name__}")
    limits = limits or ServerLimits()
    return _App(factory=stream_factory, keeper=ThreadKeeper(store) if store is not None else None,
                owned=store if isinstance(store, OwnedStore) else None, limits=limits,
                counts=PrincipalLimits(limits), authenticate=authenticate, origins=frozenset(cors_origins),
                serve_page=serve_page,
                signer=ApprovalSigner.from_setting(approval_secret) if store is None else None,
                used=UsedApprovals() if store is None else None,
                log=_run_log(store, limits) if resumable else None)


def _run_log(store: ConversationStore | None, limits: ServerLimits) -> RunLog:
    """The store's event log when it has one (a store's own ``run_log()``, else one in a SQL store's
    database: shared by worker processes), else one in this process's memory, within ``limits``'
    ``event_log_total_bytes`` and ``event_log_principal_bytes``."""
    make = getattr(store, "run_log", None)
    got = make() if callable(make) else run_log_of(store)
    if isinstance(got, RunLog):
        return got
    return MemoryRunLog(total_bytes=limits.event_log_total_bytes, principal_bytes=limits.event_log_principal_bytes)


class _Refused(Exception):
    """A POST answered with an HTTP error before any run starts: status line, message, extra headers."""

    def __init__(self, status: str, message: str, *headers: tuple[str, str], code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers
        self.code = code


_Frames = Callable[[RunStream], Generator[bytes, None, None]]
_FRAMINGS: dict[str, Callable[[RunInput], _Frames]] = {"agui": lambda run: to_sse, "ui": _ui_frames,
                                                        OPENAI_RESPONSES: responses_framing}
"""Per protocol (``hookstream_serve_run``'s): the framing of a run's events, made from its input."""


@attrs.define(slots=True)
class _Options:
    """The application's switches plugins set before it serves (:meth:`_App.log_then_send`)."""

    log_then_send: bool = False


def _serve_run_hook() -> Any:
    """The registry's ``hookstream_serve_run`` hook when a plugin implements it, else ``None``."""
    from hookstream import get_registry

    hook = getattr(get_registry().pm.hook, "hookstream_serve_run", None)
    return hook if hook is not None and hook.get_hookimpls() else None


@attrs.frozen
class _App:
    """The WSGI application :func:`make_app` returns (the routes and answers are documented there).
    Immutable: serves concurrent requests."""

    factory: StreamFactory
    keeper: ThreadKeeper | None
    owned: OwnedStore | None  # the store when it keeps thread owners
    limits: ServerLimits
    counts: PrincipalLimits
    authenticate: Authenticator | None
    origins: frozenset[str]
    serve_page: bool
    signer: ApprovalSigner | None  # a server without a store signs the approvals it hands out
    log: RunLog | None  # every run's frames, for a client that reconnects (hookstream_server.resume)
    running: _RunningRuns = attrs.field(factory=lambda: _RunningRuns())
    handed: _HandedCounts = attrs.field(factory=lambda: _HandedCounts())  # taken-over POSTs' counts
    used: UsedApprovals | None = None  # a stateless server's used approval ids (shared by its workers)
    answers: InMemoryStore = attrs.field(factory=InMemoryStore)  # claims, for a store without claim_answers
    options: _Options = attrs.field(factory=lambda: _Options())  # what plugins switch on (log_then_send)

    def __call__(self, environ: Mapping[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO") or "/"
        cors = _cors_headers(environ, self.origins)
        if path.startswith(OPENAI_PREFIX) and method != "OPTIONS":  # hookstream_server.openai_compat
            try:
                return serve_openai(self, environ, start_response, cors, _RunBody)
            except _Refused as refused:
                return openai_error(start_response, refused.status, refused.message, [*refused.headers, *cors],
                                    refused.code)
        if method == "POST":
            try:
                steer = _STEER_PATH.match(path)
                if steer is not None:
                    return _post_message(self, environ, start_response, cors, unquote(steer["thread"]))
                return self._post(environ, start_response, cors, ui=path == UI_CHAT_PATH)
            except _Refused as refused:
                return _json_error(start_response, refused.status, refused.message, [*refused.headers, *cors],
                                   refused.code)
        if method == "OPTIONS":
            return _preflight(start_response, cors)
        resumed = _RESUME_AGUI.match(path) or _RESUME_UI.match(path) if method == "GET" else None
        if resumed is not None:
            try:
                return _resume(self, environ, start_response, cors, resumed)
            except _Refused as refused:
                return _json_error(start_response, refused.status, refused.message, [*refused.headers, *cors],
                                   refused.code)
        if method in ("GET", "HEAD") and self.serve_page:
            return _page(method, path, start_response, cors)
        return _json_error(start_response, "405 Method Not Allowed", "POST an AG-UI RunAgentInput", cors)

    def _post(self, environ: Mapping[str, Any], start_response: Callable[..., Any],
              cors: list[tuple[str, str]], ui: bool) -> Iterable[bytes]:
        """A run: checked in order (principal, body, sizes, ids, run limits, thread owner, messages and
        the trust rule), then the thread is claimed and the run started. Raises :class:`_Refused` for the
        error answer; a refused request claims no thread."""
        principal = self._principal(environ)
        who = principal.id if principal is not None else None
        # Without authentication every caller is the same anonymous principal: a shared cap on runs
        # would let one client starve all others, so the run limits apply per authenticated principal.
        # The request counts from before its body is read: a slow body holds a thread as a run does.
        self._hold(who)
        try:
            doc, raw = self._body(environ)
            self._check_messages(doc, raw)
            try:
                check_ids(doc, ui)
            except AGUIInputError as exc:
                raise _Refused("400 Bad Request", str(exc), code=exc.code) from exc
            self._admit(who)
            stream, frames, run = self._run_stream(doc, principal, ui, who)
        except BaseException:
            if who is not None:
                self.counts.finish(who)
            raise
        run_id = run.run_id
        thread_id = doc.get("id" if ui else "threadId") if isinstance(doc, dict) else None
        recorder = None
        protocol = "ui" if ui else "agui"
        if isinstance(thread_id, str) and thread_id and self.log is not None:
            recorder = Recorder(self.log, self.limits, thread_id, run_id, who, protocol,
                                log_then_send=self.options.log_then_send)
            if not recorder.opened:  # the ids are another principal's, or of a run still going
                self._drop(stream, who)
                raise _Refused("409 Conflict", f"run {run_id!r} on thread {thread_id!r} cannot be started: "
                                               "its runId is in use")
        taken = self._taken_over(run, protocol, stream, who)
        start_response("200 OK", [*(UI_MESSAGE_STREAM_HEADERS if ui else SSE_HEADERS), *cors])
        if taken is not None:
            return taken
        counts = self.counts
        # The run takes steering messages from its owner (POST /agui/threads/{id}/messages) while it streams.
        left = None if self.limits.max_message_bytes is None else self.limits.max_message_bytes - len(raw)
        forget = self.running.add(thread_id, who, stream, left) if isinstance(thread_id, str) and thread_id else None

        def release() -> None:
            if forget is not None:
                forget()
            if who is not None:
                counts.finish(who)

        return _RunBody(stream, release, self.limits.max_run_seconds, frames, recorder,
                        self.limits.detached_run_seconds, self.limits.ping_seconds)

    def _taken_over(self, run: RunInput, protocol: str, stream: RunStream, who: str | None
                    ) -> Iterable[bytes] | None:
        """Ask the plugins whether one takes ``run`` over (``hookstream_serve_run``,
        :mod:`hookstream_server.hookspecs`); if one does, the POST's answer: the run's log as it fills."""
        hook = _serve_run_hook()
        if hook is None:
            return None
        flush = getattr(self.log, "flush", None)
        if callable(flush):
            flush()  # the entry is in a shared log before any process may go on with the run
        counts, limits = self.counts, self.limits
        # Offered before the hook runs: the plugin may start the run here before the hook returns (never
        # without a log: run_detached needs one, and the POST is then refused, its offer never taken).
        key = (run.thread_id, run.run_id, who)
        done = self.handed.hold(key, lambda: counts.finish(who)) if who is not None and self.log is not None else None
        try:
            taken = hook(app=self, run=run, protocol=protocol)
        except BaseException:
            self.handed.drop(key)
            self._drop(stream, who)
            raise
        if not taken:
            self.handed.drop(key)
            return None
        if self.log is None:
            self._drop(stream, who)
            raise _Refused("500 Internal Server Error", "a plugin took the run over, but the server keeps no "
                                                        "event log (make_app(resumable=False))")
        stream.cancel()  # never iterated: nothing was sent or run
        # The run waits for an answer or runs elsewhere: never a gap in the log, so no wait limit.
        frames = tail(self.log, run.thread_id, run.run_id, 0, limits.ping_seconds, None)
        return frames if done is None else Released(frames, done)

    def _drop(self, stream: RunStream, who: str | None) -> None:
        """Cancel a run never iterated and stop counting it toward ``who``'s running runs."""
        stream.cancel()
        if who is not None:
            self.counts.finish(who)

    def run_detached(self, run: RunInput, protocol: str = "agui") -> None:
        """Start ``run`` in this process with no client (a run recovered after its process died, a run
        answered later): its frames go to the run event log under ``(run.thread_id, run.run_id)``,
        continuing what the log holds there (the frames it sends again equal to logged ones are not
        logged twice; :class:`~hookstream_server.resume.Recorder`, ``continuing``), so a client reads it
        through the resume route (``GET /agui/threads/{threadId}/runs/{runId}/events``; an AI SDK run,
        ``protocol`` ``"ui"``: ``GET /api/chat/{id}/stream`` while it runs; a background OpenAI response,
        ``"responses"``: ``GET /v1/responses/{id}?stream=true``). With a store,
        what the run adds to the thread is saved when it ends, as for a live run (``run.messages`` is the
        conversation it starts from, as the POST that started it had it). It counts toward
        ``run.principal``'s running runs until it ends (never refused: it was admitted before), ends after
        ``max_run_seconds`` at most, and its log ends and expires as a live run's does. A run started
        under the ids of a POST of this process that a plugin took over (``hookstream_serve_run``) is that
        POST's run: the two count once, until the later of them is done.

        Returns once the run is started (it runs on a thread of the server's pool). ``protocol``:
        ``"agui"`` (AG-UI SSE), ``"ui"`` (the AI SDK UI message stream, framed from ``run`` alone:
        ``run.message_id``, the denials in ``run.resume``) or ``"responses"`` (the Responses API events of
        ``resp_<hex>`` for ``run_<hex>``: :func:`hookstream_server.openai_compat.responses_framing`).
        Raises :class:`ValueError` for another protocol, an application without an event log
        (``resumable=False``), or ids logged for another principal; what the stream factory raises (a bad
        input: :class:`~hookstream.errors.AGUIInputError`). Thread safety: call it from any thread."""
        framing = _FRAMINGS.get(protocol)
        if framing is None:
            raise ValueError(f"run_detached serves AG-UI, AI SDK and background OpenAI responses, not {protocol!r}")
        if self.log is None:
            raise ValueError("run_detached needs the run event log (make_app(resumable=True))")
        who = run.principal.id if run.principal is not None else None
        counts = self.counts
        done = self.handed.adopt((run.thread_id, run.run_id, who)) if who is not None else None
        if done is None:
            counts.hold_always(who)
            done = functools.partial(counts.finish, who)
        try:
            stream: RunStream = self.factory(run)
            if self.signer is not None:
                stream = SignedApprovals(stream, self.signer, run.thread_id, who)
            if self.keeper is not None:
                stream = self.keeper.wrap(run.thread_id, run.messages, [], stream)
            recorder = Recorder(self.log, self.limits, run.thread_id, run.run_id, who, protocol, continuing=True)
            if not recorder.opened:
                stream.cancel()
                raise ValueError(f"run {run.run_id!r} on thread {run.thread_id!r} is logged for another principal")
        except BaseException:
            done()
            raise
        forget = self.running.add(run.thread_id, who, stream, None)

        def release() -> None:
            forget()
            done()

        body = _RunBody(stream, release, self.limits.max_run_seconds, framing(run), recorder, None, None)
        body.close()  # no client: the run goes on detached until it ends

    def log_then_send(self, on: bool = True) -> None:
        """From now on (``on``), each frame of a live run is in the run event log before its client gets it
        (a SQL log writes it at once, in one transaction with what other runs logged meanwhile), so a
        client never holds a frame that a crash kept out of the log: what a run recovered elsewhere
        continues from (hookstream-dbos's ``serve --durable``). Call it before serving
        (``hookstream_serve_process``)."""
        self.options.log_then_send = on

    def _hold(self, who: str | None) -> None:
        """Count a request of ``who`` toward its concurrent limit (``429`` past it); nothing without a principal."""
        if who is not None and (wait := self.counts.hold(who)) is not None:
            raise _Refused("429 Too Many Requests", "too many requests at once: try again later",
                           ("Retry-After", retry_after(wait)))

    def _admit(self, who: str | None) -> None:
        """Take one of ``who``'s per-minute permits (``429`` when none is free)."""
        if who is not None and (wait := self.counts.admit(who)) is not None:
            raise _Refused("429 Too Many Requests", "too many runs: try again later",
                           ("Retry-After", retry_after(wait)))

    def _principal(self, environ: Mapping[str, Any]) -> Principal | None:
        if self.authenticate is None:
            return None
        principal = self.authenticate(environ)
        if principal is None:
            raise _Refused("401 Unauthorized", "authentication required",
                           ("WWW-Authenticate", 'Bearer realm="hookstream"'))
        return principal

    def _body(self, environ: Mapping[str, Any], limit: int | None = None) -> tuple[Any, bytes]:
        """The request's JSON document and its bytes (at most ``limit``, default ``max_body_bytes``:
        ``413`` from its ``Content-Length`` before it is read, or once read)."""
        limit = self.limits.max_body_bytes if limit is None else min(limit, self.limits.max_body_bytes)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            raise _Refused("413 Payload Too Large", f"body over {limit} bytes")
        try:
            raw = _read_body(environ, length)
        except (OSError, ValueError) as exc:
            raise _Refused("408 Request Timeout", "the request body did not arrive in time") from exc
        if len(raw) > limit:
            raise _Refused("413 Payload Too Large", f"body over {limit} bytes")
        try:
            doc = json.loads(raw or b"null")
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise _Refused("400 Bad Request", f"the body is not JSON: {type(exc).__name__}") from exc
        if _too_deep(doc, _MAX_DEPTH):
            raise _Refused("400 Bad Request", f"values nested deeper than {_MAX_DEPTH}")
        return doc, raw

    def _check_messages(self, doc: Any, raw: bytes) -> None:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return
        limits = self.limits
        if limits.max_messages is not None and len(messages) > limits.max_messages:
            raise _Refused("413 Payload Too Large", f"more than {limits.max_messages} messages")
        if (limits.max_message_bytes is not None and len(raw) > limits.max_message_bytes
                and len(json.dumps(messages).encode()) > limits.max_message_bytes):
            raise _Refused("413 Payload Too Large", f"messages over {limits.max_message_bytes} bytes")

    @staticmethod
    def _claim(owned: OwnedStore, thread_id: str, who: str | None, check_only: bool = False) -> None:
        """Claim ``thread_id`` for ``who`` (``check_only``: only check that a claim would succeed, for a
        store with ``may_claim``; the claim then follows once the request passed every check)."""
        # A store of its own without may_claim is claimed at the check, before its thread is read.
        may_claim = getattr(owned, "may_claim", None) if check_only else None
        try:
            mine = may_claim(thread_id, who) if may_claim is not None else owned.claim(thread_id, who)
        except Exception as exc:
            log.error("claiming thread failed", exc_info=exc)
            raise _Refused("503 Service Unavailable", f"conversation store unavailable: {type(exc).__name__}") from exc
        if not mine:
            raise _Refused("404 Not Found", f"no thread {thread_id!r}")

    def _claim_answers(self, thread_id: str, claims: list[str]) -> None:
        """Use the request's answers once (:func:`hookstream_server.trust.answer_claims`): claim its
        pending calls in the store, or record its signed approval ids as used. ``409`` when another
        request did first, ``503`` when the store (or the file of used ids) fails."""
        if not claims:
            return
        try:
            if self.signer is not None and self.used is not None:
                # Kept past the id's lifetime (and the clock skew verify allows): an older one is refused anyway.
                expires_at = time.time() + self.signer.seconds + 120.0
                fresh = self.used.use([(c, expires_at) for c in claims])
            else:
                store = self.keeper.store if self.keeper is not None else None
                # A store of its own without claim_answers: claims held in this process only (documented).
                claim = getattr(store, "claim_answers", None) or self.answers.claim_answers
                fresh = bool(claim(thread_id, claims))
        except Exception as exc:
            log.error("claiming the answers failed", exc_info=exc)
            raise _Refused("503 Service Unavailable", f"conversation store unavailable: {type(exc).__name__}") from exc
        if not fresh:
            raise _Refused("409 Conflict", f"the pending tool call on thread {thread_id!r} was answered already: "
                           "nothing was run", code=AlreadyAnsweredError.code)

    def _run_stream(self, doc: Any, principal: Principal | None, ui: bool, who: str | None
                    ) -> tuple[RunStream, _Frames, RunInput]:
        """The run's event stream (wrapped by the store's keeper when there is one, by the approval
        signer when there is none), its framing and its input; the thread is claimed last."""
        keeper, factory, owned = self.keeper, self.factory, self.owned
        thread_id = doc.get("id" if ui else "threadId") if isinstance(doc, dict) else None
        if owned is not None and isinstance(thread_id, str) and thread_id:
            self._claim(owned, thread_id, who, check_only=True)  # 404 before the thread is read
        frames: _Frames = to_sse
        try:
            if ui:
                run, incoming, new, frames = _ui_run(doc, keeper)
            elif keeper is None:
                run = parse_run_input(doc)
                incoming, new = run.messages, []
            else:
                run, incoming, new = _parse_stored(keeper, doc)
            claims: list[str] = []
            run.messages, run.resume = vet(run.messages, incoming, run.resume, thread_id=run.thread_id,
                                           new=new if keeper is not None else None, signer=self.signer,
                                           frontend_tools=frozenset(t["name"] for t in run.tools),
                                           principal=who, claims=claims)
            run.principal = principal
            stream: RunStream = factory(run)
            if self.signer is not None:
                stream = SignedApprovals(stream, self.signer, run.thread_id, who)
        except AlreadyAnsweredError as exc:
            raise _Refused("409 Conflict", str(exc), code=exc.code) from exc
        except (ValueError, LookupError) as exc:  # AGUIInputError, a bad model, an unknown provider or executor
            # the client's mistake
            raise _Refused("400 Bad Request", str(exc), code=getattr(exc, "code", None)) from exc
        except StoreUnavailableError as exc:
            log.error("%s", exc, exc_info=exc.__cause__)
            raise _Refused("503 Service Unavailable", str(exc)) from exc
        try:
            if owned is not None:
                self._claim(owned, run.thread_id, who)
            self._claim_answers(run.thread_id, claims)  # last: a refused request uses no answer
            if keeper is not None:
                stream = keeper.wrap(run.thread_id, run.messages, new, stream)
        except StoreUnavailableError as exc:
            stream.cancel()
            log.error("%s", exc, exc_info=exc.__cause__)
            raise _Refused("503 Service Unavailable", str(exc)) from exc
        except _Refused:
            stream.cancel()
            raise
        return stream, frames, run


# -- steering a running run ---------------------------------------------------------------------------

STEER_PATH = "/agui/threads/{threadId}/messages"
"""Where the owner of a thread POSTs a steering message for its running run (``make_app``)."""
_STEER_PATH = re.compile(r"^/agui/threads/(?P<thread>[^/]+)/messages$")


class _HandedCounts:
    """The running-run counts of this process's POSTs that a plugin took over, by ``(thread id, run id,
    principal)``: the run a plugin then starts here under the same ids (``run_detached``) shares its
    POST's count instead of taking another (one answer, one count, as without the plugin), and the
    count is dropped once, when the later of the two is done. A process that dies takes its counts with
    it (:class:`~hookstream_server.limits.SharedCounts`). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str, str | None], list[Any]] = {}  # key -> [holders, release]

    def hold(self, key: tuple[str, str, str | None], release: Callable[[], None]) -> Callable[[], None]:
        """Offer the POST's count under ``key``; returns what the POST calls, once, when it is done."""
        entry: list[Any] = [1, release]
        with self._lock:
            self._held[key] = entry
        return functools.partial(self._done, key, entry)

    def drop(self, key: tuple[str, str, str | None]) -> None:
        """The POST was not taken over: its count is released as a run's (nothing shares it later)."""
        with self._lock:
            self._held.pop(key, None)

    def adopt(self, key: tuple[str, str, str | None]) -> Callable[[], None] | None:
        """Share the count a POST offered under ``key`` (once): what the run calls, once, when it is done;
        ``None`` when none is offered (or its POST is done)."""
        with self._lock:
            entry = self._held.pop(key, None)
            if entry is None:
                return None
            entry[0] += 1
        return functools.partial(self._done, key, entry)

    def _done(self, key: tuple[str, str, str | None], entry: list[Any]) -> None:
        with self._lock:
            entry[0] -= 1
            if entry[0]:
                return
            if self._held.get(key) is entry:
                del self._held[key]
        entry[1]()


@attrs.define(eq=False)
class _Running:
    """A run steering messages may reach: who started it, its stream, and the bytes of messages it may
    still take (``None``: no limit), lowered under ``lock`` by each message it takes."""

    who: str | None
    stream: RunStream
    bytes_left: int | None
    lock: threading.Lock = attrs.field(factory=threading.Lock)


class _RunningRuns:
    """The runs this process is streaming, by thread id, with the principal that started each: where a
    steering message finds its run. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[_Running]] = {}

    def add(self, thread_id: str, who: str | None, stream: RunStream, bytes_left: int | None = None
            ) -> Callable[[], None]:
        """Note a run that may take ``bytes_left`` more bytes of steering messages; returns what forgets
        it (called when its response body is done)."""
        entry = _Running(who, stream, bytes_left)
        with self._lock:
            self._runs.setdefault(thread_id, []).append(entry)

        def forget() -> None:
            with self._lock:
                runs = self._runs.get(thread_id, [])
                if entry in runs:
                    runs.remove(entry)
                if not runs:
                    self._runs.pop(thread_id, None)

        return forget

    def find(self, thread_id: str, who: str | None) -> _Running | None:
        """The latest run on ``thread_id`` started by ``who``; ``None`` when there is none (or only other
        principals' runs: a thread of someone else's is not told apart from no thread)."""
        with self._lock:
            runs = [r for r in self._runs.get(thread_id, []) if r.who == who]
        return runs[-1] if runs else None


def _post_message(app: _App, environ: Mapping[str, Any], start_response: Callable[..., Any],
                  cors: list[tuple[str, str]], thread_id: str) -> Iterable[bytes]:
    """``POST /agui/threads/{threadId}/messages`` with ``{"content": str}`` (an AG-UI user message's
    ``role``, when given, must be ``user``): queue a steering message for the thread's running run
    (:meth:`hookstream.ChatStream.add_message`) and answer ``202`` ``{"queued": true}``. ``401`` without
    a principal (with ``authenticate``), ``400`` for another body, ``404`` when this process streams no
    run of the caller on that thread (another principal's run included), ``409`` when the run has just
    ended or its stream takes no messages. Limits (docs/agui-server.md, "Limits"): the request counts
    toward the principal's ``max_concurrent_runs`` while its body is read and takes one of its
    ``runs_per_minute`` permits (``429``); a body over ``max_message_bytes`` (``413``, from its
    ``Content-Length`` before it is read), messages whose bytes with the run's request would pass it, or
    a conversation that would pass ``max_messages`` is ``413``; more than ``max_queued_messages`` waiting
    for the run's next step is ``429``. Raises :class:`_Refused` for the error answers."""
    principal = app._principal(environ)
    who = principal.id if principal is not None else None
    limits = app.limits
    app._hold(who)
    try:
        doc, raw = app._body(environ, limits.max_message_bytes)
    finally:
        if who is not None:
            app.counts.finish(who)
    content = doc.get("content") if isinstance(doc, dict) else None
    if not isinstance(content, str) or not content.strip() or doc.get("role", "user") != "user":
        raise _Refused("400 Bad Request", 'the body must be {"content": str} (a user message)')
    run = app.running.find(thread_id, who)
    if run is None:
        raise _Refused("404 Not Found", f"no running run on thread {thread_id!r}")
    app._admit(who)
    add = getattr(run.stream, "add_message", None)
    if add is None:
        raise _Refused("409 Conflict", "the run on this thread takes no message")
    with run.lock:
        if run.bytes_left is not None and len(raw) > run.bytes_left:
            raise _Refused("413 Payload Too Large", f"the run's messages would pass {limits.max_message_bytes} bytes")
        try:
            queued = add(content, max_messages=limits.max_messages, max_queued=limits.max_queued_messages)
        except SteeringLimitError as exc:
            if exc.limit == "max_queued":
                raise _Refused("429 Too Many Requests", str(exc), ("Retry-After", "1"), code=exc.code) from exc
            raise _Refused("413 Payload Too Large", str(exc), code=exc.code) from exc
        if not queued:
            raise _Refused("409 Conflict", "the run on this thread takes no message: it has ended")
        if run.bytes_left is not None:
            run.bytes_left -= len(raw)
    body = b'{"queued": true}'
    start_response("202 Accepted", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                    *cors])
    return [body]


# -- resuming a stream --------------------------------------------------------------------------------

RESUME_PATH = "/agui/threads/{threadId}/runs/{runId}/events"
"""Where ``GET`` with ``Last-Event-ID`` resumes an AG-UI run's event stream (``make_app``)."""
_RESUME_AGUI = re.compile(r"^/agui/threads/(?P<thread>[^/]+)/runs/(?P<run>[^/]+)/events$")
_RESUME_UI = re.compile(r"^/api/chat/(?P<chat>[^/]+)/stream$")


def _resume(app: _App, environ: Mapping[str, Any], start_response: Callable[..., Any],
            cors: list[tuple[str, str]], match: re.Match[str]) -> Iterable[bytes]:
    """``GET /agui/threads/{threadId}/runs/{runId}/events`` (``Last-Event-ID: <runId>:<seq>`` header, or
    ``?lastEventId=``, ``<seq>`` 1 to 12 ASCII digits; none: from the first frame): the run's later frames,
    each once, then its live tail until it ends. ``GET /api/chat/{id}/stream`` (the AI SDK's
    ``reconnectToStream``): the chat's running stream from its start, ``204`` when none runs. A quiet
    stream sends ``: ping`` every ``ping_seconds`` and ends after ``resume_wait_seconds`` without a frame.
    ``401`` without a principal (with ``authenticate``), ``400`` for a bad id, ``429`` (``Retry-After``)
    past the principal's ``max_resume_streams``, ``410`` for an AG-UI run whose log passed its bounds. A
    run (or thread) of another principal is answered exactly as none: ``404`` with the same text for
    AG-UI, ``204`` for the AI SDK. Raises :class:`_Refused`."""
    principal = app._principal(environ)
    who = principal.id if principal is not None else None
    groups = match.groupdict()
    ui = "chat" in groups
    thread_id = unquote(groups["chat"] if ui else groups["thread"])
    run_id = "" if ui else unquote(groups["run"])
    try:
        check_ids({"id": thread_id} if ui else {"threadId": thread_id, "runId": run_id}, ui)
    except AGUIInputError as exc:
        raise _Refused("400 Bad Request", str(exc), code=exc.code) from exc
    after = 0
    if not ui:
        query = dict(p.partition("=")[::2] for p in str(environ.get("QUERY_STRING") or "").split("&") if p)
        try:
            after = parse_last_event_id(environ.get("HTTP_LAST_EVENT_ID") or unquote(query.get("lastEventId", "")),
                                        run_id)
        except AGUIInputError as exc:
            raise _Refused("400 Bad Request", str(exc), code=exc.code) from exc
    run = _resumable(app, thread_id, run_id, who, ui)
    if run is None:
        if ui:
            start_response("204 No Content", [("Content-Length", "0"), *cors])
            return []
        raise _Refused("404 Not Found", f"no run {run_id!r} on thread {thread_id!r}")
    # Each resumed stream holds a server thread until its run ends: counted per principal, like runs.
    if who is not None and not app.counts.open_stream(who):
        raise _Refused("429 Too Many Requests", "too many resumed streams: try again later", ("Retry-After", "1"))
    assert app.log is not None
    limits = app.limits
    start_response("200 OK", [*(UI_MESSAGE_STREAM_HEADERS if ui else SSE_HEADERS), *cors])
    frames = tail(app.log, thread_id, run.run_id, after, limits.ping_seconds, limits.resume_wait_seconds)
    return frames if who is None else Released(frames, lambda: app.counts.close_stream(who))


def _resumable(app: _App, thread_id: str, run_id: str, who: str | None, ui: bool) -> Any:
    """The logged run a resume reads (the latest running AI SDK run of the chat, for ``ui``); ``None``
    for none, another principal's (thread or run: the caller answers both alike) or one that ended
    (``ui``). Raises :class:`_Refused` ``410`` for an AG-UI run whose log passed its bounds, ``503``."""
    if app.log is None:  # make_app(resumable=False)
        return None
    if app.owned is not None:
        try:
            app._claim(app.owned, thread_id, who, check_only=True)
        except _Refused as refused:
            if refused.status.startswith("404"):
                return None
            raise
    try:
        run = app.log.latest(thread_id, "ui", who) if ui else _logged(app.log, thread_id, run_id)
    except Exception as exc:
        log.error("reading the run event log failed", exc_info=exc)
        raise _Refused("503 Service Unavailable", f"conversation store unavailable: {type(exc).__name__}") from exc
    if run is None or run.owner != who or run.protocol != ("ui" if ui else "agui"):
        return None
    if ui and (run.ended or run.truncated):
        return None
    if run.truncated:
        raise _Refused("410 Gone", "the run's event log passed its limits: it cannot be resumed")
    return run


def _logged(run_log: RunLog, thread_id: str, run_id: str) -> Any:
    got = run_log.read(thread_id, run_id, 1 << 62)  # the run only: no frame is after this
    return got[0] if got is not None else None


def _preflight(start_response: Callable[..., Any], cors: list[tuple[str, str]]) -> list[bytes]:
    """The answer to a CORS preflight (Fetch standard, "CORS protocol")."""
    headers = [("Content-Length", "0"), *cors]
    if any(k == "Access-Control-Allow-Origin" for k, _ in cors):
        headers += [("Access-Control-Allow-Methods", "POST, GET, OPTIONS"),
                    ("Access-Control-Allow-Headers", "Content-Type, Authorization, X-API-Key, Accept, Last-Event-ID"),
                    ("Access-Control-Max-Age", "600")]
    start_response("204 No Content", headers)
    return []


def _page(method: str, path: str, start_response: Callable[..., Any], cors: list[tuple[str, str]]) -> list[bytes]:
    """A file of the bundled chat page, or 404."""
    name = "index.html" if path in ("/", "/index.html") else path.lstrip("/")
    suffix = name[name.rfind("."):] if "." in name else ""
    # Only plain file names of the page's own directory: NUL, "..", "/", "%", "\\" never reach the file system.
    if _STATIC_NAME.fullmatch(name) and suffix in _STATIC_TYPES:
        try:
            body = _static(name)
        except (OSError, ValueError):
            pass
        else:
            start_response("200 OK", [("Content-Type", _STATIC_TYPES[suffix]), ("Content-Length", str(len(body))),
                                      ("Cache-Control", "no-cache"), *cors])
            return [body] if method == "GET" else []
    return _json_error(start_response, "404 Not Found", f"no page {path!r}", cors)
