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

The server is a plugin distribution, ``hookstream-server`` (``pip install 'hookstream[serve]'``, or the
plugin itself): this face stays in the core and finds it through its entry point (group
``hookstream.server``, name ``face``), never by its package name. A name loads on first use (PEP 562), so
``import hookstream.server`` loads neither the plugin nor the WSGI app; without the plugin, a name of the
server raises :class:`ImportError` saying what to install. :class:`Principal` and :data:`Authenticator`
are the core's own (the hook specs name them) and load without the plugin.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from types import ModuleType
from typing import Any

from ._install_hint import install_command
from ._principal import Authenticator, Principal

_GROUP = "hookstream.server"
"""The entry-point group the server plugin declares its face module in (name ``face``)."""

_FROM_PLUGIN = frozenset({
    "UI_MESSAGE_STREAM_HEADERS", "ApprovalSigner", "ChatRequest", "JWTAuthenticator", "PrincipalLimits", "RunInput",
    "RunStream", "ServerLimits", "StreamFactory", "TokenAuthenticator", "chat_factory", "completion_chunks", "make_app",
    "messages_from_agui", "messages_from_ui", "parse_chat_request", "parse_completion_request",
    "parse_responses_request", "parse_run_input", "resume_entries",
    "to_ui_message_stream", "ui_message_chunks",
})


@functools.cache
def _plugin_face() -> ModuleType:
    """The server plugin's face module (what its ``hookstream.server`` entry point names). Raises
    :class:`ImportError` with the install command when no installed distribution declares one."""
    for ep in importlib.metadata.entry_points(group=_GROUP, name="face"):
        module: ModuleType = ep.load()
        return module
    raise ImportError(f"the server is the hookstream-server plugin: {install_command('hookstream-server')}")


def __getattr__(name: str) -> Any:
    if name not in _FROM_PLUGIN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_plugin_face(), name)
    setattr(sys.modules[__name__], name, value)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _FROM_PLUGIN)


# The plugin's names are not defined here until first use, so the list is built (ruff's F822 reads a literal).
__all__ = ["Authenticator", "Principal", *sorted(_FROM_PLUGIN)]
