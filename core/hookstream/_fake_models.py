"""Fake models for tests: :class:`FunctionModel` (a function scripts each reply) and :class:`TestModel`
(calls every tool once with schema-valid arguments, then answers), usable wherever a model is.

Both are :class:`hookstream.plugin.Provider` subclasses, so ``chat(FunctionModel(fn), "hi", tools=[...])``
runs the real engine, the real :class:`~hookstream.plugin.ModelCall` path (retries, time limits,
cancellation, stop conditions) and the real grammar: nothing is patched. No socket is opened. As
``chat("replay:DIR")`` does, the provider's own ``requests.Session`` has a transport adapter mounted
that answers each POST in-process: it calls the function with the call's messages and a
:class:`RequestInfo` and answers with the reply framed as NDJSON (one JSON object per line:
``{"reasoning"}``, ``{"text"}``, ``{"tool", "name"}``, ``{"args", "delta"}``, ``{"end"}``,
``{"error", "type"}``, ``{"finish", "usage", "id", "model"}``), or with an HTTP error status when the
function raises :class:`ModelError`. :meth:`FunctionModel.parse_stream` maps those lines through the
:class:`~hookstream.plugin.StreamBuilder` a real adapter uses, so the events are the ones a real
provider's adapter emits: text and reasoning in several deltas (split at words), ``TOOL_CALL_START`` /
``TOOL_CALL_ARGS`` (the argument JSON in pieces) / ``TOOL_CALL_END``, and ``RUN_FINISHED`` with the
finish reason, a response id, the model name and token counts estimated as whitespace-separated
words.

How the adapter finds the request: :meth:`FunctionModel.build_request` keeps the
:class:`~hookstream.plugin.ModelRequest` in a weak table under a fresh key, which is the HTTP body;
the model call holds the request for all its attempts, so a retried POST reaches the same request and
calls the function again (a function can fail the first attempt and answer the second).

Thread safety: a fake model may be shared by runs on several threads (as a provider from
``get_model`` may). Its only shared state, the request table and :attr:`FunctionModel.requests`, is
guarded by a lock; the function is called on the thread of the run that made the call, concurrently
when runs are, so a function that keeps state of its own must guard it. :class:`TestModel` keeps none.
"""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Literal, TypeAlias

import attrs
import requests
import requests.adapters
import urllib3
from requests.structures import CaseInsensitiveDict

from ._errors import HookstreamError, MalformedChunkError
from ._events import BaseEvent, Usage
from ._messages import Message, tool_output_text
from ._schema_example import schema_example
from ._stores.codec import dumps_message
from ._stream.builder import StreamBuilder, new_id
from ._stream.framing import NDJSON
from ._stream.provider import CallContext, ModelRequest, OutputFormat, Provider, ToolSpec
from ._stream.transport import HTTPRequest

__all__ = [
    "REPLIES_ENV",
    "FunctionModel",
    "ModelError",
    "Reply",
    "RequestInfo",
    "TestModel",
    "TestProvider",
    "ToolCall",
    "reply_of",
]

FINISH_REASONS = ("stop", "length", "content_filter", "tool_calls", "error")
_BASE_URL = "http://fake-model.invalid"  # never resolved: the session's transport adapter answers
_ARGS_PIECE = 16  # characters of argument JSON per TOOL_CALL_ARGS
_WORDS = re.compile(r"\s*\S+|\s+")
_REQUEST_HEADER = "x-hookstream-fake-request"  # which ModelRequest a POST carries (never part of its body)


def _jsonable(value: Any) -> Any:
    """``json.dumps`` default for a request's digest: attrs classes as dicts, bytes by their digest."""
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(value)).hexdigest()
    return repr(value)


