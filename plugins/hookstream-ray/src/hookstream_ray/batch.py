"""Batch runs on a Ray cluster (``hookstream batch --ray``): the chats run as Ray actor tasks in worker
processes spread over the cluster's nodes, under one rate limiter that a Ray actor holds.

:class:`RayRunner` is a runner factory for :func:`hookstream.batch` (``batch(..., runner=RayRunner())``);
:func:`batch` is the same call with the Ray options as keywords. The driver (the process that calls
:func:`hookstream.batch`) is hookstream's own :class:`hookstream.BatchRun`:
it reads the inputs, skips the ids already in the output file, writes each result as one whole line,
stops on ``fail_fast``, and shows progress, exactly as a batch on threads does, so the output file is
the same. Only where each chat runs changes: ``concurrency`` driver threads each hand one input at a
time to a worker actor (``workers`` of them, ``scheduling_strategy="SPREAD"``), which runs it with a
:class:`hookstream.plugin.ChatRunner` on one of its threads and returns the
:class:`~hookstream.BatchResult`.

Rate limits across processes: with ``rpm`` or ``tpm``, every HTTP request of every worker first asks
the limiter actor (a :class:`~hookstream.RateLimiter` in one process, so its sliding window sees every
request of the cluster) for a permit, one actor call (a loopback round trip on one machine, a network
one across machines), so at very high rates the limiter actor, not the provider, bounds requests per
second; token counts are settled with one more call when ``tpm`` is set. A 429 in any worker pauses
the limiter, which passes the pause on to every worker, so all of them wait out its ``Retry-After``;
without caps that is all the limiter does, and requests cost no actor call. The limiter counts a 429
in :attr:`RemoteLimiter.pauses` once every worker process holds its pause (each worker notes it on a
thread of its own, so a pause never queues behind chats): from then on, only a request already past
its limiter check in some worker thread (at most one per thread) can still go out before the pause
ends.

API key: taken from ``api_key``, else the driver's environment (the provider's variable, such as
``OPENAI_API_KEY``), else the driver's stored key (``hookstream keys set``), and handed to the worker
actors as a constructor argument in a wrapper whose ``repr`` is masked; it is never put in a
``runtime_env`` (Ray's dashboard and state API show those).

Tools: module-level functions, pickled by reference, so the workers must be able to import them;
functions of a module under the driver's current directory (``--tool mytools:search`` run next to
``mytools.py``) are pickled by value instead, since worker processes do not start in that directory.

Leaving early: :meth:`BatchRun.stop`, ``break`` or Ctrl-C stop every worker's chats (they get no line
and run again next time); when the driver process dies, Ray ends its actors with it.

Thread safety: as :class:`hookstream.BatchRun`.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import hookstream
from hookstream import BatchInput, BatchResult, BatchRun, RateLimiter, RunSettings, Tool, get_registry
from hookstream.plugin import BatchJob, ChatRunner, Permit, Secret

__all__ = ["DEFAULT_MARGIN", "RayBatchRunner", "RayRunner", "RemoteLimiter", "batch"]

DEFAULT_MARGIN = 0.25
"""Seconds a request stays counted past the limiter's window (:class:`~hookstream.RateLimiter`'s
``margin``): admission and the provider's arrival are a process hop and a network apart. Measured on the
loopback two-node test cluster, their gap varied by up to 0.2 s between a worker's first request and
later ones, which put 43 requests in one 10-second window at a cap of 40 without it."""

_MAX_WAIT = 0.5  # seconds a worker sleeps between permit requests at most: bounds how late a stop is seen
_PAUSE_GROUP = "pause"  # the worker actors' concurrency group that notes pauses, apart from chats and close
# Seconds the limiter waits for the workers to note a pause at most: a dead worker fails at once, so only
# a hung one (a stopped process) costs this; the pause then counts without it.
_ACK_LIMIT = 30.0


class _SealedKey:
    """An API key on its way to a worker process: pickles (a :class:`Secret` refuses to), never shows
    itself in a repr."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "_SealedKey('***')"


