"""Exception classes: one hierarchy, each with a stable ``code`` used as the AG-UI ``RUN_ERROR`` code.

No exception here ever holds an API key: HTTP errors carry the status, the provider's error type and
message, and the URL without its query string (Gemini puts the key in the query when asked to); a
provider's text that echoes the key is masked by :func:`redact_exception` (called by
:class:`hookstream.call.ModelCall` for every error of a call).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "AGUIInputError",
    "AgentToolError",
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "CallbackError",
    "CancelledError",
    "ConnectError",
    "ConnectionClosedError",
    "CorruptFrameError",
    "HTTPStatusError",
    "HookstreamError",
    "LineTooLongError",
    "MalformedChunkError",
    "MalformedCustomEventError",
    "MissingAPIKeyError",
    "MissingCredentialsError",
    "NotEventStreamError",
    "NotFoundError",
    "OutputValidationError",
    "PartialJSONError",
    "PluginError",
    "ProviderError",
    "RateLimitError",
    "ResumeError",
    "RunFailedError",
    "ServerError",
    "StoreUnavailableError",
    "StreamTimeoutError",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "UnknownModelError",
    "UnknownPluginError",
    "UnknownToolCallError",
    "error_for_status",
    "redact_exception",
]


class HookstreamError(Exception):
    """Base of every hookstream error. ``code`` is the ``RUN_ERROR.code`` this error becomes."""

    code: str = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PluginError(HookstreamError):
    code = "plugin_error"


class UnknownPluginError(PluginError, LookupError):
    """No plugin registered under the asked name (provider, strategy, executor, stop condition)."""

    code = "unknown_plugin"


class UnknownModelError(HookstreamError, ValueError):
    """A model named without its provider (``"gpt-4o"`` rather than ``"openai:gpt-4o"``) that no alias
    resolves; ``model`` is the name given."""

    code = "unknown_model"

    def __init__(self, model: str) -> None:
        super().__init__(f"model must be 'PROVIDER:MODEL' (e.g. 'openai:gpt-4o-mini') or an alias, got {model!r}")
        self.model = model


class BudgetExceededError(HookstreamError):
    """A run's budget would be passed by its next model request, which is therefore not sent (the
    ``budget`` run plugin, ``docs/tokens.md``). ``limit`` names the limit (``max_input_tokens``,
    ``max_cost_usd``), ``value`` is its value and ``count`` what the run would reach (input tokens of the
    next request; US dollars of the run so far plus the next request). ``step`` is the step (from 1) whose
    request was stopped."""

    code = "budget_exceeded"

    def __init__(self, limit: str, value: float, count: float, step: int) -> None:
        shown = f"{count:g}" if isinstance(count, int) else f"{count:.6g}"
        super().__init__(f"{limit} {value:g} would be exceeded by step {step}'s request ({shown})")
        self.limit = limit
        self.value = value
        self.count = count
        self.step = step


class TransportError(HookstreamError):
    """The HTTP exchange failed below the provider's protocol (connect, read, dropped connection)."""

    code = "transport_error"


class ConnectError(TransportError):
    code = "connect_error"


class ConnectionClosedError(TransportError):
    """The server closed the stream before the provider's terminal event."""

    code = "connection_closed"


class StreamTimeoutError(TransportError):
    """A time limit was hit; ``limit`` names it (``connect``, ``first_event``, ``idle``, ``step``,
    ``run``, ``tool``) and ``seconds`` is its value."""

    code = "timeout"

    def __init__(self, limit: str, seconds: float) -> None:
        super().__init__(f"{limit} timeout after {seconds:g} s")
        self.limit = limit
        self.seconds = seconds


class LineTooLongError(TransportError):
    """A stream event (an SSE event, an NDJSON line, a binary frame) grew past the configured limit
    (``limit``, bytes) without ending."""

    code = "line_too_long"

    def __init__(self, limit: int) -> None:
        super().__init__(f"stream event larger than the {limit} byte limit")
        self.limit = limit


class NotEventStreamError(TransportError):
    """A 2xx answer that is not an SSE event stream: a proxy's HTML login page, a JSON body from a server
    that ignored ``stream: true``. ``status`` is the HTTP status, ``content_type`` the ``Content-Type``
    header (``None`` when absent), ``head`` the first bytes of the body as text (at most 200 characters).
    """

    code = "not_event_stream"

    def __init__(self, status: int, content_type: str | None, head: str) -> None:
        what = f"{content_type!r}" if content_type else "no content type"
        shown = f": {head!r}" if head else " and an empty body"
        super().__init__(f"expected an event stream (text/event-stream), got HTTP {status} with {what}{shown}")
        self.status = status
        self.content_type = content_type
        self.head = head


class MissingCredentialsError(HookstreamError, ValueError):
    """A provider has no credentials to sign or authorise its request (raised before any request is
    sent). ``provider`` is the provider's name; ``what`` says what to set (environment variables,
    files, ``get_model`` arguments), never a credential itself."""

    code = "missing_credentials"

    def __init__(self, provider: str, what: str) -> None:
        super().__init__(f"no credentials for the {provider} provider: {what}")
        self.provider = provider
        self.what = what