class ModelError(HookstreamError):
    """Raise from a :class:`FunctionModel` function to have the model call answered with HTTP ``status``
    (``{"error": {"message", "type"}}``, plus ``Retry-After`` when ``retry_after`` is given, in
    seconds): the core then retries (429, 5xx...) or ends the step with ``RUN_ERROR`` exactly as for a
    real provider, and a fallback model takes over. Put one in :attr:`Reply.error` instead to stream
    the reply's content first and then fail inside the stream (``RUN_ERROR`` with code ``type``, or the
    status as text when no ``type`` is given)."""

    code = "model_error"

    def __init__(
        self, status: int = 503, message: str | None = None, *, type: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.message = message or f"the fake model failed with HTTP {status}"
        self.type = type
        self.retry_after = retry_after
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"ModelError({self.status}, {self.message!r}, type={self.type!r})"


@attrs.frozen
class ToolCall:
    """A tool call in a :class:`Reply`: ``args`` is a dict (sent as its JSON text) or a string sent
    as it is (to test arguments that do not parse); ``id`` defaults to a fresh ``call_...`` id."""

    name: str
    args: dict[str, Any] | str = attrs.Factory(dict)
    id: str | None = None


def _tool_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(value)


def _finish_reason(instance: Any, attribute: Any, value: str | None) -> None:
    if value is not None and value not in FINISH_REASONS:
        raise ValueError(f"finish_reason must be one of {FINISH_REASONS} or None, got {value!r}")


@attrs.frozen
class Reply:
    """One model answer. ``text`` streams in word-sized deltas after ``thinking`` (a reasoning block),
    then the ``tool_calls`` in order. ``finish_reason`` defaults to ``"tool_calls"`` when there are
    tool calls, else ``"stop"``. ``usage`` defaults to an estimate: whitespace-separated words of the
    request's messages (input) and of the reply (output). ``error`` ends the stream with that in-stream
    error after the content instead of finishing it."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    thinking: str | None = None
    finish_reason: str | None = attrs.field(default=None, validator=_finish_reason)
    usage: Usage | None = None
    error: ModelError | None = None


ReplyLike: TypeAlias = "Reply | str | ToolCall | Sequence[ToolCall]"
"""What a :class:`FunctionModel` function may return: a :class:`Reply`, its text, one
:class:`ToolCall` or a list of them."""


@attrs.frozen
class RequestInfo:
    """What a :class:`FunctionModel` function is told besides the messages.

    ``step`` is the model call's number in the current turn: 1 plus the assistant messages after the
    last user message (the engine's step number in a run that started from a user message; a resumed
    run continues the count of the turn it resumes). ``tools`` are the tools offered
    (:class:`~hookstream.plugin.ToolSpec`: name, description, JSON Schema ``parameters``),
    ``tool_choice`` the run's choice (``"auto"``, ``"none"``, ``"required"``, ``{"name": TOOL}`` or
    ``None``), ``output`` the structured output asked for (:class:`~hookstream.plugin.OutputFormat`:
    ``name``, ``schema``, ``mode``; answer with its JSON as the text, or, with ``mode="tool"``, as a
    tool call named ``output.name``), ``options`` / ``max_tokens`` / ``temperature`` the request
    options, ``model`` the model name and ``request`` the whole
    :class:`~hookstream.plugin.ModelRequest`."""

    step: int
    tools: list[ToolSpec]
    tool_choice: str | dict[str, Any] | None
    output: OutputFormat | None
    options: dict[str, Any]
    max_tokens: int | None
    temperature: float | None
    model: str
    request: ModelRequest

    @classmethod
    def of(cls, request: ModelRequest) -> RequestInfo:
        return cls(_step(request.messages), list(request.tools), request.tool_choice, request.output,
                   dict(request.options), request.max_tokens, request.temperature, request.model, request)


def _step(messages: Sequence[Message]) -> int:
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return 1 + sum(1 for m in messages[last_user + 1:] if m.role == "assistant")


def _coerce(value: Any) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(value)
    if isinstance(value, ToolCall):
        return Reply(tool_calls=(value,))
    if isinstance(value, (list, tuple)) and all(isinstance(v, ToolCall) for v in value):
        return Reply(tool_calls=tuple(value))
    raise TypeError(f"a FunctionModel function returns a Reply, a str, a ToolCall or a list of them, not "
                    f"{type(value).__name__}")


def _words(text: str) -> int:
    return len(text.split())


def _message_words(message: Message) -> int:
    n = _words(message.text) + _words(message.reasoning)
    for call in message.tool_calls:
        n += _words(call.arguments_raw if call.arguments_raw is not None else json.dumps(call.arguments))
    for result in message.tool_results:
        n += _words(tool_output_text(result.output))
    return n


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def _lines(reply: Reply, request: ModelRequest, model: str) -> list[dict[str, Any]]:
    """The reply as the fake wire's NDJSON objects."""
    out: list[dict[str, Any]] = [{"reasoning": w} for w in _WORDS.findall(reply.thinking or "")]
    out.extend({"text": w} for w in _WORDS.findall(reply.text))
    produced = _words(reply.text) + _words(reply.thinking or "")
    for call in reply.tool_calls:
        cid = call.id or new_id("call")
        text = _args_text(call.args)
        produced += _words(text) + 1
        out.append({"tool": cid, "name": call.name})
        out.extend({"args": cid, "delta": text[i:i + _ARGS_PIECE]} for i in range(0, len(text), _ARGS_PIECE))
        out.append({"end": cid})
    if reply.error is not None:
        err = reply.error
        out.append({"error": err.message, "type": err.type or str(err.status)})
        return out
    usage = reply.usage
    if usage is None:
        consumed = sum(_message_words(m) for m in request.messages)
        usage = Usage(input_tokens=consumed, output_tokens=produced, total_tokens=consumed + produced,
                      reasoning_tokens=_words(reply.thinking) if reply.thinking else None)
    reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    counts = {k: v for k, v in attrs.asdict(usage).items() if v is not None}
    out.append({"finish": reason, "usage": counts, "id": new_id("resp"), "model": model})
    return out


