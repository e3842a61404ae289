"""``hookstream batch --provider-batch``: a whole batch sent through the provider's own batch API (OpenAI
Batch API, Anthropic Message Batches, Gemini batch mode: answered within 24 hours at half the price)
instead of one streamed call per input.

The driver is provider-neutral; the provider's part is its :class:`~hookstream.plugin.BatchAPI`
(:meth:`~hookstream.plugin.Provider.batch_api`). Each input's request is built by the provider's own
``build_request`` (the same body a streamed call sends; the batch entry drops the streaming fields), and
each result is parsed by the provider's own framing and ``parse_stream`` (the plugin hands the
non-streaming answer back as the stream its adapter reads), so a line here has what the streaming batch
would have written for a one-step chat.

Crash-resume: the submitted batch's id and its input ids are written to a state file beside the output
(``OUT.jsonl.batch-state.json``) before the first poll; a run that finds the file polls that batch
instead of submitting a new one, writes the results whose ids the output lacks, and removes the file.
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

from ._agentloop.tools import as_tools
from ._batch import BatchResult
from ._batch_file import BatchInput, OutputFile
from ._chat import get_model
from ._errors import HookstreamError
from ._estimate import CHARS_PER_TOKEN
from ._events import Usage
from ._messages import Message, coerce_messages
from ._prices import cost_of
from ._secrets import Secret
from ._settings import RunSettings
from ._stream.accumulate import StepAccumulator, StepResult
from ._stream.batch_api import BatchAPI, BatchItem, BatchStatus
from ._stream.call import CallOptions, ModelCall
from ._stream.provider import CallContext, ModelRequest, Provider
from ._stream.tee import body_session

__all__ = ["STATE_SUFFIX", "BatchStatus", "NoBatchAPIError", "dry_run", "pending_count", "run_provider_batch",
           "state_path"]

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
    with OutputFile(output) as out:
        return sum(1 for i in inputs if i.id not in out.done)


def _request(provider: Provider, item: BatchInput, settings: RunSettings) -> ModelRequest:
    """The model request of ``item``'s first step, as the engine builds one from ``settings``."""
    messages = coerce_messages(item.chat_input)
    if settings.system is not None and not (messages and messages[0].role == "system"):
        messages.insert(0, Message.system(settings.system))
    tools = as_tools(settings.tools)
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
        yield api.entry(item.id, provider.build_request(_request(provider, item, settings)))


def _batch_cost(usage: Usage | None, provider: Provider, api: BatchAPI, *models: str | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    cost = cost_of(usage, provider.priced_as, *models)
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
            in_tokens += len(line) // CHARS_PER_TOKEN
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


def _line(provider: Provider, api: BatchAPI, item: BatchItem, request: ModelRequest) -> dict[str, Any]:
    if item.body is None:
        code, message = item.error or ("error", "no result")
        failed = BatchResult(item.custom_id, finish_reason="error", error={"code": code, "message": message})
        return {**failed.to_dict(), "cost": None}
    step = _parse(provider, request, item.body)
    usage = {k: v for k, v in attrs.asdict(step.usage, recurse=False).items()
             if v is not None and k != "cost"} if step.usage is not None else None
    error = None
    if step.error is not None:
        error = {"code": step.error[0] or "error", "message": step.error[1]}
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    result = BatchResult(item.custom_id, step.text, calls, step.finish_reason, usage or None, error)
    return {**result.to_dict(), "cost": _batch_cost(step.usage, provider, api, step.model, request.model)}


@attrs.define(slots=True)
class _State:
    model: str
    batch_id: str
    ids: list[str]

    @classmethod
    def read(cls, path: str) -> _State | None:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            return cls(str(doc["model"]), str(doc["batch_id"]), [str(i) for i in doc["ids"]])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise HookstreamError(f"{path}: not a batch state file ({exc}); remove it to submit anew") from None

    def write(self, path: str) -> None:
        # Whole or absent: a crash mid-write must not leave a state that loses the batch id.
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(attrs.asdict(self), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def run_provider_batch(
    inputs: list[BatchInput], model: str, settings: RunSettings, output: str | os.PathLike[str], *,
    base_url: str | None = None, api_key: str | Secret | None = None, poll_interval: float = 30.0,
    on_status: Callable[[BatchStatus], None] | None = None, on_result: Callable[[dict[str, Any]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Send the ``inputs`` the output file lacks as one batch of ``model``'s provider, poll every
    ``poll_interval`` seconds (``on_status`` gets each poll), and append one line per result to ``output``
    (``on_result`` gets each): the streaming batch's fields plus ``cost`` at the batch price. A batch
    whose state file is beside ``output`` is polled again, never submitted twice. Returns how many lines
    were written.

    Raises :class:`NoBatchAPIError` for a provider without a batch API, the typed HTTP errors of the
    provider's batch endpoints, :class:`OSError` for files that cannot be written."""
    state_file = state_path(output)
    written = 0
    with get_model(model, base_url=base_url, api_key=api_key) as provider, OutputFile(output) as out:
        api = _batch_api(provider)
        by_id = {i.id: i for i in inputs}
        state = _State.read(state_file)
        if state is not None and state.model != provider.label():
            raise HookstreamError(f"{state_file} holds a batch of {state.model}, not {provider.label()}: "
                                  "run with that model to finish it, or remove the file")
        if state is None:
            pending = [i for i in inputs if i.id not in out.done]
            if not pending:
                return 0
            provider.check_api_key()
            batch_id = api.submit(list(_entries(provider, api, pending, settings)))
            state = _State(provider.label(), batch_id, [i.id for i in pending])
            state.write(state_file)
        while True:
            status = api.poll(state.batch_id)
            if on_status is not None:
                on_status(status)
            if status.ended:
                break
            sleep(poll_interval)
        wanted = set(state.ids) - out.done
        for item in api.results(state.batch_id):
            if item.custom_id not in wanted or item.custom_id not in by_id:
                continue
            wanted.discard(item.custom_id)
            line = _line(provider, api, item, _request(provider, by_id[item.custom_id], settings))
            out.write(line)
            written += 1
            if on_result is not None:
                on_result(line)
        for ident in sorted(wanted & by_id.keys()):
            missing = BatchItem(ident, error=("missing", "the batch ended without this request's result"))
            line = _line(provider, api, missing, _request(provider, by_id[ident], settings))
            out.write(line)
            written += 1
            if on_result is not None:
                on_result(line)
        os.remove(state_file)
    return written
