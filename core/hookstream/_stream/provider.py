"""The provider contract: what a provider plugin implements and what it is given.

A provider plugin registers a :class:`Provider` subclass under a name (``openai``, ``anthropic``...)
through the ``hookstream_register_providers`` hook. For each model call the core asks the provider to
build an :class:`HTTPRequest` from a :class:`ModelRequest`, serialises its body, lets the provider
sign it (:meth:`Provider.sign`, which sees the final bytes: AWS SigV4), POSTs it, frames the response
with the provider's :attr:`Provider.framing` (SSE by default; NDJSON; a plugin's own binary framing)
and hands the framed events to :meth:`Provider.parse_stream`, which yields AG-UI events in the adapter
grammar::

    RUN_STARTED Content* (RUN_FINISHED | RUN_ERROR)

(see :func:`hookstream.testing.check_events`). :class:`hookstream.plugin.StreamBuilder` keeps that grammar for
an adapter so it only maps the provider's wire events.

Thread safety: a provider instance holds configuration (model, base URL, API key) and a connection
pool (a ``requests.Session``, whose urllib3 pool is thread-safe) and may be shared between threads and
across runs; all per-call state lives in the generator returned by ``parse_stream``.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs
import requests

from .._errors import MalformedChunkError, MissingAPIKeyError
from .._events import BaseEvent
from .._keys import env_or_stored_key
from .._messages import Message
from .._secrets import Secret
from .framing import SSE, Framing
from .transport import HTTPRequest, default_error_reader

if TYPE_CHECKING:
    from .batch_api import BatchAPI

__all__ = ["CallContext", "HTTPRequest", "ModelRequest", "OutputFormat", "Provider", "Secret", "ToolSpec"]


@attrs.define(slots=True)
class ToolSpec:
    """A tool as the model sees it: ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.Factory(lambda: {"type": "object", "properties": {}})


@attrs.define(slots=True, frozen=True)
class OutputFormat:
    """Structured output asked of one model call, provider-neutral: the answer is one JSON value that
    matches ``schema`` (a JSON Schema object).

    ``name`` names the schema (``[A-Za-z0-9_-]``, at most 64 characters: OpenAI's ``json_schema.name``
    and a tool name for the providers that force a tool); ``strict`` is true only when the schema meets
    OpenAI's strict-mode rules (every property required, ``additionalProperties: false`` on every
    object), so a provider may ask for constrained decoding. ``mode`` is ``"auto"`` (the provider picks
    its native form where the model has one), ``"native"`` or ``"tool"`` (a forced tool whose input is
    the output); providers with a single form ignore it.
    """

    name: str
    schema: dict[str, Any]
    strict: bool = False
    mode: str = "auto"


@attrs.define(slots=True)
class ModelRequest:
    """One model call, provider-neutral.

    ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"`` or ``{"name": TOOL}``. ``max_tokens`` is
    the output token limit. ``options`` are provider-specific body fields merged last (e.g. Anthropic
    ``thinking``, Gemini ``thinkingConfig``). ``output`` asks for structured output
    (:class:`OutputFormat`): each provider maps it to its native form (OpenAI ``response_format``,
    Responses ``text.format``, Anthropic ``output_config`` or a forced tool, Gemini
    ``responseJsonSchema``).

    ``thread_id`` is the run's conversation thread (the engine's ``thread_id``), for a provider whose
    wire format has one (the ``agui`` provider's ``RunAgentInput.threadId``); ``None`` outside the engine.
    ``resume`` holds AG-UI 1.0 resume entries ``[{"interruptId", "status": "resolved" | "cancelled",
    "payload"?}]`` answering the interrupts the provider's previous call of the run ended with
    (``RUN_FINISHED`` outcome ``interrupt``): set by the engine on the one call that continues such a
    run, else ``None``; a provider that cannot interrupt ignores it.
    """

    model: str
    messages: list[Message]
    tools: list[ToolSpec] = attrs.Factory(list)
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    options: dict[str, Any] = attrs.Factory(dict)
    output: OutputFormat | None = None
    thread_id: str | None = None
    resume: list[dict[str, Any]] | None = None


@attrs.define(slots=True)
class CallContext:
    """Per-call identifiers an adapter puts on ``RUN_STARTED``/``RUN_FINISHED``."""

    thread_id: str
    run_id: str