class _Body(io.RawIOBase):
    """A response body served one piece (one NDJSON line) per read, as a socket delivers a stream; after
    :meth:`shutdown` (what :meth:`Stream.abort` calls, from any thread) reads return nothing, as a shut
    socket does, so cancellation and time limits stop a fake stream where they stop a real one."""

    def __init__(self, pieces: list[bytes]) -> None:
        super().__init__()
        self._pieces = collections.deque(pieces)
        self._stopped = threading.Event()
        self.sock = self  # urllib3 and Stream.abort reach the "socket" through the connection

    def readable(self) -> bool:
        return True

    def read1(self, size: int | None = -1) -> bytes:
        if self._stopped.is_set() or not self._pieces:
            return b""
        piece = self._pieces[0]
        if size is None or size < 0 or size >= len(piece):
            self._pieces.popleft()
            return piece
        self._pieces[0] = piece[size:]
        return piece[:size]

    def read(self, size: int | None = -1) -> bytes:
        out = bytearray()
        while (size is None or size < 0 or len(out) < size) and (piece := self.read1(
                -1 if size is None or size < 0 else size - len(out))):
            out += piece
        return bytes(out)

    def shutdown(self, how: int = 0) -> None:
        self._stopped.set()


class _FakeTransport(requests.adapters.BaseAdapter):
    """A requests transport adapter answering each POST of one fake model in-process (no socket)."""

    def __init__(self, model: FunctionModel) -> None:
        super().__init__()
        self._model = weakref.ref(model)  # the model owns the session that owns this adapter

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        model = self._model()
        headers: dict[str, str]
        data: list[bytes]
        if model is None:
            status, data, headers = 410, [b'{"error": {"message": "the fake model is gone"}}'], {}
        else:
            status, data, headers = model._answer(request.headers.get(_REQUEST_HEADER))
        headers = {"content-type": NDJSON.media_type if status < 300 else "application/json", **headers}
        body_io = _Body(data)
        connection: Any = body_io  # stands for the connection: ``sock`` and ``close()``
        options: dict[str, Any] = {"body": body_io, "headers": headers, "status": status, "preload_content": False,
                                   "decode_content": False, "request_url": request.url, "connection": connection}
        try:
            raw = urllib3.HTTPResponse(**options, sock_shutdown=body_io.shutdown)
        except TypeError:  # urllib3 before 2.3: Stream.abort shuts ``connection.sock`` down instead
            raw = urllib3.HTTPResponse(**options)
        response = requests.Response()
        response.status_code = status
        response.headers = CaseInsensitiveDict(headers)
        response.raw = raw
        response.url = request.url or ""
        response.request = request
        response.reason = "OK" if status < 300 else "Fake model error"
        response.encoding = "utf-8"
        return response

    def close(self) -> None:
        pass


