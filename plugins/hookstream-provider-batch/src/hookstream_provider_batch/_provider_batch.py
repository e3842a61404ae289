"""``hookstream batch --provider-batch``: a whole batch sent through the provider's own batch API (OpenAI
Batch API, Anthropic Message Batches, Gemini batch mode: answered within 24 hours at half the price)
instead of one streamed call per input.

``hookstream-provider-batch`` takes the ``batch`` command over (``CLIRun.main``) when ``--provider-batch`` is
given. The driver is provider-neutral; the provider's part is its :class:`~hookstream.plugin.BatchAPI`
(:meth:`~hookstream.plugin.Provider.batch_api`). Each input's request is built by the provider's own
``build_request`` (the same body a streamed call sends; the batch entry drops the streaming fields), and
each result is parsed by the provider's own framing and ``parse_stream`` (the plugin hands the
non-streaming answer back as the stream its adapter reads), so a line here has what the streaming batch
would have written. A chat whose step ends in tool calls has its tools run here and its next step
sent in the next round's batch (each round one batch of every conversation that needs another step).

Crash-resume: the submitted batch's id, its input ids and the conversations past their first step are
written to a state file beside the output (``OUT.jsonl.batch-state.json``) before the first poll, and the
next round's conversations before it is submitted; a run that finds the file polls that batch instead of
submitting a new one (or submits the saved round), writes the results whose ids the output lacks, and
removes the file at the end.
A process killed between the provider's answer to the submission and the state file's write (one local
file write) would submit again: that window is the only one.

Thread safety: one thread drives one batch.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import attrs
from hookstream import (
    BatchInput,
    BatchResult,
    CancellationToken,
    Message,
    RunSettings,
    StepResult,
    ToolCallPart,
    ToolContext,
    get_model,
)
from hookstream.errors import HookstreamError
from hookstream.events import Usage
from hookstream.plugin import (
    BatchAPI,
    BatchStatus,
    CallContext,
    CallOptions,
    ModelCall,
    ModelRequest,
    Provider,
    Secret,
    StepAccumulator,
    body_session,
    coerce_messages,
    open_output,
    priced,
    run_tool,
)
from hookstream.stores import dumps_message, loads_message

__all__ = ["STATE_SUFFIX", "BatchStatus", "NoBatchAPIError", "dry_run", "pending_count", "run_provider_batch",
           "state_path"]

_CHARS_PER_TOKEN = 4  # hookstream's rough token estimate (docs/tokens.md): no tokenizer for a dry run

STATE_SUFFIX = ".batch-state.json"
"""The state file of a submitted batch is the output file's path with this suffix."""


class NoBatchAPIError(HookstreamError, ValueError):
    """``--provider-batch`` with a provider whose plugin offers no batch API."""

    code = "no_batch_api"


def state_path(output: str | os.PathLike[str]) -> str:
    """Where the state of the batch writing ``output`` is kept."""
    return os.fspath(output) + STATE_SUFFIX


def pending_count(inputs: list[BatchInput], output: str | os.PathLike[str]) -> int:
    """How many of ``inputs`` have no line in ``output`` yet."""
    with _output(output) as out:
        return sum(1 for i in inputs if i.id not in out.done)


def _output(output: str | os.PathLike[str]) -> Any:
    """The output file (``hookstream.plugin.open_output``: done ids, appending one line per result)."""
    return open_output(output)


def _first_messages(item: BatchInput, settings: RunSettings) -> list[Message]:
    """The messages of ``item``'s first step: its prompt or messages, after ``settings.system``."""
    messages = coerce_messages(item.chat_input)
    if settings.system is not None and not (messages and messages[0].role == "system"):
        messages.insert(0, Message.system(settings.system))
    return messages


