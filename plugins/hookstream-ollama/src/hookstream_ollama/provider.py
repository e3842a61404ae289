"""The ``ollama`` provider: Ollama's native chat API, ``POST {base_url}/api/chat``, streamed as NDJSON.

``base_url`` is the server root (default ``$OLLAMA_HOST``, else ``http://127.0.0.1:11434``; a host
without a scheme or port gets ``http://`` and ``:11434``, as the ``ollama`` client reads it). No key
is needed; an ``api_key`` (a proxy in front of Ollama, or ollama.com, ``$OLLAMA_API_KEY``) is sent as
``Authorization: Bearer``. The response is newline-delimited JSON, framed by the core's
:data:`~hookstream.plugin.NDJSON` framing (ijson, incremental), mapped in :mod:`hookstream_ollama.stream`.

Source: Ollama API reference (``docs/api.md``), "Generate a chat completion"; "Errors".

For Ollama's OpenAI-compatible endpoint use ``openai:MODEL`` with ``base_url=http://host:11434/v1``
instead; this provider speaks the native API, which also carries ``thinking``, ``keep_alive`` and the
model ``options``.

Thread safety: instances hold configuration and a connection pool and may be shared between threads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import requests
from hookstream.events import BaseEvent
from hookstream.plugin import NDJSON, CallContext, Framing, HTTPRequest, ModelRequest, Provider, Secret

from .request import build_body
from .stream import FINISH_REASONS, parse_stream

__all__ = ["DEFAULT_HOST", "OllamaProvider", "host_url"]

DEFAULT_HOST = "http://127.0.0.1:11434"
"""Where Ollama listens when ``$OLLAMA_HOST`` is not set."""


def host_url(host: str | None) -> str:
    """``$OLLAMA_HOST``-style text as a base URL: ``None`` or empty -> :data:`DEFAULT_HOST`;
    ``example:1234`` -> ``http://example:1234``; ``https://example`` stays; a bare host gets port
    11434 over http (443 over https, the URL's default)."""
    host = (host or "").strip()
    if not host:
        return DEFAULT_HOST
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    netloc = parts.netloc
    if parts.port is None and parts.scheme == "http":
        netloc = f"{netloc}:11434"
    return f"{parts.scheme}://{netloc}{parts.path}".rstrip("/")


class OllamaProvider(Provider):
    """Adapter for Ollama's ``/api/chat`` (see :mod:`hookstream_ollama.request` for the body and
    :mod:`hookstream_ollama.stream` for the event mapping)."""

    name: ClassVar[str] = "ollama"
    finish_reasons: ClassVar[Mapping[str, str]] = FINISH_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = "stop"
    default_base_url: ClassVar[str] = DEFAULT_HOST
    api_key_env: ClassVar[tuple[str, ...]] = ("OLLAMA_API_KEY",)
    models_hint: ClassVar[str] = "ollama list"  # the models are whatever the server has pulled
    connect_hint: ClassVar[str] = "is Ollama running? start it with `ollama serve`, or give its --base-url"
    framing: ClassVar[Framing] = NDJSON
    distribution: ClassVar[str] = "hookstream-ollama"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
    ) -> None:
        super().__init__(model, base_url=base_url or host_url(os.environ.get("OLLAMA_HOST")), api_key=api_key,
                         session=session)

    def check_api_key(self) -> None:
        """Nothing to check: a local Ollama needs no key."""

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/api/chat`` with the body of :func:`hookstream_ollama.request.build_body`.
        Raises :class:`ValueError` when the request cannot be expressed for Ollama."""
        headers = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key.reveal()}"
        return HTTPRequest(f"{self.base_url}/api/chat", build_body(request, self.model), headers)

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """AG-UI events of one stream; ``events`` are the parsed NDJSON lines."""
        return parse_stream(events, context)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of an Ollama error body ``{"error": "model 'x' not found"}`` (API
        reference, "Errors"); the type is ``model_not_found`` for a 404 naming a model, else ``None``."""
        text = body.decode("utf-8", "replace").strip()
        try:
            doc = json.loads(text)
        except ValueError:
            return (text[:500] or f"HTTP {status}", None)
        error = doc.get("error") if isinstance(doc, dict) else None
        if not isinstance(error, str):
            return (text[:500] or f"HTTP {status}", None)
        return (error, "model_not_found" if status == 404 and "model" in error else None)