class FunctionModel(Provider):
    """A model whose every reply is ``fn(messages, info)``: ``messages`` the call's provider-neutral
    messages (:class:`~hookstream.Message`, a fresh list), ``info`` a :class:`RequestInfo`
    (step number, tools offered, tool choice, structured output, options). ``fn`` returns a
    :class:`Reply`, a str (the text), a :class:`ToolCall` or a list of them, or raises
    :class:`ModelError` for an HTTP error status. Any other exception ends the step with
    ``RUN_ERROR`` ``adapter_error`` naming it, as a bug in an adapter does.

    Use it wherever a provider object is accepted: ``chat(FunctionModel(fn), ...)``, ``prepare_step``
    returning it as the step's model, a fallback list. ``model`` is the name reported as the
    request's model and on ``STEP_FINISHED``. :attr:`requests` lists every request answered, in
    arrival order (a retried attempt again). Closing the model changes nothing: it holds no
    connection. ``session`` is a ``requests.Session`` to carry the calls (default: one of its own); the
    fake transport is mounted on it for the fake host only.
    """

    name: ClassVar[str] = "function"
    default_base_url: ClassVar[str] = _BASE_URL
    api_key_env: ClassVar[tuple[str, ...]] = ()
    framing = NDJSON

    def __init__(self, fn: Callable[[list[Message], RequestInfo], ReplyLike], *, model: str = "function",
                 session: requests.Session | None = None) -> None:
        # The fake transport is mounted for the fake host only, so a session given (a batch's rate-limited
        # one) keeps answering its other URLs as before and still sees every call go through it.
        session = session if session is not None else requests.Session()
        session.mount(_BASE_URL + "/", _FakeTransport(self))
        super().__init__(model, base_url=_BASE_URL, api_key="fake", session=session)
        self._fn = fn
        self._lock = threading.Lock()
        self._pending: weakref.WeakValueDictionary[str, ModelRequest] = weakref.WeakValueDictionary()
        self._answered: list[ModelRequest] = []

    @property
    def session(self) -> requests.Session:
        """The session whose transport adapter answers this model's calls (never a network one)."""
        session = self._session
        assert session is not None
        return session

    def close(self) -> None:
        """Nothing to close: the model holds no connection and stays usable."""

    @property
    def requests(self) -> list[ModelRequest]:
        """Every :class:`~hookstream.plugin.ModelRequest` answered so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._answered)

    def reply(self, messages: list[Message], info: RequestInfo) -> ReplyLike:
        """The reply to one model call: ``fn(messages, info)``. Subclasses override this."""
        return self._fn(messages, info)

    # -- the provider contract ------------------------------------------------------------------
    def identity(self) -> Any:
        """What, beside the request, decides this model's replies (JSON): its class and function. Part of
        the request body's digest, so a response cache tells two fake models apart."""
        fn = self._fn
        return [f"{type(self).__module__}.{type(self).__qualname__}",
                f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"]

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        # The body is what the request says (a digest of its content and of the model's identity), the same
        # for the same call, so a response cache keyed on the body hits; the table key goes in a header.
        key = new_id("req")
        with self._lock:
            self._pending[key] = request
        return HTTPRequest(f"{_BASE_URL}/{self.name}/calls", {"model": request.model, "digest": self._digest(request)},
                           headers={_REQUEST_HEADER: key})

    def _digest(self, request: ModelRequest) -> str:
        doc = {"identity": self.identity(), "messages": [dumps_message(m) for m in request.messages],
               "request": {f.name: getattr(request, f.name) for f in attrs.fields(ModelRequest)
                           if f.name not in ("messages", "thread_id")}}
        text = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=_jsonable)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _answer(self, key: Any) -> tuple[int, list[bytes], dict[str, str]]:
        """(status, body, headers) for one POST whose request-table key is ``key`` (its header)."""
        with self._lock:
            request = self._pending.get(key) if isinstance(key, str) else None
            if request is not None:
                self._answered.append(request)
        if request is None:
            return 400, [_error_body("the fake model got a request it did not build", "bad_request")], {}
        try:
            reply = _coerce(self.reply(list(request.messages), RequestInfo.of(request)))
        except ModelError as exc:
            headers = {"retry-after": f"{exc.retry_after:g}"} if exc.retry_after is not None else {}
            return exc.status, [_error_body(exc.message, exc.type)], headers
        lines = _lines(reply, request, self.model)
        return 200, [json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n" for line in lines], {}

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context)
        yield from b.start()
        for doc in events:
            if not isinstance(doc, dict):
                raise MalformedChunkError("a fake model line is not a JSON object", json.dumps(doc)[:200])
            if "text" in doc:
                yield from b.text(doc["text"])
            elif "reasoning" in doc:
                yield from b.reasoning(doc["reasoning"])
            elif "tool" in doc:
                yield from b.tool_start(doc["tool"], doc["name"])
            elif "args" in doc:
                yield from b.tool_args(doc["args"], doc["delta"])
            elif "end" in doc:
                yield from b.tool_end(doc["end"])
            elif "error" in doc:
                yield from b.error(doc["error"], code=doc.get("type"))
                return
            elif "finish" in doc:
                usage = Usage(**doc["usage"]) if isinstance(doc.get("usage"), dict) else None
                yield from b.finish(doc["finish"], doc["finish"], usage, response_id=doc.get("id"),
                                    model=doc.get("model"))
                return
            else:
                yield from b.raw(doc, self.name)


