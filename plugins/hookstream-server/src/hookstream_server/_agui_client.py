"""The ``agui`` provider: hookstream as a blocking AG-UI client of any AG-UI agent.

``chat("agui:http://host/path", prompt, tools=[...])`` (or ``hookstream chat PROMPT --model
agui:URL``) treats a remote AG-UI agent (LangGraph, CrewAI, pydantic-ai, Mastra, another ``hookstream
serve``) as the model of each step: every model call POSTs an AG-UI ``RunAgentInput`` to the URL with
``Accept: text/event-stream`` and maps the agent's AG-UI SSE events onto a
:class:`~hookstream.plugin.StreamBuilder`, so the adapter grammar holds and the engine, the processor
and the CLI renderers work unchanged. Sources: AG-UI protocol 1.0, "RunAgentInput", "Messages",
"Tools" (frontend tools), "Events" (lifecycle, text, reasoning, tool call, chunk, state, special
events), "Interrupts" (``RUN_FINISHED.outcome``, ``RunAgentInput.resume``) and the HTTP agent
(``@ag-ui/client`` ``HttpAgent``: JSON body, SSE response, ``data: {json}`` frames).

**Model string.** Everything after ``agui:`` is the URL (``agui:http://127.0.0.1:8000/``; ``model`` of
the provider is that URL). With ``base_url`` given and a model that is not an absolute ``http(s)`` URL,
the model is a path under ``base_url`` (``get_model("agui:/agent", base_url="http://host")``). Any
other model raises :class:`ValueError` from ``get_model`` (a usage error in the CLI). ``api_key``
(explicit only: no environment variable, so a token never goes to a URL it was not meant for) is sent
as ``Authorization: Bearer``; ``headers=`` adds more.

**Request** (``RunAgentInput``)::

    {"threadId", "runId", "messages": [AG-UI Message...], "tools": [{"name", "description",
     "parameters"}...], "context": [], "state": ..., "forwardedProps": ..., "resume"?: [...]}

``threadId`` is ``options["threadId"]``, else the provider's explicit ``thread_id=``, else the run's thread
(``ModelRequest.thread_id``, the engine's ``thread_id``, so the agent's thread is hookstream's), else one
fresh id per provider object; ``runId`` is fresh per request.
``state``, ``context``, ``forwardedProps`` come from the provider's keyword arguments and
``chat(options={...})`` keys of the same (camelCase) names, merged last as every provider merges
``options``. ``resume`` (AG-UI 1.0 resume entries, answers to a remote interrupt) is
``ModelRequest.resume`` when the engine set it (the call continuing a run whose previous call ended with
an interrupt: ``approve=`` answered it, or ``chat(..., resume=result.resume({...}))`` named its ids), else
``options["resume"]``, sent only while the history does not end with a ``tool`` message (the first call
of a resumed run; later steps of the same run answer tool calls, not the interrupt).
``tool_choice``, ``max_tokens`` and ``temperature`` have no AG-UI field and are not sent; structured
output (``output=``) raises :class:`ValueError` (``RUN_ERROR invalid_request``): AG-UI has no such
request field.

**Messages** (:func:`messages_to_agui`, the reverse of :func:`hookstream_server.agui.messages_from_agui`): a
``system`` message becomes ``{"role": "system", "content"}``; ``user`` text becomes a string content,
with files a list of ``{"type": "text"}`` and AG-UI 1.0 media parts (``{"type": "image" | "audio" |
"video" | "document", "source": {"type": "data", "value": base64, "mimeType"} | {"type": "url",
"value", "mimeType"}}``); an ``assistant`` message becomes ``{"role": "assistant", "content"?,
"toolCalls"?: [{"id", "type": "function", "function": {"name", "arguments": JSON text}}]}``; each tool
result becomes ``{"role": "tool", "toolCallId", "content": text, "error"?: text}`` (files a tool
returned are not sent: AG-UI 1.0 tool content parts are not read by every agent). Reasoning is not
sent back (UI-only in AG-UI, as :func:`~hookstream_server.agui.messages_from_agui` skips it). Every message has an
``id``: the message's own ``Message.id``, the remote agent's message id kept in the part's
``provider_metadata["agui"]`` (so an agent that merges by id, LangGraph, sees its own messages), or a
stable id derived from the message's position and content (the same on every request of a
conversation).

**Events** (each SSE ``data`` is one AG-UI event; the terminal ones are decoded with
:func:`hookstream.events.from_json`'s :func:`~hookstream._events.from_dict`, which sums ``usage`` entries and
reads ``outcome``; the others are read from their wire JSON, so an event type hookstream's event model
does not know yet never stops a run):

* ``TEXT_MESSAGE_START/CONTENT/END`` and ``TEXT_MESSAGE_CHUNK`` (assistant role) → text; a new remote
  ``messageId`` starts a new text part; the remote id rides on ``TEXT_MESSAGE_START.metadata["agui"]``.
  User or system text messages → ``RAW``.
* ``REASONING_*`` and ``REASONING_MESSAGE_CHUNK`` (and the pre-1.0 ``THINKING_*``) → reasoning.
* ``TOOL_CALL_START/ARGS/END`` and ``TOOL_CALL_CHUNK`` for a tool **named in the request's tools**
  (a frontend tool: a ``tools=[...]`` function, or a client tool) → a tool call of this step with the
  remote's ``toolCallId``; the step finishes with ``tool_calls``, so the engine runs it locally and the
  next model call POSTs the history with its ``tool`` result message, as AG-UI clients do.
* Tool calls of the agent's **own server-side tools** (names not in the request's tools, usually
  followed by ``TOOL_CALL_RESULT`` in the same run) are never run here and are not tool calls of the
  step. Decision: they are surfaced as ``CUSTOM`` events, ``agui-server-tool-call`` (``{"toolCallId",
  "toolName", "arguments": text, "input": object | null}``, when the call's arguments are complete) and
  ``agui-server-tool-result`` (``{"toolCallId", "toolName", "content", "messageId"}``), which every
  consumer receives (unlike ``RAW``, forwarded only with ``include_raw``) and which the processor hands
  to ``on_custom_event``; and the exchange is kept for history as one ``CUSTOM``
  ``agui-server-messages`` event (``{"messages": [AG-UI assistant and tool messages]}``; not a
  ``REASONING_ENCRYPTED_VALUE``, which AG-UI defines for encrypted reasoning), which the step's
  accumulator keeps in the assistant message in place (a part with no text whose
  ``provider_metadata["agui"]["messages"]`` holds them), so the next request sends them back where they
  were, as a client that kept the agent's messages would.
* ``RUN_FINISHED`` → finish: reason ``tool_calls`` when a frontend tool was called, else ``stop``; raw
  reason the remote's ``finishReason`` if it sent one, else its outcome type; ``usage`` summed from
  its ``TokenUsage`` entries. Outcome ``interrupt``: the finish event carries the remote
  :class:`~hookstream.events.Outcome` (its interrupts) and a ``CUSTOM`` ``agui-interrupt`` event
  (``{"interrupts": [AG-UI Interrupt...]}``) comes first; the finish event's
  ``metadata["hookstream"]["interruptToolCalls"]`` (``[{"toolCallId", "toolName", "input"}]``) describes
  the agent's own tool calls the interrupts name (``StepResult.interrupt_calls``). The engine ends the run
  with outcome ``interrupt`` (``RunResult.pending_approvals`` for approval interrupts), or asks
  ``approve=`` and calls the agent again with ``resume`` entries (see ``docs/agui-client.md``).
* ``RUN_ERROR`` → ``RUN_ERROR`` with the remote ``message`` and ``code``.
* Everything else (``STEP_*`` of the remote, ``STATE_*``, ``MESSAGES_SNAPSHOT``, ``ACTIVITY_*``, the
  remote's ``CUSTOM`` and ``RAW``, ``TOOL_CALL_RESULT`` for no server call, unknown types) → ``RAW``
  (source ``agui``) via :meth:`StreamBuilder.raw`: counted, never dropped silently, never a crash.
  Data that is not JSON raises :class:`~hookstream.errors.MalformedChunkError`.

Errors: HTTP failures are the transport's (``RUN_ERROR`` with the HTTP code; the body read by the
default error reader); a stream that ends without ``RUN_FINISHED``/``RUN_ERROR`` ends in
``RUN_ERROR connection_closed`` (the core's rule).

Thread safety: an :class:`AGUIProvider` holds configuration and a connection pool and may be shared
between threads and runs (as every provider). The request's tool names reach ``parse_stream`` through a
thread-local set by ``build_request`` (the core calls both on the iterating thread, ``build_request``
first): ``parse_stream`` reads it when called, before its generator starts. ``parse_stream`` without a
``build_request`` on the same thread (a replay of a recorded body) treats every tool call as a frontend
call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import requests
from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Custom, Outcome, RunError, RunFinished, Usage, from_dict
from hookstream.plugin import (
    CallContext,
    HTTPRequest,
    ModelRequest,
    Provider,
    Secret,
    StreamBuilder,
    ToolSpec,
    new_id,
    tool_output_text,
)

# The CUSTOM event holding a remote agent's own tool calls and results; the core's step accumulator
# keeps it in history under the same wire name (docs/agui-client.md).
AGUI_SERVER_MESSAGES = "agui-server-messages"

__all__ = ["AGUIProvider", "messages_to_agui", "tools_to_agui"]

KEY = "agui"
"""The provider name, and the key of its data in ``provider_metadata`` / event ``metadata``."""

_RUN_INPUT_FIELDS = ("threadId", "runId", "parentRunId", "messages", "tools", "context", "state",
                     "forwardedProps", "resume")


# -- hookstream messages -> AG-UI messages --------------------------------------------------------------

def _stable_id(prefix: str, *parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False, default=str, sort_keys=True).encode()).hexdigest()
    return f"{prefix}_{digest[:16]}"


def _meta(part: Any) -> dict[str, Any]:
    meta = getattr(part, "provider_metadata", None)
    value = meta.get(KEY) if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else {}


def _media_part(f: FilePart) -> dict[str, Any]:
    kind = f.media_type.split("/", 1)[0]
    kind = kind if kind in ("image", "audio", "video") else "document"
    if f.data is not None:
        source: dict[str, Any] = {"type": "data", "value": f.base64(), "mimeType": f.media_type}
    else:
        source = {"type": "url", "value": f.url, "mimeType": f.media_type}
    part: dict[str, Any] = {"type": kind, "source": source}
    if f.filename:
        part["filename"] = f.filename
    return part


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    if not any(isinstance(p, FilePart) for p in message.parts):
        return message.text
    out: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            if p.text:
                out.append({"type": "text", "text": p.text})
        elif isinstance(p, FilePart):
            out.append(_media_part(p))
    return out


def _tool_call(call: ToolCallPart) -> dict[str, Any]:
    raw = call.arguments_raw
    if raw is None or (call.arguments is not None and not raw.strip()):
        raw = json.dumps(call.arguments or {}, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": raw}}


class _Ids:
    """Message ids of one conversion, never the same twice."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, wanted: str | None, fallback: str) -> str:
        ident = wanted or fallback
        n = 1
        base = ident
        while ident in self.used:
            n += 1
            ident = f"{base}-{n}"
        self.used.add(ident)
        return ident


