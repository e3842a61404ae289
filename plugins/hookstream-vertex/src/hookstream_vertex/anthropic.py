"""The ``vertex-anthropic`` provider: Claude models on Vertex AI (``publishers/anthropic/models/{MODEL}``).

Request (Anthropic docs, "Claude on Vertex AI"; Vertex AI REST reference, ``projects.locations.
publishers.models.streamRawPredict``)::

    POST https://{HOST}/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/anthropic/models/{MODEL}:streamRawPredict
    Authorization: Bearer {ACCESS_TOKEN}
    {"anthropic_version": "vertex-2023-10-16", "messages": [...], "max_tokens": N, "stream": true, ...}

The body is the Messages API body of :func:`hookstream_anthropic.request.build_body` with two
differences the Vertex AI endpoint requires: no ``model`` (it is in the URL) and ``anthropic_version``
in the body (there is no ``anthropic-version`` header). The answer is the Messages API SSE stream,
parsed by the Anthropic adapter. Model ids carry their version after ``@``
(``claude-sonnet-4-5@20250929``).

Location: ``location=``, else ``CLOUD_ML_REGION`` (the variable ``anthropic.AnthropicVertex`` reads),
else ``GOOGLE_CLOUD_LOCATION``; there is no default, as the official SDK has none (Claude models are
offered in a few regions and on ``global``, and which depends on the model). Project: ``project=``,
else ``ANTHROPIC_VERTEX_PROJECT_ID`` (the SDK's variable), else ``GOOGLE_CLOUD_PROJECT``, else the
credentials' project.

Thread safety: as :class:`~hookstream_vertex.base.VertexBase`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import attrs
from hookstream.plugin import HTTPRequest, ModelRequest
from hookstream_anthropic import AnthropicProvider
from hookstream_anthropic.request import build_body

from .base import VertexBase

__all__ = ["VERTEX_ANTHROPIC_VERSION", "VertexAnthropicProvider", "vertex_anthropic_body"]

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
"""The body's ``anthropic_version`` on Vertex AI (Anthropic docs, "Claude on Vertex AI" > "Making
requests"). A request's ``options`` may set another value."""


def vertex_anthropic_body(request: ModelRequest) -> dict[str, Any]:
    """The ``streamRawPredict`` body for ``request``: the Messages API body without ``model``, with
    ``anthropic_version`` first and ``stream: true``.

    The model id is handed to the Anthropic builder with ``@`` turned into ``-``
    (``claude-sonnet-4-5@20250929`` -> ``claude-sonnet-4-5-20250929``): the builder decides from the
    name whether the model has native structured output, and its rule expects the first-party spelling.
    The name itself is not sent. Raises :class:`ValueError` as the Anthropic builder does."""
    body = build_body(attrs.evolve(request, model=request.model.replace("@", "-")))
    body.pop("model", None)
    version = body.pop("anthropic_version", VERTEX_ANTHROPIC_VERSION)
    body = {"anthropic_version": version, **body}
    body["stream"] = True
    return body


class VertexAnthropicProvider(VertexBase, AnthropicProvider):
    """Claude on Vertex AI: URL and credentials from :class:`VertexBase`; body from
    :func:`vertex_anthropic_body`; stream parsing inherited from
    :class:`hookstream_anthropic.AnthropicProvider` (events and ``provider_metadata`` keyed
    ``"anthropic"``: thinking signatures survive a round trip, and a conversation can move between the
    Anthropic API and Vertex AI)."""

    name: ClassVar[str] = "vertex-anthropic"
    publisher: ClassVar[str] = "anthropic"
    method: ClassVar[str] = "streamRawPredict"
    project_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT")
    location_env: ClassVar[tuple[str, ...]] = ("CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION")
    default_location: ClassVar[str | None] = None

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST …/publishers/anthropic/models/{MODEL}:streamRawPredict`` with the body of
        :func:`vertex_anthropic_body`, ``x-goog-api-key`` when an API key was given (the bearer token
        is added by :meth:`sign`). Raises :class:`ValueError` when the request cannot be expressed."""
        model = request.model or self.model
        headers = {"content-type": "application/json", "accept": "text/event-stream", **self.auth_headers()}
        return HTTPRequest(self.model_url(model), vertex_anthropic_body(attrs.evolve(request, model=model)), headers)

    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """``None``: Claude on Vertex AI counts tokens at another endpoint (``count-tokens:rawPredict``,
        the model named in the body), not built here, so :func:`hookstream.count_tokens` counts locally
        (source ``"estimate"``) rather than post the Anthropic API's path to Vertex AI."""
        return None

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of an error body: Anthropic's ``{"type": "error", "error": {"type",
        "message"}}`` when the model answered (read by the Anthropic adapter), Google's ``{"error":
        {"code", "message", "status"}}`` (possibly in a one-element list) when Vertex AI refused the
        call before it reached the model (permission, quota, unknown model); the type is then the
        ``status`` (``PERMISSION_DENIED``, ``RESOURCE_EXHAUSTED``...)."""
        message, etype = super().read_error(status, body)
        if etype is None:
            etype = _google_status(body)
        return message, etype


def _google_status(body: bytes) -> str | None:
    try:
        doc: Any = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, list) and doc:
        doc = doc[0]
    err = doc.get("error") if isinstance(doc, dict) else None
    status = err.get("status") if isinstance(err, dict) else None
    return status if isinstance(status, str) else None
