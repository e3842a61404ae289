"""The ``vertex`` provider: Gemini models on Vertex AI (``publishers/google/models/{MODEL}``).

Request: ``POST https://{HOST}/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{MODEL}
:streamGenerateContent?alt=sse`` (Vertex AI REST reference, ``projects.locations.publishers.models.
streamGenerateContent``), with the body of :func:`hookstream_gemini.request.build_body` (Vertex AI takes
the Gemini API's ``GenerateContentRequest``: ``contents``, ``systemInstruction``, ``tools``,
``toolConfig``, ``generationConfig``) and the answer parsed by :func:`hookstream_gemini.stream.parse_stream`
(``alt=sse`` gives one ``GenerateContentResponse`` per SSE event, as on the Gemini API). Errors are
Google's ``{"error": {"code", "message", "status"}}``, read by the Gemini provider.

Location defaults to ``global`` (as ``google.genai.Client(vertexai=True)`` does). An explicit
``api_key`` selects Vertex AI express mode: ``https://aiplatform.googleapis.com/v1/publishers/google/
models/{MODEL}:streamGenerateContent?alt=sse`` with ``x-goog-api-key`` (Vertex AI docs, "Vertex AI in
express mode").

Thread safety: as :class:`~hookstream_vertex.base.VertexBase`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hookstream.plugin import HTTPRequest, ModelRequest
from hookstream_gemini import GeminiProvider
from hookstream_gemini.request import build_body

from .base import VertexBase

__all__ = ["VertexProvider"]

# The fields of Vertex AI's CountTokensRequest (REST reference, ``publishers.models.countTokens``).
_COUNT_FIELDS = ("contents", "systemInstruction", "tools", "generationConfig")


class VertexProvider(VertexBase, GeminiProvider):
    """Gemini on Vertex AI: URL and credentials from :class:`VertexBase`; body, stream parsing and
    error reading inherited from :class:`hookstream_gemini.GeminiProvider` (``parse_stream``,
    ``read_error``). Events and ``provider_metadata`` (thought signatures, function-call ids) are keyed
    ``"gemini"``, as the Gemini adapter writes and reads them, so a conversation can move between the
    Gemini API and Vertex AI."""

    name: ClassVar[str] = "vertex"
    publisher: ClassVar[str] = "google"
    method: ClassVar[str] = "streamGenerateContent?alt=sse"
    express_mode: ClassVar[bool] = True

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The streaming request for ``request``: :meth:`model_url`, JSON body from
        :func:`hookstream_gemini.request.build_body`, ``x-goog-api-key`` when an API key was given
        (the bearer token is added by :meth:`sign`).

        Raises :class:`ValueError` when ``request`` cannot be expressed for Gemini."""
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **self.auth_headers()}
        return HTTPRequest(self.model_url(request.model or self.model), build_body(request), headers)

    def count_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """Vertex AI's ``countTokens`` takes the request's fields at the top level (``contents``,
        ``systemInstruction``, ``tools``, ``generationConfig``), not a ``generateContentRequest``; the
        URL and the answer (``totalTokens``) are the Gemini API's, inherited."""
        return {k: body[k] for k in _COUNT_FIELDS if k in body}