def _request(provider: Provider, messages: list[Message], settings: RunSettings) -> ModelRequest:
    """The model request of a step with ``messages``, as the engine builds one from ``settings``."""
    tools = {t.name: t for t in settings.tools}  # RunSettings holds them as Tools
    choice = settings.tool_choice
    output = settings.output
    return ModelRequest(
        model=provider.model, messages=messages, tools=[t.spec() for t in tools.values()],
        tool_choice=choice if tools or choice == "none" else None, max_tokens=settings.max_tokens,
        temperature=settings.temperature, options=dict(settings.options),
        output=output.format if output is not None else None)


def _batch_api(provider: Provider) -> BatchAPI:
    api = provider.batch_api()
    if api is None:
        raise NoBatchAPIError(f"provider {provider.name!r} has no batch API: --provider-batch needs one "
                              "(openai, anthropic, gemini); run without it to stream each chat")
    return api


def _entries(provider: Provider, api: BatchAPI, items: Iterable[BatchInput],
             settings: RunSettings) -> Iterator[dict[str, Any]]:
    for item in items:
        yield api.entry(item.id, provider.build_request(_request(provider, _first_messages(item, settings), settings)))


def _batch_cost(usage: Usage | None, provider: Provider, api: BatchAPI, *models: str | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    cost = (priced(attrs.evolve(usage, cost=None), provider.priced_as, *models) or usage).cost
    if cost is None:
        return None
    return {"amount": float(cost.amount * api.discount), "currency": cost.currency}


def dry_run(inputs: list[BatchInput], model: str, settings: RunSettings, out: IO[str], *,
            base_url: str | None = None, api_key: str | Secret | None = None) -> dict[str, Any] | None:
    """Write the batch entries of ``inputs`` to ``out``, one JSON per line, sending nothing, and return
    the estimated cost at the batch price (``{"amount", "currency"}``; ``None``: the model has no
    price): input tokens are the entry bytes / 4, output tokens ``settings.max_tokens`` (else 256) each.
    Raises :class:`NoBatchAPIError`."""
    with get_model(model, base_url=base_url, api_key=api_key if api_key is not None else "") as provider:
        api = _batch_api(provider)
        in_tokens = 0
        for entry in _entries(provider, api, inputs, settings):
            line = json.dumps(entry, ensure_ascii=False)
            in_tokens += len(line) // _CHARS_PER_TOKEN
            out.write(line + "\n")
        usage = Usage(input_tokens=in_tokens, output_tokens=(settings.max_tokens or 256) * len(inputs))
        return _batch_cost(usage, provider, api, provider.model)


def _parse(provider: Provider, request: ModelRequest, body: bytes) -> StepResult:
    """``body`` (the provider's stream body) through the provider's framing and adapter, as a live call."""
    session = body_session(body, provider.framing.media_type)
    try:
        call = ModelCall(provider, request, CallContext("batch", "batch"), session,
                         CallOptions(connect_timeout=None, read_timeout=None, max_retries=0))
        acc = StepAccumulator()
        for event in call:
            acc.add(event)
        return acc.finish()
    finally:
        session.close()


def _error_line(ident: str, code: str, message: str) -> dict[str, Any]:
    failed = BatchResult(ident, finish_reason="error", error={"code": code, "message": message})
    return {**failed.to_dict(), "cost": None}


def _result_line(provider: Provider, api: BatchAPI, ident: str, step: StepResult, usage: Usage | None,
                 model: str) -> dict[str, Any]:
    """The output line of a conversation whose last step is ``step`` (``usage``: summed over its steps)."""
    counts = {k: v for k, v in attrs.asdict(usage, recurse=False).items()
              if v is not None and k != "cost"} if usage is not None else None
    error = None
    if step.error is not None:
        error = {"code": step.error[0] or "error", "message": step.error[1]}
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    result = BatchResult(ident, step.text, calls, step.finish_reason, counts or None, error)
    return {**result.to_dict(), "cost": _batch_cost(usage, provider, api, step.model, model)}


@attrs.define(slots=True)
class _Conversation:
    """A chat past its first step: its messages so far, the usage of its steps, how many steps."""

    messages: list[Message]
    usage: Usage | None = None
    steps: int = 0

    def to_json(self) -> dict[str, Any]:
        usage = attrs.asdict(self.usage, recurse=False) if self.usage is not None else None
        if usage is not None:
            usage.pop("cost", None)
        return {"messages": [json.loads(dumps_message(m)) for m in self.messages], "usage": usage,
                "steps": self.steps}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> _Conversation:
        usage = Usage(**doc["usage"]) if doc.get("usage") else None
        return cls([loads_message(json.dumps(m)) for m in doc["messages"]], usage, int(doc["steps"]))


@attrs.define(slots=True)
class _State:
    """What the state file holds: the model, the round's batch id (``None``: not submitted yet), the
    ids it asks for, and the conversations past their first step (their messages for the next round)."""

    model: str
    batch_id: str | None
    ids: list[str]
    conversations: dict[str, _Conversation] = attrs.Factory(dict)

    @classmethod
    def read(cls, path: str) -> _State | None:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            convs = {k: _Conversation.from_json(v) for k, v in (doc.get("conversations") or {}).items()}
            batch_id = doc["batch_id"]
            return cls(str(doc["model"]), None if batch_id is None else str(batch_id),
                       [str(i) for i in doc["ids"]], convs)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise HookstreamError(f"{path}: not a batch state file ({exc}); remove it to submit anew") from None

    def write(self, path: str) -> None:
        doc = {"model": self.model, "batch_id": self.batch_id, "ids": self.ids,
               "conversations": {k: c.to_json() for k, c in self.conversations.items()}}
        # Whole or absent: a crash mid-write must not leave a state that loses the batch id.
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


class _Driver:
    """One ``--provider-batch`` run: rounds of submit, poll, fetch until every conversation has its line."""

    def __init__(self, provider: Provider, api: BatchAPI, out: Any, inputs: list[BatchInput],
                 settings: RunSettings, state_file: str, poll_interval: float,
                 on_status: Callable[[BatchStatus], None] | None, on_result: Callable[[dict[str, Any]], None] | None,
                 sleep: Callable[[float], None]) -> None:
        self.provider, self.api, self.out, self.settings = provider, api, out, settings
        self.by_id = {i.id: i for i in inputs}
        self.tools = {t.name: t for t in settings.tools}  # RunSettings holds them as Tools
        self.state_file, self.poll_interval, self.sleep = state_file, poll_interval, sleep
        self.on_status, self.on_result = on_status, on_result
        self.written = 0
        self.failure: str | None = None

    def run(self) -> int:
        state = _State.read(self.state_file)
        if state is not None and state.model != self.provider.label():
            raise HookstreamError(f"{self.state_file} holds a batch of {state.model}, not {self.provider.label()}: "
                                  "run with that model to finish it, or remove the file")
        if state is None:
            pending = [i.id for i in self.by_id.values() if i.id not in self.out.done]
            if not pending:
                return 0
            state = _State(self.provider.label(), None, pending)
        while state is not None:
            if state.batch_id is None:
                state = self._submit(state)
            self._wait(state)
            state = self._collect(state)
        os.remove(self.state_file)
        return self.written

    def _messages(self, state: _State, ident: str) -> list[Message]:
        conv = state.conversations.get(ident)
        return list(conv.messages) if conv is not None else _first_messages(self.by_id[ident], self.settings)

    def _submit(self, state: _State) -> _State:
        self.provider.check_api_key()
        entries = [self.api.entry(i, self.provider.build_request(_request(self.provider, self._messages(state, i),
                                                                              self.settings)))
                   for i in state.ids]
        state.batch_id = self.api.submit(entries)
        state.write(self.state_file)
        return state

    def _wait(self, state: _State) -> None:
        assert state.batch_id is not None
        while True:
            status = self.api.poll(state.batch_id)
            if self.on_status is not None:
                self.on_status(status)
            if status.ended:
                self.failure = status.error
                return
            self.sleep(self.poll_interval)

    def _write(self, line: dict[str, Any]) -> None:
        self.out.write(line)
        self.written += 1
        if self.on_result is not None:
            self.on_result(line)

    def _collect(self, state: _State) -> _State | None:
        """Write the lines of the conversations this round ended; the next round's state, or ``None``."""
        assert state.batch_id is not None
        wanted = {i for i in state.ids if i in self.by_id} - self.out.done
        following: dict[str, _Conversation] = {}
        for item in self.api.results(state.batch_id):
            if item.custom_id not in wanted:
                continue
            wanted.discard(item.custom_id)
            if item.body is None:
                code, message = item.error or ("error", "no result")
                self._write(_error_line(item.custom_id, code, message))
                continue
            conv = self._step(state, item.custom_id, item.body)
            if conv is not None:
                following[item.custom_id] = conv
        for ident in sorted(wanted):
            if self.failure is not None:
                self._write(_error_line(ident, "batch_failed", self.failure))
            else:
                self._write(_error_line(ident, "missing", "the batch ended without this request's result"))
        if not following:
            return None
        # The next round, saved before it is submitted: a crash now resumes with these conversations.
        nxt = _State(state.model, None, sorted(following), following)
        nxt.write(self.state_file)
        return nxt

    def _needs_approval(self, call: ToolCallPart) -> bool:
        tool = self.tools.get(call.name)
        if tool is None:
            return False
        ask = tool.needs_approval
        try:
            return bool(ask(call.arguments or {})) if callable(ask) else bool(ask)
        except Exception:  # a failing predicate asks, as the engine's approval would refuse to guess
            return True

    def _step(self, state: _State, ident: str, body: bytes) -> _Conversation | None:
        """Parse one result; run its tool calls and return the conversation when it needs another step,
        else write its line and return ``None``."""
        messages = self._messages(state, ident)
        previous = state.conversations.get(ident)
        request = _request(self.provider, messages, self.settings)
        step = _parse(self.provider, request, body)
        usage = step.usage if previous is None or previous.usage is None else (
            previous.usage if step.usage is None else previous.usage + step.usage)
        steps = (previous.steps if previous is not None else 0) + 1
        calls = step.complete_tool_calls
        continues = (step.error is None and step.finish_reason == "tool_calls" and bool(calls) and bool(self.tools)
                     and steps < self.settings.max_steps)
        if continues and any(self._needs_approval(c) for c in calls):
            line = _result_line(self.provider, self.api, ident, step, usage, request.model)
            self._write({**line, "error": {"code": "interrupted", "message": "the run stopped for a tool approval, "
                                           "which a batch run cannot answer"}})
            return None
        if continues:
            results = [run_tool(self.tools.get(c.name), c, ToolContext(c.id, messages, CancellationToken(), None))
                       for c in calls]
            return _Conversation([*messages, step.message, Message("tool", [*results])], usage, steps)
        self._write(_result_line(self.provider, self.api, ident, step, usage, request.model))
        return None


def run_provider_batch(
    inputs: list[BatchInput], model: str, settings: RunSettings, output: str | os.PathLike[str], *,
    base_url: str | None = None, api_key: str | Secret | None = None, poll_interval: float = 30.0,
    on_status: Callable[[BatchStatus], None] | None = None, on_result: Callable[[dict[str, Any]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Send the ``inputs`` the output file lacks as batches of ``model``'s provider, poll every
    ``poll_interval`` seconds (``on_status`` gets each poll), and append one line per chat to ``output``
    (``on_result`` gets each): the streaming batch's fields plus ``cost`` at the batch price. A chat whose
    step ends in tool calls (with ``settings.tools``, below ``settings.max_steps``) has its tools run here
    and its next step sent in the next round's batch. A batch whose state file is beside ``output`` is
    polled again, never submitted twice. Returns how many lines were written.

    Raises :class:`NoBatchAPIError` for a provider without a batch API, the typed HTTP errors of the
    provider's batch endpoints, :class:`OSError` for files that cannot be written."""
    with get_model(model, base_url=base_url, api_key=api_key) as provider, _output(output) as out:
        api = _batch_api(provider)
        return _Driver(provider, api, out, inputs, settings, state_path(output), poll_interval, on_status,
                       on_result, sleep).run()
