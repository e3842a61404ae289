"""Batch runs: many independent chats on worker threads, under shared rate limits, each result
appended to a JSON Lines file as it finishes, resumable after a crash.

:func:`batch` returns a :class:`BatchRun`, an iterator of :class:`BatchResult` in completion order.
Every HTTP request of every worker passes one :class:`~hookstream.RateLimiter` (requests
and tokens per minute, see that module) through the provider's ``requests.Session``, so retries the
engine sends after a 429 are counted too, and a 429 pauses all workers until its ``Retry-After``
has passed. Token estimates (request body bytes / 4, plus the mean output seen so far) are corrected
with each step's real usage (``on_step_finish``).

Thread safety: iterate a BatchRun on one thread; :meth:`BatchRun.stop` may be called from any thread.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Generator, Iterable
from typing import Any, Protocol

import attrs
import requests
import requests.adapters

from ._agentloop.values import RunResult
from ._batch_file import BatchInput, BatchInputError, OutputFile, parse_input
from ._chat import ChatStream, chat, get_model
from ._errors import HookstreamError
from ._estimate import CHARS_PER_TOKEN
from ._ratelimit import Limiter, RateLimiter
from ._secrets import Secret
from ._settings import RunSettings
from ._stream.accumulate import StepResult
from ._stream.provider import Provider
from ._stream.transport import parse_retry_after

__all__ = ["BatchJob", "BatchResult", "BatchRun", "ChatRunner", "Runner", "RunnerFactory", "batch", "open_output"]

DEFAULT_429_PAUSE = 1.0
"""Seconds all workers pause after a 429 without ``Retry-After``."""


@attrs.define(slots=True)
class BatchResult:
    """One finished chat of a batch, as written to the output line.

    ``text``, ``tool_calls`` (``{"id", "name", "arguments"}``; ``arguments`` is ``None`` when they did
    not parse) and ``finish_reason`` are the last step's; ``usage`` sums the run's steps (token counts
    the provider reported: ``input_tokens``, ``output_tokens``, ``total_tokens``...); ``error`` is
    ``{"code", "message"}`` (``code`` as in ``RUN_ERROR``) when the run failed, else ``None``.
    """

    id: str
    text: str = ""
    tool_calls: list[dict[str, Any]] = attrs.Factory(list)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    error: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "tool_calls": self.tool_calls,
                "finish_reason": self.finish_reason, "usage": self.usage, "error": self.error}

    @property
    def total_tokens(self) -> int:
        u = self.usage or {}
        return int(u.get("total_tokens") or (u.get("input_tokens") or 0) + (u.get("output_tokens") or 0))

    @classmethod
    def from_run(cls, ident: str, result: RunResult) -> BatchResult:
        # Token counts only (``usage: dict[str, int]``); the run's cost is not on the line yet.
        usage = {k: v for k, v in attrs.asdict(result.usage, recurse=False).items()
                 if v is not None and k != "cost"} or None
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls]
        error = None
        if result.outcome == "error":
            exc = result.error
            code = exc.code if isinstance(exc, HookstreamError) else "error"
            error = {"code": code, "message": str(exc) if exc is not None else "run failed"}
        elif result.outcome == "interrupt":
            error = {"code": "interrupted", "message": "the run stopped for a tool approval or a client tool, "
                                                       "which a batch run cannot answer"}
        return cls(ident, result.text, calls, result.finish_reason, usage, error)


class _Estimator:
    """Token estimates for the limiter: request body bytes / 4 (:mod:`hookstream._estimate`; JSON keys and
    tool schemas count as prompt tokens too, so this errs high) plus the mean output tokens seen so far."""

    def __init__(self, first_output: int) -> None:
        self._lock = threading.Lock()
        self._out_sum, self._out_n, self._first = 0, 0, first_output

    def estimate(self, body_bytes: int) -> int:
        with self._lock:
            out = self._out_sum // self._out_n if self._out_n else self._first
        return body_bytes // CHARS_PER_TOKEN + out

    def observe(self, output_tokens: int) -> None:
        with self._lock:
            self._out_sum += output_tokens
            self._out_n += 1


class _LimitedSession(requests.Session):
    """A ``requests.Session`` whose every request first waits for the batch's limiter; a 429 pauses
    the limiter for its ``Retry-After`` (or :data:`DEFAULT_429_PAUSE`). Permits of answered requests
    wait in the calling thread's ``local.permits`` for the step's real usage."""

    def __init__(self, limiter: Limiter, estimator: _Estimator, local: threading.local,
                 stopped: threading.Event, pool_size: int) -> None:
        super().__init__()
        self._limiter, self._estimator, self._local, self._stopped = limiter, estimator, local, stopped
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=max(10, pool_size))
        self.mount("http://", adapter)
        self.mount("https://", adapter)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        body = request.body or b""
        permit = self._limiter.acquire(self._estimator.estimate(len(body)), cancelled=self._stopped)
        if permit is None:
            raise requests.exceptions.ConnectionError("batch stopped before this request was sent")
        try:
            resp = super().send(request, **kwargs)
        except BaseException:
            self._limiter.settle(permit, 0)
            raise
        if resp.status_code == 429:
            wait = parse_retry_after(resp.headers.get("retry-after"))
            self._limiter.pause(DEFAULT_429_PAUSE if wait is None else wait)
        if resp.status_code >= 400:
            self._limiter.settle(permit, 0)  # a refused request is not charged tokens
        else:
            permits: list[Any] | None = getattr(self._local, "permits", None)
            if permits is not None:
                permits.append(permit)
        return resp


class ChatRunner:
    """Runs single chats of a batch in this process, under a shared limiter: what each thread of a
    :class:`BatchRun` calls, and what each worker process of a distributed batch (``hookstream-ray``)
    holds.

    ``model``, ``base_url`` and ``api_key`` are as in :func:`hookstream.get_model` (or ``model`` is a
    provider object, which then is not closed here and cannot be rate limited); every HTTP request
    passes ``limiter`` (a :class:`~hookstream.RateLimiter`, or any object with its ``acquire``,
    ``settle`` and ``pause`` methods, such as a proxy to a limiter in another process);
    ``pool_size`` is the most connections kept open to the provider (the threads that call
    :meth:`run` at once); ``settings`` (a :class:`~hookstream.RunSettings`) is how every input's
    :func:`hookstream.chat` goes (its ``callbacks.on_step_finish`` is still called, after the runner
    has settled the step's tokens with the limiter).

    Thread safety: :meth:`run` is called from many threads at once; :meth:`stop` from any thread.
    """

    def __init__(
        self,
        model: str | Provider,
        limiter: Limiter,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        pool_size: int = 10,
        first_output_estimate: int = 256,
        settings: RunSettings | None = None,
    ) -> None:
        self.limiter = limiter
        self._local = threading.local()
        self._stopped = threading.Event()
        self._estimator = _Estimator(first_output_estimate)
        self._session: requests.Session | None = None
        settings = RunSettings.of(settings)
        self._user_finish = settings.callbacks.on_step_finish
        self._settings = settings.evolve(callbacks=attrs.evolve(settings.callbacks, on_step_finish=self._settle))
        self._lock = threading.Lock()
        self._inflight: dict[int, ChatStream] = {}
        if isinstance(model, str):
            self._session = _LimitedSession(limiter, self._estimator, self._local, self._stopped, pool_size)
            try:
                self._provider = get_model(model, base_url=base_url, api_key=api_key, session=self._session)
            except BaseException:
                self._session.close()
                raise
            self._own_provider = True
        else:
            if limiter.rpm is not None or limiter.tpm is not None:
                raise ValueError("rate limits need model as 'PROVIDER:MODEL' (the batch builds the provider's session)")
            self._provider, self._own_provider = model, False

    def stop(self) -> None:
        """Start no more chats and cancel those in flight (their :meth:`run` returns ``None``)."""
        self._stopped.set()
        with self._lock:
            streams = list(self._inflight.values())
        for s in streams:
            s.cancel()

    def close(self) -> None:
        """Release the provider and its connections."""
        if self._own_provider:
            self._provider.close()
        if self._session is not None:
            self._session.close()

    @classmethod
    def from_job(cls, job: BatchJob) -> ChatRunner:
        """The runner of a batch on threads of this process (what :func:`batch` uses without ``runner``):
        ``job.limiter``, else a :class:`~hookstream.RateLimiter` of ``job.rpm``/``job.tpm``."""
        limiter = job.limiter if job.limiter is not None else RateLimiter(job.rpm, job.tpm)
        return cls(job.model, limiter, base_url=job.base_url, api_key=job.api_key, pool_size=job.concurrency,
                   first_output_estimate=job.first_output_estimate, settings=job.settings)

    def _settle(self, step: StepResult) -> None:
        permits: list[Any] = getattr(self._local, "permits", [])
        if permits and step.usage is not None:
            u = step.usage
            total = u.total_tokens or (u.input_tokens or 0) + (u.output_tokens or 0)
            self.limiter.settle(permits.pop(), total)
            if u.output_tokens is not None:
                self._estimator.observe(u.output_tokens)
        if self._user_finish is not None:
            self._user_finish(step)

    def run(self, item: BatchInput) -> BatchResult | None:
        """Run one input's chat to its end: its result (a failed chat is a result with ``error``), or
        ``None`` when :meth:`stop` came before or during it (the input is not done)."""
        self._local.permits = []
        key = threading.get_ident()
        try:
            stream = chat(self._provider, item.chat_input, settings=self._settings)
        except (ValueError, HookstreamError) as exc:
            code = exc.code if isinstance(exc, HookstreamError) else "invalid_input"
            return BatchResult(item.id, error={"code": code, "message": str(exc)})
        with self._lock:
            if self._stopped.is_set():
                return None
            self._inflight[key] = stream
        try:
            result = stream.result()
        except Exception as exc:  # a bug must not lose the other chats' lines
            return BatchResult(item.id, error={"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"})
        finally:
            with self._lock:
                self._inflight.pop(key, None)
        if result.outcome == "cancelled":
            return None  # cut short by stop(): not done, runs again next time
        return BatchResult.from_run(item.id, result)


class Runner(Protocol):
    """What :class:`BatchRun` needs of the thing that runs its chats: :class:`ChatRunner` in this
    process, or a runner that sends each chat to another process (``hookstream-ray``'s Ray workers).

    ``run(item)`` runs one input's chat to its end and returns its result (``None``: stopped before or
    during it, the input is not done); it is called from ``concurrency`` threads at once. ``stop()``
    (any thread) starts no more chats and cancels those in flight; ``close()`` releases what the runner
    holds, once, after the last ``run``. A runner may have a ``limiter`` attribute (a
    :class:`~hookstream.plugin.Limiter`), which the batch shows as :attr:`BatchRun.limiter`."""

    def run(self, item: BatchInput) -> BatchResult | None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


@attrs.frozen(slots=True, kw_only=True)
class BatchJob:
    """What every chat of a batch is, as :func:`batch` hands it to a :data:`RunnerFactory`: ``model``
    (``"PROVIDER:MODEL"`` or a provider object), ``settings`` (each chat's
    :class:`~hookstream.RunSettings`), ``base_url``/``api_key`` (as in :func:`hookstream.get_model`),
    ``concurrency`` (chats at once), ``rpm``/``tpm`` (caps per minute over the whole batch) or a shared
    ``limiter`` given instead, and ``first_output_estimate`` (output tokens a chat is assumed to take
    before any has finished: ``settings.max_tokens``, else 256)."""

    model: str | Provider
    settings: RunSettings
    base_url: str | None = None
    api_key: str | Secret | None = None
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    limiter: Limiter | None = None

    @property
    def first_output_estimate(self) -> int:
        return self.settings.max_tokens or 256


RunnerFactory = Callable[[BatchJob], Runner]
"""Builds the :class:`Runner` of a batch from its :class:`BatchJob` (``batch(..., runner=factory)``):
:meth:`ChatRunner.from_job` (threads of this process) by default; ``hookstream_ray.RayRunner(...)`` runs
the chats in Ray worker processes. It raises what stops the batch from starting (:class:`ValueError` for
a job it cannot run, :class:`ConnectionError` for a cluster it cannot reach...)."""


class BatchRun:
    """A running batch (see :func:`batch`): iterate it for :class:`BatchResult` in completion order.

    ``done_ids`` are the ids the output file already held when the batch opened it (known before
    iterating); ``skipped`` counts the inputs passed over for that reason so far; ``failed`` is set when
    ``fail_fast`` stopped the batch; ``limiter`` is the shared limiter (a :class:`~hookstream.RateLimiter`
    for a batch in this process). Leaving the loop early (``break``, an exception, Ctrl-C) or
    :meth:`stop` cancels the chats in flight; their inputs get no line and run again on the next call
    with the same output file.

    ``runner`` runs single chats (:class:`ChatRunner` or another process's proxy); ``concurrency``
    threads of this process each hand it one input at a time. The output file is written only here, so
    its lines are whole whichever process ran the chat. The batch owns ``runner`` and closes it.
    """

    def __init__(
        self,
        inputs: Iterable[BatchInput | dict[str, Any]],
        runner: Runner,
        *,
        limiter: Any,
        output: OutputFile | None,
        concurrency: int,
        fail_fast: bool,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._inputs = iter(inputs)
        self.runner = runner
        self.limiter = limiter
        self._output = output
        self.concurrency = concurrency
        self.fail_fast = fail_fast
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._done = set(output.done) if output is not None else set()
        self.skipped = 0
        self.failed = False
        self._fatal: BaseException | None = None
        self._queue: queue.Queue[BatchResult | None] = queue.Queue()
        self._started = False

    @property
    def done_ids(self) -> frozenset[str]:
        """Ids that had an output line when the batch opened its output file."""
        return frozenset(self._done)

    def stop(self) -> None:
        """Start no more chats and cancel those in flight (they get no output line)."""
        self._stopped.set()
        self.runner.stop()

    def close(self) -> None:
        """Stop the batch and release its output file and connections; for a BatchRun that is not
        iterated to the end (iterating to the end, or leaving the loop, closes it already)."""
        if self._started:
            self.stop()
            return
        self._started = True
        self._close()

    def __enter__(self) -> BatchRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Generator[BatchResult, None, None]:
        if self._started:
            raise RuntimeError("a BatchRun can be iterated once")
        self._started = True
        return self._results()

    def _results(self) -> Generator[BatchResult, None, None]:
        workers = [threading.Thread(target=self._work, name=f"hookstream-batch-{i}", daemon=True)
                   for i in range(self.concurrency)]
        for w in workers:
            w.start()
        try:
            running = len(workers)
            while running:
                item = self._queue.get()
                if item is None:
                    running -= 1
                    continue
                yield item
        finally:
            self.stop()
            for w in workers:
                w.join()
            self._close()
        if self._fatal is not None:
            raise self._fatal

    def _close(self) -> None:
        try:
            if self._output is not None:
                self._output.close()
        finally:
            self.runner.close()

    def _next_input(self) -> BatchInput | None:
        with self._lock:
            while not self._stopped.is_set():
                try:
                    item = parse_input(next(self._inputs))
                except StopIteration:
                    return None
                except BaseException as exc:  # a bad input or a failing input iterator ends the batch
                    self._fail(exc)
                    return None
                if item.id in self._seen:
                    self._fail(BatchInputError(f"id {item.id!r} appears twice"))
                    return None
                self._seen.add(item.id)
                if item.id in self._done:
                    self.skipped += 1
                    continue
                return item
            return None

    def _fail(self, exc: BaseException) -> None:
        if self._fatal is None:
            self._fatal = exc
        self._stopped.set()

    def _work(self) -> None:
        try:
            while (item := self._next_input()) is not None:
                result = self.runner.run(item)
                if result is None or (self._stopped.is_set() and result.error is not None):
                    # Stopped: a chat cut short (cancelled, or failing because stop() aborted it, here or in
                    # a worker process) is not done and runs again next time.
                    break
                try:
                    if self._output is not None:
                        self._output.write(result.to_dict())
                except OSError as exc:
                    with self._lock:
                        self._fail(exc)
                    self.stop()
                    break
                self._queue.put(result)
                if result.error is not None and self.fail_fast:
                    self.failed = True
                    self.stop()
                    break
        finally:
            self._queue.put(None)


def open_output(output: str | os.PathLike[str] | None, fsync: bool = False) -> OutputFile | None:
    """The batch output file at ``output`` (``None``: no file), opened for appending as
    :class:`BatchRun` expects; raises :class:`~hookstream.errors.BatchInputError` for a file that is not a
    batch output, :class:`OSError` for one that cannot be opened."""
    return OutputFile(output, fsync=fsync) if output is not None else None


def batch(
    inputs: Iterable[BatchInput | dict[str, Any]],
    model: str | Provider,
    *,
    settings: RunSettings | None = None,
    output: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | Secret | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    limiter: RateLimiter | None = None,
    fail_fast: bool = False,
    fsync: bool = False,
    runner: RunnerFactory | None = None,
    **fields: Any,
) -> BatchRun:
    """Run one chat per input on ``concurrency`` threads; iterate the result for
    :class:`BatchResult` objects as they finish (completion order, not input order).

    ``inputs`` are ``{"id": str, "prompt": str}`` or ``{"id": str, "messages": [...]}`` dicts (or
    :class:`~hookstream.BatchInput`), read lazily; ids must be unique. ``model`` is
    ``"PROVIDER:MODEL"`` (with ``base_url``/``api_key`` as in :func:`hookstream.get_model`) or a
    provider object; the rate limits need the former, since they work through the session the batch
    builds. ``output`` is a JSON Lines file: each result is appended as one line the moment it
    finishes, ids already in it are skipped (not yielded), and a line cut by a crash is truncated
    first (``fsync=True`` flushes each line to disk; see ``docs/batch.md``).

    How each chat goes is a :class:`~hookstream.RunSettings`, as for :func:`hookstream.chat`: pass one
    as ``settings`` and/or its fields as keywords (``tools``, ``system``, ``max_steps``,
    ``max_tokens``, ``temperature``, ``options``, ``timeouts``, ``loop``, ``plugins``...), which replace
    the settings' own. Structured output goes in ``settings=RunSettings(output=...)``: ``output`` here
    is the results file.

    ``rpm``/``tpm`` cap requests and tokens per minute over all threads, held over every 10-second
    window (or pass a shared ``limiter``); any HTTP 429 pauses all threads until its ``Retry-After``.
    ``fail_fast`` stops at the first result with an ``error`` (it is still written and yielded).
    ``runner`` builds what runs the chats from the batch's :class:`BatchJob` (:data:`RunnerFactory`;
    default :meth:`ChatRunner.from_job`, threads of this process; ``hookstream_ray.RayRunner()`` runs
    them in Ray worker processes).

    Raises :class:`TypeError` for an unknown keyword or a field of the wrong type; :class:`ValueError`
    for ``concurrency`` below 1, a cap below 1, ``max_steps`` below 1, or caps with a provider object;
    :class:`~hookstream.errors.BatchInputError` (while iterating) for a bad input or a repeated id, or (at
    once) for an output file that is not a result file; and what ``runner`` raises. A failing chat
    does not raise: its line carries ``error``.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if limiter is not None and (rpm is not None or tpm is not None):
        raise ValueError("give either limiter= or rpm=/tpm=, not both")
    RateLimiter(rpm, tpm)  # the caps' errors, before a runner starts anything
    job = BatchJob(model=model, settings=RunSettings.of(settings, **fields), base_url=base_url, api_key=api_key,
                   concurrency=concurrency, rpm=rpm, tpm=tpm, limiter=limiter)
    out = open_output(output, fsync)  # a bad output file fails before a runner starts processes
    try:
        chats = (runner or ChatRunner.from_job)(job)
    except BaseException:
        if out is not None:
            out.close()
        raise
    return BatchRun(inputs, chats, limiter=getattr(chats, "limiter", None), output=out, concurrency=concurrency,
                    fail_fast=fail_fast)
