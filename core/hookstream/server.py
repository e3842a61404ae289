"""Serving chats over HTTP: a WSGI app speaking AG-UI (and the AI SDK UI message stream), with
authentication, per-principal limits and an optional conversation store (:mod:`hookstream.stores`).

:func:`make_app` builds the app (see ``docs/agui-server.md``); :func:`chat_factory` is the default
:data:`StreamFactory` it uses (``RunInput`` -> :class:`RunStream`). :func:`parse_run_input` and
:func:`messages_from_agui` read an AG-UI ``RunAgentInput`` for a server of your own and raise
:class:`hookstream.errors.AGUIInputError` naming the bad field. For the Vercel AI SDK (``useChat``):
:func:`parse_chat_request` reads its request (a :class:`ChatRequest`; :func:`messages_from_ui` converts
``UIMessage`` objects alone, :func:`resume_entries` turns the approvals it answers into ``chat(resume=...)``
entries), :func:`to_ui_message_stream` frames events as its UI message stream (SSE bytes, sent with
:data:`UI_MESSAGE_STREAM_HEADERS`) and :func:`ui_message_chunks` gives the same chunks as dicts. For
OpenAI's APIs (``make_app`` serves them under ``/v1``, docs/openai-endpoint.md):
:func:`parse_completion_request` and :func:`parse_responses_request` read a Chat Completions or Responses
request, :func:`completion_chunks` turns a run's events into ``chat.completion.chunk`` objects.

:class:`TokenAuthenticator` and :class:`JWTAuthenticator` (any :data:`Authenticator`) turn a request into a
:class:`Principal`; :class:`ServerLimits` and :class:`PrincipalLimits` bound bodies, concurrent runs and run
time. :class:`ApprovalSigner` signs the approval ids a server without a store hands out (the trust rule:
a server-side tool runs only for a call the server's own model made; ``docs/agui-server.md``,
"Deployment").

Names load on first use (PEP 562), so ``import hookstream.server`` does not load the WSGI app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._server.agui import (
        RunInput,
        RunStream,
        StreamFactory,
        chat_factory,
        make_app,
        messages_from_agui,
        parse_run_input,
    )
    from ._server.auth import Authenticator, JWTAuthenticator, Principal, TokenAuthenticator
    from ._server.limits import PrincipalLimits, ServerLimits
    from ._server.openai_compat import completion_chunks, parse_completion_request, parse_responses_request
    from ._server.trust import ApprovalSigner
    from ._server.ui_message_stream import (
        UI_MESSAGE_STREAM_HEADERS,
        ChatRequest,
        messages_from_ui,
        parse_chat_request,
        resume_entries,
        to_ui_message_stream,
        ui_message_chunks,
    )

_SOURCES = {
    "hookstream._server.agui": ("RunInput", "RunStream", "StreamFactory", "chat_factory", "make_app",
                                "messages_from_agui", "parse_run_input"),
    "hookstream._server.auth": ("Authenticator", "JWTAuthenticator", "Principal", "TokenAuthenticator"),
    "hookstream._server.limits": ("PrincipalLimits", "ServerLimits"),
    "hookstream._server.openai_compat": ("completion_chunks", "parse_completion_request", "parse_responses_request"),
    "hookstream._server.trust": ("ApprovalSigner",),
    "hookstream._server.ui_message_stream": ("UI_MESSAGE_STREAM_HEADERS", "ChatRequest", "messages_from_ui",
                                             "parse_chat_request", "resume_entries", "to_ui_message_stream",
                                             "ui_message_chunks"),
}

__getattr__, __dir__ = lazy_attributes(__name__, {name: module for module, names in _SOURCES.items() for name in names})

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "ApprovalSigner",
    "Authenticator",
    "ChatRequest",
    "JWTAuthenticator",
    "Principal",
    "PrincipalLimits",
    "RunInput",
    "RunStream",
    "ServerLimits",
    "StreamFactory",
    "TokenAuthenticator",
    "chat_factory",
    "completion_chunks",
    "make_app",
    "messages_from_agui",
    "messages_from_ui",
    "parse_chat_request",
    "parse_completion_request",
    "parse_responses_request",
    "parse_run_input",
    "resume_entries",
    "to_ui_message_stream",
    "ui_message_chunks",
]