def _assistant(message: Message, index: int, ids: _Ids) -> list[dict[str, Any]]:
    """One assistant message as AG-UI messages, in part order: text and tool calls gather into assistant
    messages; a part holding a server-tool exchange (``provider_metadata["agui"]["messages"]``) goes in
    place as the AG-UI messages it kept."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    wanted: list[str | None] = [message.id]

    def flush() -> None:
        if not texts and not calls:
            return
        doc: dict[str, Any] = {"id": ids.take(next((w for w in wanted if w), None),
                                              _stable_id("msg", index, len(out), "assistant", texts, calls)),
                               "role": "assistant"}
        if texts:
            doc["content"] = "".join(texts)
        if calls:
            doc["toolCalls"] = list(calls)
        out.append(doc)
        texts.clear()
        calls.clear()
        wanted.clear()

    for part in message.parts:
        meta = _meta(part)
        if isinstance(part, ReasoningPart):
            kept = meta.get("messages")
            if isinstance(kept, list):
                flush()
                for m in kept:
                    if isinstance(m, dict):
                        ids.used.add(str(m.get("id")))
                        out.append(m)
        elif isinstance(part, TextPart):
            if calls:  # text after tool calls is a new AG-UI message
                flush()
            if part.text:
                texts.append(part.text)
                wanted.append(meta.get("messageId"))
        elif isinstance(part, ToolCallPart):
            calls.append(_tool_call(part))
            wanted.append(meta.get("parentMessageId"))
    flush()
    return out


def _tool_results(message: Message, index: int, ids: _Ids) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, r in enumerate(p for p in message.parts if isinstance(p, ToolResultPart)):
        text = tool_output_text(r.output)
        wanted = _meta(r).get("messageId") or (message.id if i == 0 else None)
        doc: dict[str, Any] = {"id": ids.take(wanted, _stable_id("tool", index, r.tool_call_id)), "role": "tool",
                               "toolCallId": r.tool_call_id, "content": text}
        if r.is_error:
            doc["error"] = text
        out.append(doc)
    return out


def messages_to_agui(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Model messages as AG-UI 1.0 messages (see the module docstring), the reverse of
    :func:`hookstream_server.agui.messages_from_agui`: ``messages_from_agui(messages_to_agui(m))`` gives ``m``'s
    text, tool calls and results back. Raises :class:`TypeError` for a tool output that is not JSON
    serialisable."""
    ids = _Ids()
    out: list[dict[str, Any]] = []
    for index, m in enumerate(messages):
        if m.role == "assistant":
            out.extend(_assistant(m, index, ids))
        elif m.role == "tool":
            out.extend(_tool_results(m, index, ids))
        else:
            content = m.text if m.role == "system" else _user_content(m)
            out.append({"id": ids.take(m.id, _stable_id("msg", index, m.role, content)), "role": m.role,
                        "content": content})
    return out