class Provider(abc.ABC):
    """Base class of provider adapters.

    Subclasses set :attr:`name`, :attr:`default_base_url` and :attr:`api_key_env`, and implement
    :meth:`build_request` and :meth:`parse_stream`. ``base_url`` is the API root the official SDKs
    take (``http://host/v1`` for OpenAI, ``http://host`` for Anthropic and Gemini).

    An instance has ``model`` (the model name after the colon of ``"NAME:MODEL"``), ``base_url`` (without
    a trailing ``/``) and ``api_key`` (a :class:`~hookstream.plugin.Secret`: ``api_key.reveal()`` only into
    the request headers); the core builds one per ``get_model()`` call.
    """

    name: ClassVar[str] = ""
    """The registry name users put before the colon of ``"NAME:MODEL"`` (``"openai"``)."""
    default_base_url: ClassVar[str] = ""
    """The API root used when ``get_model`` is given no ``base_url``."""
    api_key_env: ClassVar[tuple[str, ...]] = ()
    """Environment variables read, in order, for the API key when none is given (``("OPENAI_API_KEY",)``);
    when none is set, the key stored with ``hookstream keys set`` under :attr:`key_name` is used."""
    key_name: ClassVar[str] = ""
    """The name the provider's stored key goes under (``hookstream keys set NAME``, :mod:`hookstream._keys`);
    empty means :attr:`name`. Providers sharing one key set it alike (``openai-responses`` uses ``"openai"``)."""
    framing: ClassVar[Framing] = SSE
    """How the response body becomes the events :meth:`parse_stream` receives: :data:`~hookstream.plugin.SSE`
    (sseclient-py events), :data:`~hookstream.plugin.NDJSON` (parsed JSON values, one per line) or a
    plugin's own :class:`~hookstream.plugin.Framing` (``hookstream-bedrock``: AWS event-stream messages)."""
    models_hint: ClassVar[str] = ""
    """How a user lists the models this provider serves when hookstream's catalogue knows none (a local
    server's own command: ``"ollama list"``); ``hookstream models NAME`` says it. Empty: no such command."""
    connect_hint: ClassVar[str] = ""
    """What to check when nothing answers at the base URL (a local server's: ``"is Ollama running?..."``),
    added to the run's ``connect_error`` message. Empty: nothing to add."""
    distribution: ClassVar[str] = ""
    """The distribution that ships this provider (``"hookstream-bedrock"``), for error messages."""
    finish_reasons: ClassVar[Mapping[str, str]] = {}
    """The provider's raw finish reasons (its wire values) -> normalised ones, which the adapter hands to its
    :class:`~hookstream.plugin.StreamBuilder` (the one policy around the table is the builder's; see
    ``docs/finish-reasons.md``); the provider contract suite checks recordings against it."""
    unknown_finish_reason: ClassVar[str] = "stop"
    """The normalised finish reason of a raw one :attr:`finish_reasons` does not know."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        if api_key is None:
            api_key = self.default_api_key()
        self.api_key = api_key if isinstance(api_key, Secret) else Secret(api_key)
        self._session = session
        self._own_session = session is None
        self._session_lock = threading.Lock()

    @classmethod
    def default_api_key(cls) -> str | Secret:
        """The key used when none is given: the first of :attr:`api_key_env` that is set, else the key
        stored with ``hookstream keys set`` under :attr:`key_name` (``keys.json`` in the user directory),
        else ``""``. The one place keys are looked up (the constructor and ``hookstream-ray``'s driver)."""
        return env_or_stored_key(cls.key_name or cls.name, cls.api_key_env)

    @property
    def session(self) -> requests.Session:
        """The connection pool (a ``requests.Session``) every call of this provider object uses, which
        is the one given to the constructor, else one created on first use and kept until
        :meth:`close`. A provider built once and passed to many ``chat()`` calls reuses its
        connections."""
        if self._session is None:
            with self._session_lock:
                if self._session is None:
                    self._session = requests.Session()
        return self._session

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool this provider created (a session passed in stays open: its owner
        closes it). The provider stays usable: the next call opens a new pool."""
        with self._session_lock:
            session, own = self._session, self._own_session
            if own:
                self._session = None
        if own and session is not None:
            session.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def redact(self, text: str) -> str:
        """``text`` with this provider's API key masked as ``***``; the core applies it to every error
        message, exception, ``RUN_ERROR`` event and log line of a model call."""
        return self.api_key.redact(text)

    def label(self, model: str | None = None) -> str:
        """``"NAME:MODEL"`` naming this provider and ``model`` (default: its own) in results, events and
        errors (``StepResult.provider``); a provider that wraps another (``replay``) names the wrapped one."""
        return f"{self.name}:{model if model is not None else self.model}"

    @property
    def priced_as(self) -> str:
        """The provider name a call's cost is looked up under (``Usage.cost``, genai-prices): :attr:`name`;
        a provider that wraps another (the ``replay`` provider) answers with the wrapped one's."""
        return self.name

    def check_api_key(self) -> None:
        """Called before each call's request is built. Raise :class:`hookstream.errors.MissingAPIKeyError`
        (naming :attr:`api_key_env`) when there is
        no API key and the provider talks to its own :attr:`default_base_url`: that endpoint always
        needs one, so failing before the request beats an ``HTTP 401`` later. A custom ``base_url``
        (Ollama, vLLM, a proxy) may need no key and is let through. Providers that authorise otherwise
        (signed requests, cloud tokens) override it to raise
        :class:`~hookstream.errors.MissingCredentialsError` naming what to set."""
        if self.api_key or not self.api_key_env:
            return
        if self.base_url == type(self).default_base_url.rstrip("/"):
            raise MissingAPIKeyError(self.name or type(self).__name__, self.api_key_env,
                                     key_name=self.key_name or self.name or None)

    def sign(self, request: HTTPRequest, body: bytes) -> None:
        """Add request-signing headers to ``request`` (in place) for ``body``, the exact bytes that will
        be sent. Called once per attempt, right before it is sent, so a retried request is signed
        anew (AWS SigV4 signatures carry the time). The default adds nothing. Raises
        :class:`~hookstream.errors.MissingCredentialsError` when there is nothing to sign with."""
        return None

    @abc.abstractmethod
    def build_request(self, request: ModelRequest) -> HTTPRequest:
        """The HTTP request for one streamed model call.

        Raises :class:`ValueError` when ``request`` cannot be expressed for this provider.
        """

    @abc.abstractmethod
    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        """Map the provider's events, as :attr:`framing` yields them (SSE: objects with ``event`` and
        ``data``), to AG-UI events.

        Must yield ``RUN_STARTED`` first and end with one ``RUN_FINISHED`` (all blocks closed, usage
        and finish reason set) or ``RUN_ERROR``. In-stream provider errors become ``RUN_ERROR`` with
        the provider's error type as ``code``. May raise :class:`hookstream.errors.MalformedChunkError`
        for an unparseable chunk; the core turns it into ``RUN_ERROR`` after what arrived before it.
        If ``events`` ends without a terminal provider event the generator may simply return: the
        core then ends the call with ``RUN_ERROR`` (``connection_closed``).
        """

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """(message, error type) of a non-2xx response body; override for unusual error shapes."""
        return default_error_reader(status, body)

    # -- token counting (optional) -------------------------------------------------------------------
    def token_count_request(self, request: ModelRequest) -> HTTPRequest | None:
        """The HTTP request asking the provider's own token-count endpoint how many input tokens
        ``request`` would take, or ``None`` (this default) when the provider has no such endpoint:
        :func:`hookstream.count_tokens` then counts locally (a tokenizer, else the estimate).

        A provider builds it from its own :meth:`build_request` (the same body the streamed call sends,
        without the fields of generation: ``stream``, output limits, sampling). The core sends it as it
        sends a model call: :meth:`check_api_key` first, :meth:`sign` over the final bytes, non-2xx
        answers read by :meth:`read_error` into typed errors. Raises :class:`ValueError` as
        :meth:`build_request` does."""
        return None

    def read_token_count(self, answer: Any) -> int:
        """The input-token count in ``answer``, the parsed JSON of :meth:`token_count_request`'s endpoint.
        The default reads ``input_tokens`` (Anthropic ``/v1/messages/count_tokens``, OpenAI
        ``/v1/responses/input_tokens``). Raises :class:`~hookstream.errors.MalformedChunkError` when the
        answer has no integer count."""
        value = answer.get("input_tokens") if isinstance(answer, dict) else None
        if isinstance(value, bool) or not isinstance(value, int):
            raise MalformedChunkError(f"{self.name}: token count answer without input_tokens", repr(answer))
        return value

    # -- provider batch API (optional) ---------------------------------------------------------------
    def batch_api(self) -> BatchAPI | None:
        """This provider's batch API (:class:`~hookstream.plugin.BatchAPI`: submit many requests at once,
        answered within hours at the batch price), or ``None`` (this default) when it has none:
        ``hookstream batch --provider-batch`` then says so. See ``docs/batch.md``."""
        return None
