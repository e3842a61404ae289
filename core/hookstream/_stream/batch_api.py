"""The provider batch capability: what a provider plugin implements so ``hookstream batch --provider-batch``
sends a whole batch through the provider's own batch API (OpenAI Batch API, Anthropic Message Batches,
Gemini batch mode) at the provider's batch price, instead of one streamed call per input.

A provider offers it by returning a :class:`BatchAPI` from :meth:`hookstream.plugin.Provider.batch_api`.
The driver (the hookstream-provider-batch plugin) builds each input's request with the provider's own
:meth:`~hookstream.plugin.Provider.build_request`, turns it into one batch entry with :meth:`BatchAPI.entry`,
submits, polls and fetches through the other methods, and parses each result body with the provider's own
framing and :meth:`~hookstream.plugin.Provider.parse_stream`: a plugin hands back each non-streaming result
rewritten as the stream its adapter already reads (:attr:`BatchItem.body`), so there is one parser per
provider, not two.

Thread safety: a :class:`BatchAPI` is used from one thread.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import attrs
import requests

from .._errors import error_for_status
from .transport import HTTPRequest, default_error_reader

__all__ = ["BatchAPI", "BatchItem", "BatchStatus", "send_batch_call"]


@attrs.frozen(slots=True)
class BatchStatus:
    """What one poll of a submitted batch says: ``state`` is the provider's own word (``in_progress``,
    ``ended``, ``JOB_STATE_SUCCEEDED``...), ``ended`` whether results can be fetched (the batch finished,
    failed, expired or was cancelled), ``done`` how many requests have finished of ``total`` (``None``:
    the provider does not say), and ``error`` the provider's message when the whole batch failed (its
    input was refused: the requests then have no results)."""

    state: str
    ended: bool
    done: int = 0
    total: int | None = None
    error: str | None = None


@attrs.frozen(slots=True)
class BatchItem:
    """One result of a batch: ``custom_id`` is the id the entry was submitted with (the input's ``id``);
    ``body`` the answer as the provider's streamed response body would carry it (bytes in the provider's
    :attr:`~hookstream.plugin.Provider.framing`), which the provider's ``parse_stream`` reads; or ``error``,
    ``(code, message)``, for a request the provider answered with an error, or that expired or was
    cancelled (codes: the provider's error type, ``expired``, ``canceled``)."""

    custom_id: str
    body: bytes | None = None
    error: tuple[str, str] | None = None


class BatchAPI(abc.ABC):
    """A provider's batch API, for one provider object (``provider``: the :class:`~hookstream.plugin.Provider`
    whose ``base_url``, key and session it uses).

    Subclasses implement :meth:`entry`, :meth:`submit`, :meth:`poll` and :meth:`results`. Each method
    raises the typed errors of a model call for HTTP failures (:func:`send_batch_call` maps them) and
    :class:`~hookstream.errors.MalformedChunkError` for an answer it cannot read.
    """

    discount: Decimal = Decimal("0.5")
    """The batch price as a fraction of the catalogue price (all three documented batch APIs: half)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    @abc.abstractmethod
    def entry(self, custom_id: str, request: HTTPRequest) -> dict[str, Any]:
        """One request of the batch, as the provider's batch takes it, from ``request``: what the provider's
        ``build_request`` built for the streamed call (the entry drops the fields of streaming). Printed
        one per line by ``--dry-run``."""

    @abc.abstractmethod
    def submit(self, entries: list[dict[str, Any]]) -> str:
        """Upload and create the batch of ``entries`` (from :meth:`entry`); returns its id."""

    @abc.abstractmethod
    def poll(self, batch_id: str) -> BatchStatus:
        """The batch's state now (one request)."""

    @abc.abstractmethod
    def results(self, batch_id: str) -> Iterator[BatchItem]:
        """Every result of an ended batch, errors included (an entry without a result is one too:
        code ``expired`` or ``canceled``)."""


def send_batch_call(
    provider: Any, method: str, url: str, *, headers: dict[str, str] | None = None, json: Any = None,
    data: bytes | dict[str, str] | None = None, files: Any = None, timeout: float = 300.0,
) -> requests.Response:
    """Send one request of a batch API on ``provider.session`` and return the 2xx response (read it
    whole: batch answers are JSON or JSON Lines, not streams); ``data`` is the body's bytes or a form's fields
    (``{name: value}``, sent with ``files`` as multipart). Raises the typed
    :class:`~hookstream.errors.HTTPStatusError` subclass for a non-2xx answer (message read by the
    provider's ``read_error``, the API key redacted) and :class:`requests.RequestException` for a
    connection that failed."""
    resp: requests.Response = provider.session.request(method, url, headers=headers, json=json, data=data, files=files,
                                    timeout=(10.0, timeout))
    if resp.status_code >= 300:
        reader = getattr(provider, "read_error", None) or (lambda s, b: default_error_reader(s, b))
        message, error_type = reader(resp.status_code, resp.content)
        redact = getattr(provider, "redact", str)
        raise error_for_status(resp.status_code, redact(message), error_type=error_type,
                               url=HTTPRequest(url, {}).redacted_url())
    return resp
