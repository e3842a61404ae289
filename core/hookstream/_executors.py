"""Tool executors: how the tool calls of one step run. Registered by name through the plugin hook.

An executor is any object with ``run(jobs) -> list`` that runs zero-argument callables and returns
their results in the order of ``jobs`` (call order), whatever order they finish in.

* ``thread`` (default): all jobs in parallel, one thread each.
* ``sequential``: one after another on the caller's thread.
* ``bounded``: in parallel, at most ``max_concurrency`` at once.

Jobs run in a copy of the caller's :mod:`contextvars` context (``contextvars.copy_context().run``), one
copy per job: the run's observers and an OpenTelemetry current span reach the tool threads. An executor
of your own that starts threads should do the same.

Thread safety: executors keep no state between ``run`` calls and may be shared between runs.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

__all__ = ["BoundedExecutor", "SequentialExecutor", "ThreadExecutor", "ToolExecutor"]

T = TypeVar("T")


class ToolExecutor(Protocol):
    def run(self, jobs: Sequence[Callable[[], Any]]) -> list[Any]: ...


class ThreadExecutor:
    """Run every job on its own thread at once; results in call order."""

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.max_concurrency = max_concurrency

    def run(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        if len(jobs) <= 1:
            return [job() for job in jobs]
        workers = min(len(jobs), self.max_concurrency or len(jobs))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hookstream-tool") as pool:
            # A Context may be entered by one thread at a time: each job gets its own copy.
            futures = [pool.submit(contextvars.copy_context().run, job) for job in jobs]
            return [f.result() for f in futures]


class SequentialExecutor:
    """Run jobs one by one on the calling thread."""

    def run(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        return [job() for job in jobs]


class BoundedExecutor(ThreadExecutor):
    """Parallel, with at most ``max_concurrency`` jobs at once (default 4)."""

    def __init__(self, max_concurrency: int = 4) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        super().__init__(max_concurrency)
