"""The ``ray`` tool executor: each tool call of a step runs as a Ray task on the cluster.

``ray.init()`` joins the cluster named by ``RAY_ADDRESS`` (or the ``address`` given), else a cluster
already running on this machine, else starts a local one; it is called once, on the first step with a
tool call, unless Ray is initialised already. The task imports the tool from the request's ``ref``
(:class:`hookstream.plugin.ToolCallRequest`), so tools must be module-level functions importable on the
workers (same package installed, or a ``runtime_env`` in ``init_options``).

Resources: a tool's ``resources`` (``@tool(resources={"num_cpus": 2, "num_gpus": 1, "memory": bytes})``;
other keys are custom Ray resources) become the task's options. A request no alive node can ever
satisfy gets an error result at once instead of waiting forever (``check_feasible=False`` leaves that to
Ray, e.g. on an autoscaling cluster, where the tool's time limit then bounds the wait).

Time limits and cancellation: the caller waits for each task on its own thread (``run_calls``), so the
run's observers see ``tool_start``/``tool_end`` there; past the request's time limit, or when the run is
cancelled, the task is stopped with ``ray.cancel(ref, force=True)`` (its worker process is killed; Ray
starts another) and the call gets the error result ``Error: 'name' timed out after N s`` / ``was
cancelled``. A tool that raises, a worker that dies or a task Ray cannot run is an error result too.
Tasks are never retried (``max_retries=0``): a tool call may have side effects.

Thread safety: one executor may be shared between runs and threads; Ray's API is thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hookstream import CancellationToken, ToolResultPart
from hookstream.plugin import ToolCallRequest, error_part, run_calls, run_request

__all__ = ["RayExecutor", "task_options"]

_POLL = 0.02  # seconds between checks of the run's token while a task runs: bounds cancel latency
_OPTION_KEYS = ("num_cpus", "num_gpus", "memory")


def task_options(resources: Mapping[str, float]) -> dict[str, Any]:
    """Ray task options for a tool's ``resources``: ``num_cpus``, ``num_gpus`` and ``memory`` (bytes) as
    they are, any other key as a custom resource; never retried."""
    options: dict[str, Any] = {"max_retries": 0}
    custom = {k: float(v) for k, v in resources.items() if k not in _OPTION_KEYS}
    for key in _OPTION_KEYS:
        if key in resources:
            options[key] = int(resources[key]) if key == "memory" else resources[key]
    if custom:
        options["resources"] = custom
    return options


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from hookstream.plugin import install_command

        raise ImportError(f"executor='ray' needs Ray: {install_command('hookstream-ray[ray]')}") from exc
    return ray


class RayExecutor:
    """Run each tool call as a Ray task; results in call order.

    ``address`` is passed to ``ray.init`` (``None``: ``RAY_ADDRESS``, else a local cluster);
    ``init_options`` are more ``ray.init`` keyword arguments (``runtime_env``, ``namespace``...);
    ``max_concurrency`` bounds the calls waited for at once (``None``: all of a step);
    ``check_feasible`` refuses at once a call no alive node has the resources for.
    """

    def __init__(
        self,
        address: str | None = None,
        init_options: Mapping[str, Any] | None = None,
        max_concurrency: int | None = None,
        check_feasible: bool = True,
    ) -> None:
        self.address = address
        self.init_options = dict(init_options or {})
        self.max_concurrency = max_concurrency
        self.check_feasible = check_feasible
        self._lock = threading.Lock()
        self._task: Any = None

    def run(self, requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]:
        if not requests:
            return []
        try:
            task = self._remote()
        except Exception as exc:
            return [error_part(r, f"Ray is not available: {type(exc).__name__}: {exc}") for r in requests]
        return run_calls(requests, cancel, lambda req, token: self._one(task, req, token), self.max_concurrency)

    def _remote(self) -> Any:
        """The Ray remote function that runs one request; initialises Ray on first use."""
        with self._lock:
            if self._task is None:
                ray = _ray()
                if not ray.is_initialized():
                    # The tools' prints stay in the workers' logs unless asked for: the driver's stdout may be
                    # the stream's consumer.
                    options = {"log_to_driver": False, "ignore_reinit_error": True, **self.init_options}
                    ray.init(address=self.address, **options)
                self._task = ray.remote(run_request)
            return self._task

    def _one(self, task: Any, req: ToolCallRequest, cancel: CancellationToken) -> ToolResultPart:
        ray = _ray()
        if req.ref is None:
            return error_part(req, f"{req.name!r} cannot run on Ray: its function is not importable by name "
                                   "(a closure, lambda or bound method); define it at module level")
        if self.check_feasible:
            problem = _infeasible(ray, req.resources)
            if problem is not None:
                return error_part(req, f"{req.name!r} cannot run on this Ray cluster: {problem}")
        limit = req.remaining()
        deadline = None if limit is None else time.monotonic() + limit
        try:
            ref = task.options(**task_options(req.resources)).remote(req.for_wire())
        except Exception as exc:
            return error_part(req, f"{req.name!r} could not be submitted to Ray: {type(exc).__name__}: {exc}")
        while True:
            wait = _POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))
            done, _ = ray.wait([ref], timeout=wait)
            if done:
                try:
                    result: ToolResultPart = ray.get(ref)
                except Exception as exc:  # a worker that died, a task Ray could not run or deserialise
                    return error_part(req, f"{req.name!r} failed on Ray: {type(exc).__name__}: {_first_line(exc)}")
                return result
            if cancel.cancelled:
                _cancel(ray, ref)
                return error_part(req, f"{req.name!r} was cancelled")
            if deadline is not None and time.monotonic() >= deadline:
                _cancel(ray, ref)
                return error_part(req, f"{req.name!r} timed out after {req.timeout or 0:g} s")


def _cancel(ray: Any, ref: Any) -> None:
    # force=True kills the worker: a tool blocked in C code or a sleep would not see a KeyboardInterrupt.
    try:
        ray.cancel(ref, force=True)
    except Exception:  # already finished or gone: nothing left to stop
        pass


def _infeasible(ray: Any, resources: Mapping[str, float]) -> str | None:
    """Why no alive node can ever run a task with ``resources`` (a readable text), or None."""
    wanted = {"CPU": float(resources.get("num_cpus", 1)), "GPU": float(resources.get("num_gpus", 0)),
              "memory": float(resources.get("memory", 0))}
    wanted.update({k: float(v) for k, v in resources.items() if k not in _OPTION_KEYS})
    wanted = {k: v for k, v in wanted.items() if v > 0}
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if any(all(node.get(k, 0.0) >= v for k, v in wanted.items()) for node in nodes):
        return None
    largest = {k: max((node.get(k, 0.0) for node in nodes), default=0.0) for k in wanted}
    need = ", ".join(f"{k}={v:g}" for k, v in wanted.items())
    have = ", ".join(f"{k}={v:g}" for k, v in largest.items())
    return f"it needs {need} on one node; the largest node offers {have} ({len(nodes)} alive nodes)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else ""