def _error_body(message: str, etype: str | None) -> bytes:
    return json.dumps({"error": {"message": message, "type": etype}}).encode("utf-8")


class TestModel(FunctionModel):
    """A model that exercises the agent without scripting it: at the first call of a turn it calls
    every tool offered once (all in one step, in parallel), with arguments generated from each tool's
    JSON Schema (:func:`~hookstream.testing.schema_example`: valid, deterministic); at the next call it
    answers with text naming each tool's result (``add returned 5; weather failed: ...``), or
    ``success (no tool calls)`` when none ran.

    With structured output asked (``chat(..., output=...)``) the answer is instead a JSON value valid
    against the output schema (or ``output`` when given), as the text, or as a call to the output
    tool when the output's mode is ``"tool"``. ``call_tools`` limits the tools called to those names
    (``[]``: none); ``tool_choice="none"`` calls none, ``{"name": X}`` only ``X``. ``text`` replaces
    the answer's text; ``thinking`` streams a reasoning block before every reply.

    ``replies`` scripts the answers instead: the conversation's N-th model call (counting every
    assistant message in the messages sent, so a continued conversation goes on with the next one)
    gets ``replies[N]`` (see :func:`reply_of` for what an entry may be); once they are used up, the
    behaviour above takes over.

    It keeps no state between calls (the messages say which step it is), so one instance serves any
    number of runs and threads.
    """

    __test__ = False  # not a pytest test class, whatever its name

    name: ClassVar[str] = "test"

    def __init__(
        self,
        *,
        call_tools: Literal["all"] | Sequence[str] = "all",
        text: str | None = None,
        output: Any = None,
        thinking: str | None = None,
        replies: Sequence[Any] | None = None,
        model: str = "test",
        session: requests.Session | None = None,
    ) -> None:
        super().__init__(self.reply, model=model, session=session)
        self.call_tools = call_tools if call_tools == "all" else list(call_tools)
        self.text = text
        self.output = output
        self.thinking = thinking
        self.replies = [reply_of(r) for r in replies or ()]

    def identity(self) -> Any:
        return [f"{type(self).__module__}.{type(self).__qualname__}", self.call_tools, self.text, self.thinking,
                repr(self.output), [attrs.asdict(r) for r in self.replies]]

    def reply(self, messages: list[Message], info: RequestInfo) -> ReplyLike:
        calls_so_far = sum(1 for m in messages if m.role == "assistant")
        if calls_so_far < len(self.replies):
            return self.replies[calls_so_far]
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        turn = messages[last_user + 1:]
        called = any(m.tool_calls for m in turn if m.role == "assistant")
        if not called:
            calls = [ToolCall(spec.name, schema_example(spec.parameters)) for spec in self._tools(info)]
            if calls:
                return Reply(tool_calls=calls, thinking=self.thinking)
        fmt = info.output
        if fmt is not None:
            value = self.output if self.output is not None else schema_example(fmt.schema)
            if fmt.mode == "tool" and isinstance(value, dict):
                return Reply(tool_calls=[ToolCall(fmt.name, value)], thinking=self.thinking)
            return Reply(json.dumps(value, ensure_ascii=False), thinking=self.thinking)
        if self.text is not None:
            return Reply(self.text, thinking=self.thinking)
        results = [r for m in turn for r in m.tool_results]
        if not results:
            return Reply(self.no_tools_text(messages), thinking=self.thinking)
        said = "; ".join(f"{r.tool_name} {'failed:' if r.is_error else 'returned'} {tool_output_text(r.output)}"
                         for r in results)
        return Reply(said, thinking=self.thinking)

    def no_tools_text(self, messages: list[Message]) -> str:
        """The answer of a turn in which no tool ran (and no ``text`` or output was asked for)."""
        return "success (no tool calls)"

    def _tools(self, info: RequestInfo) -> list[ToolSpec]:
        tools = info.tools
        choice = info.tool_choice
        if choice == "none":
            return []
        if isinstance(choice, dict) and "name" in choice:
            tools = [t for t in tools if t.name == choice["name"]]
        if self.call_tools != "all":
            wanted = set(self.call_tools)
            tools = [t for t in tools if t.name in wanted]
        return tools