class LimiterActor:
    """The body of the limiter actor: a :class:`~hookstream.RateLimiter` whose permits are kept here
    and named by number (a :class:`~hookstream.plugin.Permit` is compared by identity, so it cannot
    travel to another process and back)."""

    def __init__(self, rpm: float | None, tpm: float | None, window: float, margin: float) -> None:
        self._limiter = RateLimiter(rpm, tpm, window=window, margin=margin)
        self._permits: dict[int, Permit] = {}
        self._ids = itertools.count(1)
        self._workers: list[Any] = []
        self._pauses = 0

    def add_workers(self, workers: list[Any]) -> None:
        """The worker actors a 429's pause is passed on to."""
        self._workers.extend(workers)

    def try_acquire(self, tokens: int) -> tuple[int | None, float]:
        """``(permit number, 0)`` when admitted, else ``(None, seconds to wait)``."""
        got = self._limiter.try_acquire(tokens)
        if not isinstance(got, Permit):
            return None, got
        number = next(self._ids)
        self._permits[number] = got
        if len(self._permits) > 4096:
            self._forget_old(got.time)
        return number, 0.0

    def _forget_old(self, now: float) -> None:
        # A permit out of the window no longer counts: settling it would change nothing. Permits whose
        # request reported no usage are never settled; this keeps them from piling up.
        old = [n for n, p in self._permits.items() if p.time <= now - self._limiter.window - self._limiter.margin]
        for n in old:
            del self._permits[n]

    def settle(self, number: int, tokens: int) -> None:
        permit = self._permits.pop(number, None)
        if permit is not None:
            self._limiter.settle(permit, tokens)

    def pause(self, seconds: float) -> None:
        """Pause the limiter for ``seconds`` and every worker with it; returns once each worker has
        noted the pause (a dead worker is skipped), and only then counts it in :meth:`stats`."""
        self._limiter.pause(seconds)
        import ray

        # Workers without caps do not ask per request: tell them, in their own concurrency group so the
        # note never waits for a thread busy with a chat (whose next permit would wait for this call).
        notes = [w.note_pause.options(concurrency_group=_PAUSE_GROUP).remote(seconds) for w in self._workers]
        if notes:
            ray.wait(notes, num_returns=len(notes), timeout=_ACK_LIMIT)  # a failed note is ready too
        self._pauses += 1

    def stats(self) -> tuple[int, int, int]:
        """``(pauses every worker holds, requests in the window, tokens in the window)``."""
        requests, tokens = self._limiter.usage()
        return self._pauses, requests, tokens


class RemoteLimiter:
    """A worker's (or the driver's) handle on the limiter actor, with the
    :class:`hookstream.plugin.Limiter` methods; ``rpm``/``tpm`` are the caps the actor holds.

    Thread safety: shared by all threads of a process (Ray actor handles are thread-safe).
    """

    def __init__(self, actor: Any, rpm: float | None, tpm: float | None) -> None:
        self._actor, self.rpm, self.tpm = actor, rpm, tpm
        self._final: tuple[int, int, int] | None = None
        self._paused_until = 0.0  # time.monotonic() of this process

    @property
    def actor(self) -> Any:
        return self._actor

    def _stats(self) -> tuple[int, int, int]:
        if self._final is not None:
            return self._final
        import ray

        pauses, requests, tokens = ray.get(self._actor.stats.remote())
        return int(pauses), int(requests), int(tokens)

    def freeze(self) -> None:
        """Keep the actor's last figures (``pauses``, ``usage()``) before the actor is stopped."""
        try:
            self._final = self._stats()
        except Exception:  # the actor is gone already: keep what was known
            self._final = self._final or (0, 0, 0)

    def acquire(self, tokens: int = 0, *, cancelled: threading.Event | None = None) -> int | None:
        """Block until a request of ``tokens`` estimated tokens may be sent: its permit number (0 without
        caps, when nothing is asked of the actor), or ``None`` when ``cancelled`` was set while waiting.

        Without caps only a 429's pause can hold a request, and the actor passes each pause on to every
        worker (:meth:`note_pause`), so no request costs an actor call; with caps each one asks."""
        while (wait := self._paused_until - time.monotonic()) > 0:
            if self._sleep(wait, cancelled):
                return None
        if self.rpm is None and self.tpm is None:
            return 0
        import ray

        while True:
            number, wait = ray.get(self._actor.try_acquire.remote(max(0, tokens)))
            if number is not None:
                return int(number)
            if self._sleep(wait, cancelled):
                return None

    @staticmethod
    def _sleep(seconds: float, cancelled: threading.Event | None) -> bool:
        """Sleep up to ``seconds`` (at most :data:`_MAX_WAIT`); whether ``cancelled`` was set."""
        if cancelled is None:
            threading.Event().wait(min(seconds, _MAX_WAIT))
            return False
        return cancelled.wait(min(seconds, _MAX_WAIT))

    def settle(self, permit: int, tokens: int) -> None:
        if permit and self.tpm is not None:  # request counts need no settling
            self._actor.settle.remote(permit, tokens)  # no reply needed: later requests see it in order

    def pause(self, seconds: float) -> None:
        self.note_pause(seconds)
        self._actor.pause.remote(seconds)

    def note_pause(self, seconds: float) -> None:
        """Hold this process's requests for ``seconds`` from now (a 429 seen by any worker)."""
        self._paused_until = max(self._paused_until, time.monotonic() + max(0.0, seconds))

    @property
    def pauses(self) -> int:
        """How many 429s paused the limiter, each counted once every worker process holds its pause
        (asks the actor; after the batch closed, its last figure)."""
        return self._stats()[0]

    def usage(self) -> tuple[int, int]:
        """Requests and tokens inside the limiter's current window (as :attr:`pauses`)."""
        _, requests, tokens = self._stats()
        return requests, tokens

    def __repr__(self) -> str:
        return f"RemoteLimiter(rpm={self.rpm}, tpm={self.tpm})"