class MissingAPIKeyError(MissingCredentialsError):
    """No API key for a provider's own endpoint; ``env_vars`` are the environment variables that would
    supply it (raised before any request is sent). A custom ``base_url`` (a local server) needs none.
    ``key_name`` is the name a stored key would go under (``hookstream keys set NAME``); the message
    names that command when it is given."""

    code = "missing_api_key"

    def __init__(self, provider: str, env_vars: tuple[str, ...], key_name: str | None = None) -> None:
        names = " or ".join(env_vars) or "the provider's API key variable"
        stored = f", store one with `hookstream keys set {key_name}`" if key_name else ""
        what = f"set {names}{stored} or pass api_key"
        HookstreamError.__init__(self, f"no API key for the {provider} provider: {what}")
        self.provider = provider
        self.what = what
        self.env_vars = env_vars
        self.key_name = key_name


class MalformedChunkError(HookstreamError):
    """A stream chunk could not be parsed (invalid JSON, missing required fields)."""

    code = "malformed_chunk"

    def __init__(self, message: str, data: str | None = None) -> None:
        super().__init__(message)
        # Keep a bounded excerpt only: chunks can be megabytes.
        self.data = data[:200] if data else data


class CorruptFrameError(MalformedChunkError):
    """A binary frame failed its integrity check (the AWS event-stream prelude or message CRC32): the
    bytes were damaged in transit. ``data`` keeps a bounded excerpt of the frame as text."""

    code = "corrupt_frame"


class MalformedCustomEventError(HookstreamError, ValueError):
    """A ``CUSTOM`` event named like one of the agent loop's (``approval-requested``, ``loop-stopped``...)
    whose ``value`` does not have that event's shape (see :mod:`hookstream._custom`). ``name`` is the
    event's name, ``problem`` says which key is missing or has the wrong JSON type."""

    code = "malformed_custom_event"

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"CUSTOM {name!r}: {problem}")
        self.name = name
        self.problem = problem


class ProviderError(HookstreamError):
    """The provider reported an error (in-stream error event or an HTTP error body).

    ``error_type`` is the provider's own type string (``overloaded_error``, ``insufficient_quota``...).
    """

    code = "provider_error"

    def __init__(self, message: str, *, error_type: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.status = status
        if error_type:
            self.code = error_type


class HTTPStatusError(ProviderError):
    """A non-2xx HTTP answer. ``status`` is the HTTP status, ``retry_after`` the parsed ``Retry-After``
    header in seconds (or ``None``)."""

    code = "http_error"

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        retry_after: float | None = None,
        url: str | None = None,
    ) -> None:
        # The wait is part of the text, so it reaches RUN_ERROR.message and logs, not only this object.
        wait = f" (retry after {retry_after:g} s)" if retry_after is not None else ""
        super().__init__(f"HTTP {status}: {message}{wait}", error_type=None, status=status)
        self.provider_message = message
        self.error_type = error_type
        self.retry_after = retry_after
        self.url = url


class BadRequestError(HTTPStatusError):
    code = "bad_request"


class AuthenticationError(HTTPStatusError):
    code = "authentication_error"


class NotFoundError(HTTPStatusError):
    code = "not_found"


class RateLimitError(HTTPStatusError):
    code = "rate_limit"


class ServerError(HTTPStatusError):
    code = "server_error"


class CancelledError(HookstreamError):
    code = "cancelled"


class CallbackError(HookstreamError):
    """A decision callback of the agent loop (``prepare_step``, ``repair_tool_call``, ``approve``, a stop
    condition) raised; the run ends with ``RUN_ERROR`` code ``callback_error`` and ``__cause__`` is the
    original exception."""

    code = "callback_error"


class ResumeError(HookstreamError, ValueError):
    """``chat(..., resume=...)`` got something it cannot continue (no assistant tool calls to resume,
    an unknown approval id or tool call id)."""

    code = "invalid_resume"


class ToolError(HookstreamError):
    """A tool failed; the engine turns this into an error result for the model."""

    code = "tool_error"


class ToolDefinitionError(HookstreamError, TypeError):
    """A function cannot become a tool: a parameter's annotation has no JSON Schema (a bare class, a
    ``Callable``, ``dict[int, X]``...). Raised by ``tool()`` / ``as_tools()`` (so also by ``chat()``), never
    at call time. ``function`` and ``parameter`` are names, ``annotation`` the offending (part of the)
    annotation, ``path`` the field path from the parameter down (``("order", "items", "[]")``)."""

    code = "tool_definition_error"

    def __init__(
        self, function: str, parameter: str, annotation: object, reason: str, path: tuple[str, ...] = ()
    ) -> None:
        where = ".".join(path) if len(path) > 1 else parameter
        shown = annotation.__name__ if isinstance(annotation, type) else repr(annotation)
        super().__init__(f"tool {function!r}: parameter {parameter!r}"
                         + (f" (at {where})" if where != parameter else "")
                         + f": annotation {shown} is not supported: {reason}")
        self.function = function
        self.parameter = parameter
        self.annotation = annotation
        self.reason = reason
        self.path = path


