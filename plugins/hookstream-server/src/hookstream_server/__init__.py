"""The AG-UI server and its wire protocols: AG-UI over HTTP (``agui``), the AI SDK UI message
stream (``ui_message_stream``), threads in a store (``threads``), who is asking (``auth``), what one
principal may ask (``limits``), OpenAI Chat Completions and Responses (``openai_compat``), and the
offline demo app (``demo``).

This package is what :mod:`hookstream.server` loads through its entry point (group
``hookstream.server``): import the names from there (``from hookstream.server import make_app``). Names
load on first use (PEP 562), so the ``hookstream`` entry point (:mod:`hookstream_server.plugin`) does not
load the WSGI app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes
from hookstream.server import Authenticator, Principal

if TYPE_CHECKING:
    from .agui import RunInput, RunStream, StreamFactory, chat_factory, make_app, messages_from_agui, parse_run_input
    from .auth import JWTAuthenticator, TokenAuthenticator
    from .demo import demo_factory
    from .limits import PrincipalLimits, ServerLimits
    from .openai_compat import completion_chunks, parse_completion_request, parse_responses_request
    from .trust import ApprovalSigner
    from .ui_message_stream import (
        UI_MESSAGE_STREAM_HEADERS,
        ChatRequest,
        messages_from_ui,
        parse_chat_request,
        resume_entries,
        to_ui_message_stream,
        ui_message_chunks,
    )

_SOURCES = {
    "hookstream_server.agui": ("RunInput", "RunStream", "StreamFactory", "chat_factory", "make_app",
                               "messages_from_agui", "parse_run_input"),
    "hookstream_server.auth": ("JWTAuthenticator", "TokenAuthenticator"),
    "hookstream_server.demo": ("demo_factory",),
    "hookstream_server.limits": ("PrincipalLimits", "ServerLimits"),
    "hookstream_server.openai_compat": ("completion_chunks", "parse_completion_request", "parse_responses_request"),
    "hookstream_server.trust": ("ApprovalSigner",),
    "hookstream_server.ui_message_stream": ("UI_MESSAGE_STREAM_HEADERS", "ChatRequest", "messages_from_ui",
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
    "demo_factory",
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