def tools_to_agui(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """The run's tools as AG-UI ``Tool`` definitions ``{"name", "description", "parameters"}``."""
    return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]


# -- the provider -----------------------------------------------------------------------------------

class AGUIProvider(Provider):
    """A remote AG-UI agent as the model of each step (see the module docstring).

    ``model`` is the agent's URL. Keyword arguments (``get_model("agui:URL", ...)``): ``thread_id`` (the
    AG-UI ``threadId``, which then wins over the run's thread; default the run's thread,
    ``ModelRequest.thread_id``, or a fresh one per provider object), ``state``, ``context`` (a list of
    ``{"description", "value"}``), ``forwarded_props`` (sent as ``state``, ``context``,
    ``forwardedProps``) and ``headers`` (extra HTTP headers). Raises :class:`ValueError` for a model
    that is not a URL.
    """

    name = "agui"
    default_base_url = ""
    api_key_env = ()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
        thread_id: str | None = None,
        state: Any = None,
        context: list[Any] | None = None,
        forwarded_props: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key if api_key is not None else "", session=session)
        self.url = self._url(model, self.base_url)
        self.thread_id = thread_id or new_id("thread")
        self._own_thread = bool(thread_id)  # an explicit thread_id= wins over the run's thread
        self.state = state
        self.context = list(context or [])
        self.forwarded_props = forwarded_props
        self.headers = dict(headers or {})
        self._local = threading.local()

    @staticmethod
    def _url(model: str, base_url: str) -> str:
        if model.startswith(("http://", "https://")):
            return model
        if base_url:
            return base_url + "/" + model.lstrip("/")
        raise ValueError(f"agui: the model is the agent's URL (agui:http://host/path), got {model!r}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The ``RunAgentInput`` POST (see the module docstring). Raises :class:`ValueError` for
        structured output, which AG-UI cannot ask for."""
        if request.output is not None:
            raise ValueError("agui: structured output (output=) is not part of AG-UI's RunAgentInput")
        options = dict(request.options)
        resume = options.pop("resume", None)
        if resume is not None and request.messages and request.messages[-1].role == "tool":
            resume = None  # options["resume"] answers the first call of the run only
        if request.resume is not None:
            resume = request.resume
        thread_id = self.thread_id if self._own_thread or not request.thread_id else request.thread_id
        body: dict[str, Any] = {
            "threadId": thread_id,
            "runId": new_id("run"),
            "messages": messages_to_agui(request.messages),
            "tools": tools_to_agui(request.tools),
            "context": list(self.context),
            "state": self.state,
            "forwardedProps": self.forwarded_props if self.forwarded_props is not None else {},
        }
        body.update(options)
        if resume is not None:
            body["resume"] = resume if isinstance(resume, list) else [resume]
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key.reveal()}"
        self._local.tools = frozenset(t.name for t in request.tools)
        return HTTPRequest(self.url, body, headers)

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """Map the agent's AG-UI SSE events (see the module docstring)."""
        names: frozenset[str] | None = getattr(self._local, "tools", None)
        return _Parser(StreamBuilder(context), names).run(events)


class _ServerCall:
    __slots__ = ("args", "done", "id", "name", "parent")

    def __init__(self, call_id: str, name: str, parent: str | None) -> None:
        self.id, self.name, self.parent = call_id, name, parent
        self.args: list[str] = []
        self.done = False


class _Parser:
    """The state of one call's event mapping."""

    def __init__(self, builder: StreamBuilder, frontend: frozenset[str] | None) -> None:
        self.b = builder
        self.frontend = frontend
        self.text_remote: str | None = None  # remote id of the open text part
        self.chunk_call: str | None = None  # the tool call TOOL_CALL_CHUNK events continue
        self.local_calls: set[str] = set()
        self.server: dict[str, _ServerCall] = {}
        self.kept: list[dict[str, Any]] = []  # AG-UI messages of the server-tool exchange not yet kept
        self.started = False

    # -- helpers --------------------------------------------------------------------------------
    def _is_frontend(self, name: str) -> bool:
        return self.frontend is None or name in self.frontend

    def _close_content(self) -> list[BaseEvent]:
        out = self.b.end_text()
        out.extend(self.b.end_reasoning())
        self.text_remote = None
        return out

    def _keep(self) -> list[BaseEvent]:
        """The server-tool exchange so far as one ``CUSTOM`` ``agui-server-messages`` event (kept in history)."""
        if not self.kept:
            return []
        out = self._close_content()
        kept = [{k: v for k, v in m.items() if k != "_parent"} for m in self.kept]
        self.kept = []
        out.append(Custom(AGUI_SERVER_MESSAGES, {"messages": kept}))
        return out

    def _end_server_call(self, call: _ServerCall) -> list[BaseEvent]:
        if call.done:
            return []
        call.done = True
        text = "".join(call.args)
        try:
            parsed = json.loads(text) if text.strip() else {}
        except ValueError:
            parsed = None
        tool_call = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": text or "{}"}}
        last = self.kept[-1] if self.kept else None
        if (last is not None and last.get("role") == "assistant" and "content" not in last
                and last.get("_parent") == call.parent):
            last["toolCalls"].append(tool_call)
        else:
            self.kept.append({"id": call.parent or new_id("msg"), "role": "assistant", "toolCalls": [tool_call],
                              "_parent": call.parent})
        value = {"toolCallId": call.id, "toolName": call.name, "arguments": text,
                 "input": parsed if isinstance(parsed, dict) else None}
        return [Custom("agui-server-tool-call", value)]

    def _end_chunk_call(self) -> list[BaseEvent]:
        cid, self.chunk_call = self.chunk_call, None
        if cid is None:
            return []
        if cid in self.server:
            return self._end_server_call(self.server[cid])
        return self.b.tool_end(cid)

    # -- events ---------------------------------------------------------------------------------
    def _text(self, mid: Any, delta: Any) -> list[BaseEvent]:
        if not isinstance(delta, str) or not delta:
            return []
        out = self._keep()
        mid = mid if isinstance(mid, str) and mid else (self.text_remote or new_id("msg"))
        if self.b.text_open and mid != self.text_remote:
            out.extend(self.b.end_text())
        self.text_remote = mid
        out.extend(self.b.text(delta, metadata={KEY: {"messageId": mid}}))
        return out

    def _reasoning(self, delta: Any) -> list[BaseEvent]:
        if not isinstance(delta, str) or not delta:
            return []
        out = self._keep()
        self.text_remote = None
        out.extend(self.b.reasoning(delta))
        return out

    def _tool_start(self, cid: str, name: str, parent: Any) -> list[BaseEvent]:
        parent = parent if isinstance(parent, str) and parent else None
        if cid in self.local_calls or cid in self.server:
            return []
        if self._is_frontend(name):
            out = self._keep()
            self.text_remote = None
            self.local_calls.add(cid)
            out.extend(self.b.tool_start(cid, name, metadata={KEY: {"parentMessageId": parent}} if parent else None))
            return out
        self.server[cid] = _ServerCall(cid, name, parent)
        return self._close_content()

    def _tool_args(self, cid: Any, delta: Any) -> list[BaseEvent] | None:
        """The events, or None when the call is unknown (the event then goes out as RAW)."""
        if not isinstance(delta, str):
            return []
        call = self.server.get(cid) if isinstance(cid, str) else None
        if call is not None:
            call.args.append(delta)
            return []
        if cid in self.local_calls:
            return self.b.tool_args(cid, delta)
        return None

    def _tool_end(self, cid: Any) -> list[BaseEvent] | None:
        call = self.server.get(cid) if isinstance(cid, str) else None
        if call is not None:
            return self._end_server_call(call)
        if cid in self.local_calls:
            return self.b.tool_end(cid)
        return None

    def _tool_chunk(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        cid, name, delta = doc.get("toolCallId"), doc.get("toolCallName"), doc.get("delta")
        out: list[BaseEvent] = []
        if isinstance(cid, str) and cid and cid != self.chunk_call:
            out.extend(self._end_chunk_call())
            if cid not in self.local_calls and cid not in self.server:
                if not isinstance(name, str) or not name:
                    return None  # a chunk call must name its tool when it starts
                out.extend(self._tool_start(cid, name, doc.get("parentMessageId")))
            self.chunk_call = cid
        if self.chunk_call is None:
            return None
        more = self._tool_args(self.chunk_call, delta) if delta is not None else []
        out.extend(more or [])
        return out

    def _tool_result(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        cid = doc.get("toolCallId")
        call = self.server.get(cid) if isinstance(cid, str) else None
        if call is None:
            return None
        out = self._end_server_call(call)
        content = doc.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        mid = doc.get("messageId")
        mid = mid if isinstance(mid, str) and mid else new_id("toolres")
        self.kept.append({"id": mid, "role": "tool", "toolCallId": call.id, "content": text})
        out.append(Custom("agui-server-tool-result",
                          {"toolCallId": call.id, "toolName": call.name, "content": text, "messageId": mid}))
        return out

    def _wind_up(self) -> list[BaseEvent]:
        out = self._end_chunk_call()
        for call in self.server.values():
            out.extend(self._end_server_call(call))
        out.extend(self._keep())
        return out

    def _finished(self, doc: dict[str, Any]) -> list[BaseEvent]:
        out = self._wind_up()
        usage: Usage | None = None
        outcome: Outcome | None = None
        try:
            ev = from_dict(doc)
        except Exception:
            ev = None
        if isinstance(ev, RunFinished):
            usage, outcome = ev.usage, ev.outcome
            if usage is not None and all(v is None for v in attrs.astuple(usage)):
                usage = None  # the agent reported no counts
        raw_outcome = doc.get("outcome")
        kind = outcome.type if outcome is not None else (
            raw_outcome.get("type") if isinstance(raw_outcome, dict) else raw_outcome)
        if kind == "interrupt":
            interrupts = raw_outcome.get("interrupts") if isinstance(raw_outcome, dict) else None
            out.append(Custom("agui-interrupt", {"interrupts": interrupts if isinstance(interrupts, list) else []}))
        raw_reason = doc.get("finishReason")
        raw = raw_reason if isinstance(raw_reason, str) else (kind if isinstance(kind, str) else "success")
        reason = "tool_calls" if self.b.started_tools else "stop"
        finish = self.b.finish(reason, raw, usage)
        if kind == "interrupt" and outcome is not None and isinstance(finish[-1], RunFinished):
            finish[-1].outcome = outcome
            calls = self._interrupt_calls(outcome)
            if calls:
                finish[-1].metadata = {"hookstream": {"interruptToolCalls": calls}}
        out.extend(finish)
        return out

    def _interrupt_calls(self, outcome: Outcome) -> list[dict[str, Any]]:
        """The agent's own tool calls the interrupts refer to, for the engine's approval prompt and
        ``RunResult.pending_approvals`` (``StepResult.interrupt_calls``)."""
        out: list[dict[str, Any]] = []
        for interrupt in outcome.interrupts or []:
            call = self.server.get(interrupt.tool_call_id) if interrupt.tool_call_id else None
            if call is None:
                continue
            text = "".join(call.args)
            try:
                parsed = json.loads(text) if text.strip() else {}
            except ValueError:
                parsed = None
            out.append({"toolCallId": call.id, "toolName": call.name,
                        "input": parsed if isinstance(parsed, dict) else None})
        return out

    def _error(self, doc: dict[str, Any]) -> list[BaseEvent]:
        out = self._wind_up()
        try:
            ev = from_dict(doc)
        except Exception:
            ev = None
        if isinstance(ev, RunError):
            out.extend(self.b.error(ev.message, code=ev.code, usage=ev.usage))
        else:
            message, code = doc.get("message"), doc.get("code")
            out.extend(self.b.error(message if isinstance(message, str) else json.dumps(doc)[:500],
                                    code=code if isinstance(code, str) else None))
        return out

    def event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        """The events for one remote event; None for one to pass on as RAW."""
        kind = doc.get("type")
        if self.chunk_call is not None and kind != "TOOL_CALL_CHUNK":
            pending = self._end_chunk_call()
            rest = self.event(doc)
            return pending + rest if rest is not None else pending + self.b.raw(doc, KEY)
        handler = _EVENT_HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, doc) if handler is not None else None

    # One handler per remote event type (see _EVENT_HANDLERS); None passes the event on as RAW.
    def _text_start_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return None if doc.get("role") not in (None, "assistant") else []  # text opens with its first delta

    def _text_content_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        if doc.get("role") not in (None, "assistant"):
            return None
        return self._text(doc.get("messageId"), doc.get("delta"))

    def _text_end_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        if doc.get("role") not in (None, "assistant"):
            return None
        if doc.get("messageId") == self.text_remote:
            self.text_remote = None
            return self.b.end_text()
        return []

    def _reasoning_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return self._reasoning(doc.get("delta"))

    def _opening_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return []  # a block opens with its first content

    def _reasoning_end_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return self.b.end_reasoning()

    def _tool_start_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        cid, name = doc.get("toolCallId"), doc.get("toolCallName")
        if not isinstance(cid, str) or not isinstance(name, str):
            return None
        return self._tool_start(cid, name, doc.get("parentMessageId"))

    def _tool_args_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return self._tool_args(doc.get("toolCallId"), doc.get("delta"))

    def _tool_end_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        return self._tool_end(doc.get("toolCallId"))

    def _run_started_event(self, doc: dict[str, Any]) -> list[BaseEvent] | None:
        if self.started:
            return None
        self.started = True
        return []

    def run(self, events: Iterable[Any]) -> Iterator[BaseEvent]:
        b = self.b
        yield from b.start()
        for sse in events:
            data = getattr(sse, "data", sse)
            if isinstance(data, (bytes, str)):
                if not data.strip():
                    continue
                try:
                    doc = json.loads(data)
                except ValueError:
                    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
                    raise MalformedChunkError("AG-UI event is not JSON", text) from None
            else:
                doc = data
            if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
                yield from b.raw(doc, KEY)
                continue
            kind = doc["type"]
            if kind == "RUN_FINISHED":
                yield from self._finished(doc)
                return
            if kind == "RUN_ERROR":
                yield from self._error(doc)
                return
            out = self.event(doc)
            yield from (out if out is not None else b.raw(doc, KEY))


# Remote event type -> its handler; the types missing here pass on as RAW.
_EVENT_HANDLERS: dict[str, Callable[[_Parser, dict[str, Any]], list[BaseEvent] | None]] = {
    "TEXT_MESSAGE_START": _Parser._text_start_event,
    "TEXT_MESSAGE_CONTENT": _Parser._text_content_event,
    "TEXT_MESSAGE_CHUNK": _Parser._text_content_event,
    "TEXT_MESSAGE_END": _Parser._text_end_event,
    **dict.fromkeys(("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT"),
                    _Parser._reasoning_event),
    **dict.fromkeys(("REASONING_START", "REASONING_MESSAGE_START", "THINKING_START", "THINKING_TEXT_MESSAGE_START"),
                    _Parser._opening_event),
    **dict.fromkeys(("REASONING_MESSAGE_END", "REASONING_END", "THINKING_TEXT_MESSAGE_END", "THINKING_END"),
                    _Parser._reasoning_end_event),
    "TOOL_CALL_START": _Parser._tool_start_event,
    "TOOL_CALL_ARGS": _Parser._tool_args_event,
    "TOOL_CALL_END": _Parser._tool_end_event,
    "TOOL_CALL_CHUNK": _Parser._tool_chunk,
    "TOOL_CALL_RESULT": _Parser._tool_result,
    "RUN_STARTED": _Parser._run_started_event,
}