def error_for_status(
    status: int, message: str, *, error_type: str | None = None, retry_after: float | None = None,
    url: str | None = None,
) -> HTTPStatusError:
    """The typed :class:`HTTPStatusError` subclass for an HTTP ``status``."""
    cls: type[HTTPStatusError]
    if status in (401, 403):
        cls = AuthenticationError
    elif status == 404:
        cls = NotFoundError
    elif status == 429:
        cls = RateLimitError
    elif status >= 500:
        cls = ServerError
    elif status in (400, 422):
        cls = BadRequestError
    else:
        cls = HTTPStatusError
    return cls(status, message, error_type=error_type, retry_after=retry_after, url=url)


class RunFailedError(HookstreamError):
    """A ``RUN_ERROR`` event, as passed to ``on_error``: ``code`` is the event's code (or ``error``)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code or "error"


class UnknownToolCallError(HookstreamError, LookupError):
    """``add_tool_result``/``add_tool_approval_response`` named a tool call or approval id that no
    message holds."""

    code = "unknown_tool_call"


class PartialJSONError(HookstreamError, ValueError):
    """The text is not JSON (RFC 8259). ``position`` is the character offset of the offending character."""

    code = "invalid_json"

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at character {position}")
        self.position = position


class OutputValidationError(HookstreamError):
    """The model's structured output (``chat(..., output=SPEC)``) is not valid: not JSON, not matching
    the JSON Schema, or not structurable into the class. ``raw_text`` is the text the model sent (kept
    whole), ``problems`` the readable reasons (each naming the path), ``attempts`` the number of model
    calls that answered (1 + retries used)."""

    code = "output_invalid"

    def __init__(self, message: str, raw_text: str, problems: list[str], attempts: int = 1) -> None:
        super().__init__(message)
        self.raw_text = raw_text
        self.problems = list(problems)
        self.attempts = attempts


class AGUIInputError(HookstreamError, ValueError):
    """A POSTed ``RunAgentInput`` (AG-UI) or AI SDK chat request that cannot be run; the message says which
    field is wrong. The server answers ``400``."""

    code = "invalid_input"


class UntrustedToolCallError(AGUIInputError):
    """A request that would make a server run a tool call its own model did not make in that thread: an
    assistant tool call the thread's store does not hold, or (a server without a store) a pending call
    answered without the server's signature, or with one that does not match the call's thread, id,
    tool or arguments. The server answers ``400`` with this code and runs nothing
    (docs/agui-server.md, "Deployment")."""

    code = "untrusted_tool_call"


class AlreadyAnsweredError(HookstreamError):
    """A request answering a pending tool call (an approval, a denial, a frontend tool's result) that
    another request answered first, or replaying a signed approval id already used. The server answers
    ``409`` with this code and runs nothing (docs/agui-server.md, "Deployment")."""

    code = "already_answered"


class StoreUnavailableError(HookstreamError, RuntimeError):
    """The conversation store failed (the database is down, locked past its busy timeout...); the
    server answers ``503`` with this text. ``__cause__`` holds the database's own error."""

    code = "store_unavailable"


class SteeringLimitError(HookstreamError):
    """A steering message (:meth:`hookstream.ChatStream.add_message`) was refused: queuing it would pass
    ``limit`` (``max_queued``: messages waiting for the run's next step; ``max_messages``: messages of the
    conversation it joins), whose value is ``value``. Nothing was queued; the run goes on. The server
    answers ``429`` (``max_queued``) or ``413`` (``max_messages``, ``max_message_bytes``) with this text."""

    code = "steering_limit"

    def __init__(self, limit: str, value: int) -> None:
        super().__init__(f"the steering message would pass {limit} ({value})")
        self.limit = limit
        self.value = value


class AgentToolError(HookstreamError, RuntimeError):
    """An agent used as a tool did not answer (its run failed, was cancelled or waits for an approval);
    the calling model gets ``Error: AgentToolError: <message>`` as the tool's result."""

    code = "agent_tool_error"


def redact_exception(exc: BaseException, redact: Callable[[str], str]) -> None:
    """Apply ``redact`` (e.g. :meth:`hookstream.provider.Secret.redact`) in place to every text an
    exception shows: ``args``, string attributes (``message``, ``provider_message``, ``data``,
    ``head``...), and the same for its ``__cause__``/``__context__`` chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(redact(a) if isinstance(a, str) else a for a in current.args)
        attrs = getattr(current, "__dict__", None)
        if attrs:
            for name, value in list(attrs.items()):
                if isinstance(value, str):
                    attrs[name] = redact(value)
        current = current.__cause__ or current.__context__
