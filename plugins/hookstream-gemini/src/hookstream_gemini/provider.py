"""The ``gemini`` provider: Gemini API ``streamGenerateContent?alt=sse`` (and Vertex AI streams).

Request: ``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the API key in
the ``x-goog-api-key`` header (never in the URL, so it cannot leak through logs of URLs). ``base_url`` is
the API root the official SDKs take (default ``https://generativelanguage.googleapis.com``); a base URL
that already ends in an API version (``/v1``, ``/v1beta``, ``/v1alpha``) is used as it is.
Source: Gemini API reference, "Generating content" (``models.streamGenerateContent``) and "API keys".

Thread safety: instances hold configuration only and may be shared between threads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent
from hookstream.plugin import CallContext, HTTPRequest, ModelRequest, Provider

from .request import build_body
from .stream import FINISH_REASONS, UNKNOWN_FINISH_REASON, parse_stream

if TYPE_CHECKING:
    from hookstream.plugin import BatchAPI

__all__ = ["GeminiProvider"]

_VERSIONED = re.compile(r"/v1(alpha|beta)?$")


class GeminiProvider(Provider):
    """Gemini adapter. ``api_key`` defaults to ``$GEMINI_API_KEY``, then ``$GOOGLE_API_KEY``."""

    name: ClassVar[str] = "gemini"
    finish_reasons: ClassVar[Mapping[str, str]] = FINISH_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = UNKNOWN_FINISH_REASON
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com"
    api_key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    api_version: ClassVar[str] = "v1beta"

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The streaming request for ``request`` (body: :func:`hookstream_gemini.request.build_body`).

        Raises :class:`ValueError` when ``request`` cannot be expressed for Gemini.
        """
        url = f"{self.api_root()}/{self.model_path(request.model)}:streamGenerateContent?alt=sse"
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["x-goog-api-key"] = self.api_key.reveal()
        return HTTPRequest(url, build_body(request), headers)

    def api_root(self) -> str:
        """The versioned API root: ``base_url`` when it ends in an API version, else ``base_url/v1beta``."""
        return self.base_url if _VERSIONED.search(self.base_url) else f"{self.base_url}/{self.api_version}"

    def model_path(self, model: str | None = None) -> str:
        """``models/{model}`` (URL-quoted) for ``model`` (default: this provider's), with or without its
        ``models/`` prefix."""
        model = model or self.model
        if model.startswith("models/"):
            model = model[len("models/"):]
        return f"models/{quote(model, safe='-._~')}"

    def batch_api(self) -> BatchAPI | None:
        """The Gemini API's batch mode (:class:`~hookstream_gemini.batch.GeminiBatch`) for ``gemini``
        itself; Vertex AI, built on this class, has its own batch prediction jobs."""
        if type(self).name != "gemini":
            return None
        from .batch import GeminiBatch  # only a --provider-batch run needs it

        return GeminiBatch(self)

    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """``POST …/models/{model}:countTokens`` (API reference, "Counting tokens", ``models.countTokens``):
        the URL and headers of :meth:`build_request` with the method changed, and its body as
        :meth:`count_body` shapes it. The answer is ``{"totalTokens": N, ...}``."""
        http = self.build_request(request)
        url = http.url.rsplit(":", 1)[0] + ":countTokens"
        headers = {k: v for k, v in http.headers.items() if k != "Accept"}
        return HTTPRequest(url, self.count_body(http.json, request.model or self.model), headers)

    def count_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """The ``countTokens`` body for a ``generateContent`` ``body``: the Gemini API takes the whole
        request as ``generateContentRequest`` (with its ``model``, ``models/{model}``), so system
        instruction, tools and configuration count too."""
        name = model if model.startswith("models/") else f"models/{model}"
        return {"generateContentRequest": {"model": name, **body}}

    def read_token_count(self, answer: Any) -> int:
        """``totalTokens`` of a ``countTokens`` answer (absent for an empty prompt: 0). Raises
        :class:`~hookstream.errors.MalformedChunkError` for an answer that is not a JSON object."""
        if not isinstance(answer, dict):
            raise MalformedChunkError("countTokens answer is not a JSON object", repr(answer))
        total = answer.get("totalTokens", 0)
        if isinstance(total, bool) or not isinstance(total, int):
            raise MalformedChunkError("countTokens answer without an integer totalTokens", repr(answer))
        return total

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """AG-UI events of one stream; see :mod:`hookstream_gemini.stream`."""
        return parse_stream(events, context)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of a Gemini error body ``{"error": {"code", "message", "status",
        "details"}}``, possibly wrapped in a one-element list (the streaming endpoint does that).

        The error type is ``status`` (``INVALID_ARGUMENT``, ``PERMISSION_DENIED``,
        ``RESOURCE_EXHAUSTED``...); a ``details[].reason`` such as ``API_KEY_INVALID`` is appended to the
        message. The core masks the API key should the body echo it (:meth:`Provider.redact`).
        """
        text = body.decode("utf-8", "replace").strip()
        try:
            doc: Any = json.loads(text)
        except ValueError:
            return (text[:500] or f"HTTP {status}", None)
        if isinstance(doc, list) and doc:
            doc = doc[0]
        err = doc.get("error") if isinstance(doc, dict) else None
        if not isinstance(err, dict):
            return (text[:500], None)
        message = str(err.get("message") or f"HTTP {status}")
        reasons = [
            d["reason"] for d in err.get("details") or () if isinstance(d, dict) and isinstance(d.get("reason"), str)
        ]
        if reasons:
            message = f"{message} ({', '.join(reasons)})"
        etype = err.get("status") or err.get("code")
        return (message, str(etype) if etype is not None else None)
