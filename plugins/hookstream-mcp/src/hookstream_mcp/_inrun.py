"""Elicitation inside a run: the server's question streamed as an AG-UI event, answered from any thread.

With ``elicitation="run"`` (or :func:`in_run_elicitation`), a question a server asks during a tool call
that a run made is sent into that run's event stream as a ``CUSTOM`` event named
``mcp-elicitation-requested`` (:data:`REQUESTED`) with the value ``{"elicitationId", "server",
"toolCallId", "message", "mode", "runId", "schema"}`` (form mode) or ``{..., "mode": "url", "url"}`` (URL
mode). The tool call waits until :func:`answer_elicitation` is called with that ``elicitationId`` (from
any thread: the one iterating the stream, or a UI's request handler; a handler serving several users
passes ``run_id=`` too, for a run it checked the caller owns), then the run streams
``mcp-elicitation-responded`` (:data:`RESPONDED`, ``{"elicitationId", "toolCallId", "action"}``) and
the server gets the answer. It is the same pattern as the run's tool approvals (``approval-requested``
then ``approval-responded``), except that the run does not end while it waits: the question belongs to
a tool call already running, so it is answered in place.

The wait ends with a decline when the tool call's cancellation token is set (the run is cancelled, or
``call_timeout`` passed) and with a cancel when the call ends another way (the server closed). Which
tool call asked: on 2026-07-28 sessions the question arrives inside that call's own request (SEP-2322),
so it is known; on earlier sessions the server's request names no call on the client's side, so it is the
single call of that server in flight; with several in flight at once the question is declined and the
reason logged (``hookstream_mcp`` logger), as it is for a call made outside a run without a ``fallback``.

The SDK's elicitation callback (:func:`sdk_callback`, which every handler goes through) lives here, beside
:data:`current_call` that it sets: :mod:`hookstream_mcp._elicit` below it holds the questions, answers and
terminal handlers and imports nothing of this module.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from hookstream import ToolContext
from hookstream.events import Custom

from ._elicit import Elicitation, ElicitationAnswer, ElicitationHandler, normalize

__all__ = ["REQUESTED", "RESPONDED", "Call", "answer_elicitation", "current_call", "in_run_elicitation",
           "sdk_callback"]

REQUESTED = "mcp-elicitation-requested"
RESPONDED = "mcp-elicitation-responded"

log = logging.getLogger("hookstream_mcp")



class _Pending:
    """One question waiting for its answer, asked in run ``run_id`` of ``thread_id``; :meth:`settle`
    keeps the first answer given."""

    __slots__ = ("_done", "answer", "run_id", "thread_id")

    def __init__(self, run_id: str | None = None, thread_id: str | None = None) -> None:
        self._done = threading.Event()
        self.answer: ElicitationAnswer | Mapping[str, Any] | None = None
        self.run_id = run_id
        self.thread_id = thread_id

    def settle(self, answer: ElicitationAnswer | Mapping[str, Any] | None) -> bool:
        with _LOCK:
            if self._done.is_set():
                return False
            self.answer = answer
            self._done.set()
        return True

    def wait(self) -> None:
        self._done.wait()


_LOCK = threading.Lock()
_PENDING: dict[str, _Pending] = {}


class Call:
    """One tool call in flight, made by a run (``context``, its :class:`~hookstream.ToolContext`) or
    directly (``context`` None); :meth:`end` when it returns cancels its questions still waiting."""

    __slots__ = ("context", "ended", "pending")

    def __init__(self, context: ToolContext[Any] | None) -> None:
        self.context = context
        self.ended = False
        self.pending: list[_Pending] = []

    def ask(self, elicitation_id: str) -> _Pending | None:
        """Register a question of this call (bound to the run that made it); None when the call has
        ended already."""
        context = self.context
        with _LOCK:
            if self.ended:
                return None
            pending = _Pending(context.run_id if context is not None else None,
                               context.thread_id if context is not None else None)
            self.pending.append(pending)
            _PENDING[elicitation_id] = pending
        return pending

    def end(self) -> None:
        with _LOCK:
            self.ended = True
            waiting, self.pending = self.pending, []
        for pending in waiting:
            pending.settle(ElicitationAnswer.cancel())


# The call a question belongs to, in the task (and the worker thread asyncio.to_thread copies the
# context to) that handles the question. None: not known (see the module doc).
current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar("hookstream_mcp_call", default=None)


def answer_elicitation(elicitation_id: str, answer: ElicitationAnswer | Mapping[str, Any] | None, *,
                       run_id: str | None = None, thread_id: str | None = None) -> bool:
    """Answer the question a run streamed as ``mcp-elicitation-requested`` with this ``elicitationId``:
    ``answer`` as an ``elicitation=`` callback returns it (an :class:`ElicitationAnswer`; a dict accepts
    with that content, the schema's defaults filling what it leaves out; None declines). Thread-safe.

    ``run_id`` (and ``thread_id``) bind the answer to the run that asked (the event's ``runId`` and
    ``threadId``, as its ``RUN_STARTED`` names them): a question of another run is not answered. A
    request handler serving several users must pass the run id of a run it checked the caller owns
    (the principal that started it): the id alone is a bearer secret that anyone who saw the stream
    holds. Without ``run_id`` any question with that id is answered, which is safe only in the program
    that iterates its own run.

    Returns ``True`` when the answer was delivered, ``False`` when no such question is waiting (already
    answered, declined by a cancel, an unknown id, or a question of another run or thread: they are
    not told apart)."""
    with _LOCK:
        pending = _PENDING.get(elicitation_id)
        if pending is not None and ((run_id is not None and pending.run_id != run_id)
                                    or (thread_id is not None and pending.thread_id != thread_id)):
            pending = None
    return pending.settle(answer) if pending is not None else False


def _payload(elicitation_id: str, request: Elicitation, tool_call_id: str, run_id: str | None) -> dict[str, Any]:
    value: dict[str, Any] = {"elicitationId": elicitation_id, "server": request.server, "toolCallId": tool_call_id,
                             "message": request.message, "mode": request.mode, "runId": run_id}
    if request.mode == "url":
        value["url"] = request.url
    else:
        value["schema"] = request.schema
    return value


def in_run_elicitation(fallback: ElicitationHandler | None = None) -> ElicitationHandler:
    """The handler ``elicitation="run"`` stands for: asks in the run that made the tool call (see the
    module doc for the events and :func:`answer_elicitation`). A question with no run to ask in (a
    direct :meth:`~hookstream_mcp.MCPServer.call`, a tool run in another process, several calls of one
    server in flight on a pre-2026 session) goes to ``fallback`` (for example
    ``terminal_elicitation()``), or is declined with the reason logged when there is none."""
    def handler(request: Elicitation) -> ElicitationAnswer | Mapping[str, Any] | None:
        call = current_call.get()
        context = call.context if call is not None else None
        if call is None or context is None or context.channel is None:
            if fallback is not None:
                return fallback(request)
            log.warning("MCP server %s asked %r outside a run (or could not tell which tool call asked); "
                        "declined", request.server, request.message)
            return ElicitationAnswer.decline()
        elicitation_id = "elicit-" + uuid.uuid4().hex
        pending = call.ask(elicitation_id)
        if pending is None:
            return ElicitationAnswer.cancel()  # the call has ended: nothing waits for this answer
        try:
            asked = _payload(elicitation_id, request, context.tool_call_id, context.run_id)
            if not context.emit(Custom(REQUESTED, asked)):
                return ElicitationAnswer.decline()  # the run no longer listens: no one can answer
            # Cancelling the run (or the call's time limit) declines; the first answer wins either way.
            def decline() -> None:
                pending.settle(ElicitationAnswer.decline())

            context.cancellation.on_cancel(decline)
            pending.wait()
        finally:
            with _LOCK:
                _PENDING.pop(elicitation_id, None)
        answer = normalize(request, pending.answer)
        context.emit(Custom(RESPONDED, {"elicitationId": elicitation_id, "toolCallId": context.tool_call_id,
                                        "action": answer.action}))
        return answer
    return handler


def sdk_callback(server: str, handler: ElicitationHandler, locate: Callable[[], Any] | None = None) -> Any:
    """The SDK's ``elicitation_callback`` for ``handler``: builds the :class:`Elicitation`, runs the
    handler on a worker thread, returns an ``ElicitResult``; a handler that raises answers the server
    with a JSON-RPC error carrying the exception's type and message. When the question does not arrive
    in the task of the tool call that it belongs to (pre-2026 sessions: the server's own request),
    ``locate()`` names that call (:class:`Call` or None) for the handler's thread."""
    import mcp_types as types

    async def callback(context: Any, params: Any) -> Any:
        if getattr(params, "mode", "form") == "url":
            request = Elicitation(server, params.message, "url", url=params.url)
        else:
            schema = params.requested_schema
            request = Elicitation(server, params.message, "form",
                                  dict(schema) if isinstance(schema, Mapping) else schema.model_dump())
        token = current_call.set(locate()) if locate is not None and current_call.get() is None else None
        try:
            answer = normalize(request, await asyncio.to_thread(handler, request))
        except Exception as exc:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}")
        finally:
            if token is not None:
                current_call.reset(token)
        return types.ElicitResult(action=answer.action, content=answer.content)

    return callback