class ChatWorker:
    """The body of a worker actor: one :class:`hookstream.plugin.ChatRunner` whose :meth:`run` is
    called from up to ``threads`` actor threads at once."""

    def __init__(self, model: str, limiter: RemoteLimiter, base_url: str | None, key: _SealedKey | None,
                 threads: int, first_output_estimate: int, settings: RunSettings) -> None:
        api_key = Secret(key.value) if key is not None else None
        self._limiter = limiter
        self._runner = ChatRunner(model, limiter, base_url=base_url, api_key=api_key, pool_size=threads,
                                  first_output_estimate=first_output_estimate, settings=settings)

    def node(self) -> str:
        """The id of the Ray node this worker runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def run(self, item: BatchInput) -> BatchResult | None:
        return self._runner.run(item)

    def stop(self) -> None:
        self._runner.stop()

    def note_pause(self, seconds: float) -> None:
        """Called by the limiter actor in the ``"pause"`` concurrency group (one thread of its own)."""
        self._limiter.note_pause(seconds)

    def close(self) -> None:
        self._runner.close()


class RayBatchRunner:
    """The driver's side of a Ray batch: hands each input to a worker actor and waits for its result.

    Each driver thread is bound to one worker (thread ``i`` to worker ``i % workers``), so a worker never
    gets more chats at once than it has threads. ``nodes`` lists the node id of each worker; ``limiter``
    is the driver's handle on the limiter actor (the batch's :attr:`~hookstream.BatchRun.limiter`).
    Thread safety: :meth:`run` from many threads; :meth:`stop` from any thread.
    """

    def __init__(self, workers: list[Any], owns_ray: bool, limiter: RemoteLimiter) -> None:
        ray = self._ray = _ray()
        self._workers = workers
        self._owns_ray = owns_ray
        self.limiter = limiter
        self._stopped = threading.Event()
        self._local = threading.local()
        self._next = itertools.count()
        self.nodes: list[str] = ray.get([w.node.remote() for w in workers])

    def run(self, item: BatchInput) -> BatchResult | None:
        if self._stopped.is_set():
            return None
        index = getattr(self._local, "worker", None)
        if index is None:
            index = self._local.worker = next(self._next) % len(self._workers)
        try:
            result: BatchResult | None = self._ray.get(self._workers[index].run.remote(item))
        except Exception as exc:  # the worker process or its node died: this chat has no answer
            if self._stopped.is_set():
                return None
            message = f"Ray worker failed: {type(exc).__name__}: {_last_line(exc)}"
            return BatchResult(item.id, error={"code": "worker_error", "message": message})
        return result

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        for w in self._workers:
            try:
                w.stop.remote()
            except Exception:  # a dead worker has nothing left to stop
                pass

    def close(self) -> None:
        ray = self._ray
        try:
            ray.wait([w.close.remote() for w in self._workers], num_returns=len(self._workers), timeout=10)
        except Exception:  # dead workers: their connections died with them
            pass
        self.limiter.freeze()
        for actor in [*self._workers, self.limiter.actor]:
            try:
                ray.kill(actor)
            except Exception:
                pass
        if self._owns_ray:
            ray.shutdown()


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from hookstream.plugin import install_command

        raise ImportError(f"a Ray batch needs Ray: {install_command('hookstream-ray[ray]')}") from exc
    return ray


def _last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else ""


def _resolve_key(model: str, api_key: str | Secret | None) -> _SealedKey | None:
    """The key the workers need, from ``api_key`` or the provider's variable in the driver's
    environment (worker processes have the environment of whoever started the cluster)."""
    if isinstance(api_key, Secret):
        return _SealedKey(api_key.reveal())
    if api_key is not None:
        return _SealedKey(api_key)
    value = get_registry().provider(model.partition(":")[0]).default_api_key()  # environment, else stored key
    if isinstance(value, Secret):
        value = value.reveal()
    return _SealedKey(value) if value else None


def _worker_options(ray: Any, spec: dict[str, Any], workers: int) -> list[dict[str, Any]]:
    """Each worker's actor options: on the alive nodes in turn, unless the caller chose a strategy.
    Ray's ``SPREAD`` and soft node affinity both put actors that reserve no CPU on one node (measured
    with Ray 2.60), so the affinity is hard; the nodes are those alive when the batch starts."""
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    if "scheduling_strategy" in spec or not nodes:
        return [spec] * workers
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return [{**spec, "scheduling_strategy": NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False)}
            for i in range(workers)]


def _ship_local_tools(tools: Iterable[Any] | None) -> None:
    """Pickle tools from modules under the current directory by value (workers cannot import them)."""
    cloudpickle: Any = _ray().cloudpickle
    cwd = Path.cwd().resolve()
    for t in tools or ():
        fn = t.fn if isinstance(t, Tool) else t
        module = sys.modules.get(getattr(fn, "__module__", "") or "")
        path = getattr(module, "__file__", None)
        if module is not None and path and Path(path).resolve().is_relative_to(cwd):
            cloudpickle.register_pickle_by_value(module)


@attrs.define(slots=True, kw_only=True)
class RayRunner:
    """A runner factory for :func:`hookstream.batch` (``runner=RayRunner(...)``): the batch's chats run
    in worker processes (Ray actors) spread over a Ray cluster; the inputs, output file, resume, results
    and errors are those of a batch on threads.

    ``address`` is passed to ``ray.init`` (``None``: ``RAY_ADDRESS``, else a cluster running on this
    machine, else a new local one, shut down when the batch closes); ``init_options`` are more
    ``ray.init`` keyword arguments. ``workers`` is the number of worker processes (actors; ``None``:
    one per CPU of the cluster, at most the batch's ``concurrency``), spread over the nodes;
    ``worker_options`` are their Ray actor options (default ``num_cpus=0``: a chat mostly waits on the
    network, so workers do not reserve cores; give ``{"num_cpus": 1}`` to reserve one each). The batch's
    ``concurrency`` is the number of chats at once over all workers (each worker runs
    ``ceil(concurrency / workers)`` threads). Its ``rpm``/``tpm`` cap requests and tokens per minute
    over the whole cluster, over every ``window``-second window, each request counted ``margin`` seconds
    longer (:data:`DEFAULT_MARGIN`). ``notes``, when given, gets the line
    ``"ray: N worker processes on M nodes"`` once the workers run (``hookstream batch`` prints it).

    Called with the batch's :class:`hookstream.plugin.BatchJob`, it starts the workers and returns the
    :class:`RayBatchRunner`. Raises :class:`ValueError` for ``workers`` below 1, a model that is not
    ``"PROVIDER:MODEL"`` or a shared ``limiter`` (the caps must be ``rpm``/``tpm``); :class:`ImportError`
    without Ray (``pip install 'hookstream-ray[ray]'``); :class:`ConnectionError` for a cluster
    ``ray.init`` cannot reach.
    """

    address: str | None = None
    workers: int | None = None
    init_options: Mapping[str, Any] | None = None
    worker_options: Mapping[str, Any] | None = None
    window: float = 10.0
    margin: float = DEFAULT_MARGIN
    notes: list[str] | None = None

    def __attrs_post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")

    def __call__(self, job: BatchJob) -> RayBatchRunner:
        model = job.model
        if not isinstance(model, str):
            raise ValueError("a Ray batch needs model as 'PROVIDER:MODEL' (each worker builds its own provider)")
        if job.limiter is not None:
            raise ValueError("a Ray batch takes rpm=/tpm= (its limiter is a Ray actor), not limiter=")
        RateLimiter(job.rpm, job.tpm, window=self.window, margin=self.margin)  # the caps' errors, before Ray
        get_registry().provider(model.partition(":")[0])  # an unknown provider fails here, not in each worker
        key = _resolve_key(model, job.api_key)
        ray = _ray()
        owns_ray = False
        actors: list[Any] = []
        try:
            if not ray.is_initialized():
                try:
                    ray.init(address=self.address, **{"log_to_driver": False, **(self.init_options or {})})
                except ConnectionError as exc:
                    raise ConnectionError(f"cannot reach the Ray cluster: {exc}") from exc
                owns_ray = True
            runner = self._start(ray, job, model, key, owns_ray, actors)
        except BaseException:
            for actor in actors:
                try:
                    ray.kill(actor)
                except Exception:
                    pass
            if owns_ray:
                ray.shutdown()
            raise
        if self.notes is not None:
            self.notes.append(f"ray: {len(runner.nodes)} worker processes on {len(set(runner.nodes))} nodes")
        return runner

    def _start(self, ray: Any, job: BatchJob, model: str, key: _SealedKey | None, owns_ray: bool,
               actors: list[Any]) -> RayBatchRunner:
        """The limiter actor and the worker actors (appended to ``actors`` as they start)."""
        _ship_local_tools(job.settings.tools)
        limiter_actor = ray.remote(num_cpus=0)(LimiterActor).remote(job.rpm, job.tpm, self.window, self.margin)
        actors.append(limiter_actor)
        limiter = RemoteLimiter(limiter_actor, job.rpm, job.tpm)
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        workers = min(workers, job.concurrency)
        threads = math.ceil(job.concurrency / workers)
        # One thread more than the driver ever gives a worker at once: stop() must not queue behind chats.
        spec = {"num_cpus": 0, **(self.worker_options or {}), "max_concurrency": threads + 1, "max_restarts": 0}
        worker_cls = ray.remote(concurrency_groups={_PAUSE_GROUP: 1})(ChatWorker)
        pool = [worker_cls.options(**options).remote(model, limiter, job.base_url, key, threads,
                                                      job.first_output_estimate, job.settings)
                for options in _worker_options(ray, spec, workers)]
        actors.extend(pool)
        ray.get(limiter_actor.add_workers.remote(pool))  # before any chat runs, hence before any 429
        return RayBatchRunner(pool, owns_ray, limiter)


def batch(
    inputs: Iterable[BatchInput | dict[str, Any]],
    model: str,
    *,
    address: str | None = None,
    workers: int | None = None,
    init_options: Mapping[str, Any] | None = None,
    worker_options: Mapping[str, Any] | None = None,
    window: float = 10.0,
    margin: float = DEFAULT_MARGIN,
    **batch_options: Any,
) -> BatchRun:
    """:func:`hookstream.batch` with the chats running on a Ray cluster: ``hookstream.batch(inputs,
    model, runner=RayRunner(address=..., workers=..., ...), **batch_options)``. ``batch_options`` are
    :func:`hookstream.batch`'s (``settings``, ``output``, ``base_url``, ``api_key``, ``concurrency``,
    ``rpm``, ``tpm``, ``fail_fast``, ``fsync`` and the :class:`~hookstream.RunSettings` fields); the Ray
    options are :class:`RayRunner`'s. Raises what both raise."""
    runner = RayRunner(address=address, workers=workers, init_options=init_options,
                       worker_options=worker_options, window=window, margin=margin)
    return hookstream.batch(inputs, model, runner=runner, **batch_options)
