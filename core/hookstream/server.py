"""Serving chats over HTTP: a WSGI app speaking AG-UI (and the AI SDK UI message stream), with
authentication, per-principal limits and an optional conversation store (:mod:`hookstream.stores`).

:func:`make_app` builds the app (see ``docs/agui-server.md``); :func:`chat_factory` is the default
:data:`StreamFactory` it uses (``RunInput`` -> :class:`RunStream`). :func:`parse_run_input` and
:func:`messages_from_agui` read an AG-UI ``RunAgentInput`` for a server of your own and raise
:class:`hookstream.errors.AGUIInputError` naming the bad field; :func:`to_ui_message_stream` turns events
into the AI SDK's UI message stream. :class:`TokenAuthenticator` and :class:`JWTAuthenticator` (any
:data:`Authenticator`) turn a request into a :class:`Principal`; :class:`ServerLimits` and
:class:`PrincipalLimits` bound bodies, concurrent runs and run time.

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
    from ._server.ui_message_stream import to_ui_message_stream

_SOURCES = {
    "hookstream._server.agui": ("RunInput", "RunStream", "StreamFactory", "chat_factory", "make_app",
                                "messages_from_agui", "parse_run_input"),
    "hookstream._server.auth": ("Authenticator", "JWTAuthenticator", "Principal", "TokenAuthenticator"),
    "hookstream._server.limits": ("PrincipalLimits", "ServerLimits"),
    "hookstream._server.ui_message_stream": ("to_ui_message_stream",),
}

__getattr__, __dir__ = lazy_attributes(__name__, {name: module for module, names in _SOURCES.items() for name in names})

__all__ = [
    "Authenticator",
    "JWTAuthenticator",
    "Principal",
    "PrincipalLimits",
    "RunInput",
    "RunStream",
    "ServerLimits",
    "StreamFactory",
    "TokenAuthenticator",
    "chat_factory",
    "make_app",
    "messages_from_agui",
    "parse_run_input",
    "to_ui_message_stream",
]