def reply_of(value: Any) -> Reply:
    """One scripted reply of :class:`TestModel` (``replies=[...]``, ``$HOOKSTREAM_TEST_REPLIES``): a
    :class:`Reply`, a :class:`ToolCall` or a list of them, a str (the text), or its JSON form, a dict:
    ``{"tool": NAME, "args": {...}}`` for one tool call, or ``{"text", "thinking", "tool_calls": [{"name",
    "args", "id"}], "finish_reason"}`` (each key optional). Raises :class:`ValueError` for anything else."""
    if isinstance(value, dict):
        try:
            if "tool" in value:
                return Reply(tool_calls=[ToolCall(value["tool"], value.get("args") or {}, value.get("id"))])
            calls = [ToolCall(c["name"], c.get("args") or {}, c.get("id")) for c in value.get("tool_calls") or ()]
            return Reply(value.get("text") or "", tool_calls=calls, thinking=value.get("thinking"),
                         finish_reason=value.get("finish_reason"))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"a test model reply {json.dumps(value)[:200]} is not "
                             f'{{"text": ...}} or {{"tool": NAME, "args": {{...}}}}: {exc}') from None
    try:
        return _coerce(value)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


class TestProvider(TestModel):
    """The ``test`` provider, registered like the built-in ones: ``get_model("test")`` (or
    ``"test:NAME"``, NAME being only the model name reported), ``chat("test", ...)``, ``hookstream chat
    PROMPT --model test`` and ``hookstream serve|batch --model test``. Offline and deterministic, no
    API key: a :class:`TestModel` whose turn without tool calls answers ``you said "PROMPT" (turn N)``,
    N counting the conversation's user messages, so a continued conversation (``-c``) shows it kept
    its history. ``base_url`` and ``api_key`` are accepted and ignored; a ``session`` given (a batch's
    rate-limited one) carries the calls, answered in-process: nothing leaves the process.

    ``replies`` scripts the answers (see :class:`TestModel`); without it they are read from the
    environment variable ``HOOKSTREAM_TEST_REPLIES``, a JSON list of replies (strings, ``{"tool":
    NAME, "args": {...}}``, ``{"text": ...}``), which is how the CLI scripts the model. Raises
    :class:`ValueError` for a reply that cannot be one (a bad ``HOOKSTREAM_TEST_REPLIES`` too).
    """

    __test__ = False

    def __init__(
        self,
        model: str = "test",
        *,
        base_url: str | None = None,
        api_key: Any = None,
        session: requests.Session | None = None,
        replies: Sequence[Any] | None = None,
        call_tools: Literal["all"] | Sequence[str] = "all",
        text: str | None = None,
        thinking: str | None = None,
    ) -> None:
        if replies is None:
            replies = _env_replies()
        super().__init__(call_tools=call_tools, text=text, thinking=thinking, replies=replies, model=model,
                         session=session)

    def no_tools_text(self, messages: list[Message]) -> str:
        users = [m for m in messages if m.role == "user"]
        said = users[-1].text if users else ""
        return f'you said "{said}" (turn {len(users)})'


REPLIES_ENV = "HOOKSTREAM_TEST_REPLIES"


def _env_replies() -> list[Any]:
    raw = os.environ.get(REPLIES_ENV, "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{REPLIES_ENV} must be a JSON list of replies (strings or objects): {exc}") from None
    if not isinstance(value, list):
        raise ValueError(f"{REPLIES_ENV} must be a JSON list of replies, got {type(value).__name__}")
    return value
