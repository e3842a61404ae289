"""The ``anthropic`` provider: Anthropic Messages API (``POST {base_url}/v1/messages``, streamed).

``base_url`` is the API root the official SDK takes, without ``/v1`` (default
``https://api.anthropic.com``). The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` and is sent as
``x-api-key``; it lives in a :class:`hookstream.provider.Secret` and never appears in a repr, log line
or error.

Thread safety: an :class:`AnthropicProvider` holds configuration only and may be shared between
threads; per-call state lives in the generator :meth:`AnthropicProvider.parse_stream` returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from hookstream.events import BaseEvent
from hookstream.plugin import CallContext, HTTPRequest, ModelRequest, Provider, default_error_reader

from .request import ANTHROPIC_VERSION, build_body
from .stream import STOP_REASONS, MessageStreamParser

if TYPE_CHECKING:
    from hookstream.plugin import BatchAPI

__all__ = ["AnthropicProvider"]

# The body fields POST /v1/messages/count_tokens takes (API reference, "Count tokens in a Message"): the
# Messages body without the fields of generation (max_tokens, stream, sampling, stop sequences, metadata).
_COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config",
                           "mcp_servers", "context_management", "cache_control"})


class AnthropicProvider(Provider):
    """Adapter for the Anthropic Messages API; see :mod:`hookstream_anthropic.request` for the body
    and :mod:`hookstream_anthropic.stream` for the event mapping."""

    name: ClassVar[str] = "anthropic"
    finish_reasons: ClassVar[Mapping[str, str]] = STOP_REASONS
    """Raw finish reason -> normalised one; the rules around it are the builder's one policy."""
    unknown_finish_reason: ClassVar[str] = "stop"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    api_key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """``POST {base_url}/v1/messages`` with headers ``x-api-key``, ``anthropic-version`` and a JSON
        body from :func:`hookstream_anthropic.request.build_body`.

        Raises :class:`ValueError` when the request cannot be expressed. A missing key is the core's
        check (:meth:`hookstream.provider.Provider.check_api_key`, before any request); a custom
        ``base_url`` (an Anthropic-compatible server) may need none, and then no ``x-api-key`` is sent.
        """
        headers = {
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key.reveal()
        return HTTPRequest(f"{self.base_url}/v1/messages", build_body(request), headers)

    def batch_api(self) -> BatchAPI | None:
        """Anthropic's Message Batches (:class:`~hookstream_anthropic.batch.AnthropicBatch`) for ``anthropic``
        itself; providers built on this class (Vertex AI) have other batch endpoints."""
        if type(self).name != "anthropic":
            return None
        from .batch import AnthropicBatch  # only a --provider-batch run needs it

        return AnthropicBatch(self)

    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """``POST {base_url}/v1/messages/count_tokens`` (API reference, "Count tokens in a Message"): the
        body :meth:`build_request` sends, less the fields the count endpoint does not take; the answer is
        ``{"input_tokens": N}`` (read by the default :meth:`read_token_count`)."""
        http = AnthropicProvider.build_request(self, request)
        body = {k: v for k, v in http.json.items() if k in _COUNT_FIELDS}
        headers = {k: v for k, v in http.headers.items() if k != "accept"}
        return HTTPRequest(f"{self.base_url}/v1/messages/count_tokens", body, headers)

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """AG-UI events of one streamed message (see :class:`MessageStreamParser`)."""
        return MessageStreamParser(context).run(events)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of an HTTP error body ``{"type": "error", "error": {"type",
        "message"}, "request_id"?}`` (API reference, "Errors"); the ``request_id`` is appended to the
        message when present, since Anthropic support asks for it."""
        message, etype = default_error_reader(status, body)
        try:
            doc = json.loads(body)
        except ValueError:
            return message, etype
        request_id = doc.get("request_id") if isinstance(doc, dict) else None
        if isinstance(request_id, str) and request_id:
            message = f"{message} (request_id {request_id})"
        return message, etype
