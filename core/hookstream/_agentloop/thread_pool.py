"""Daemon threads reused across tool calls and tool phases, instead of a new thread for each.

Starting a :class:`threading.Thread` waits until the new thread has run (``start`` blocks on its
``started`` event); with many runs at once in a server that is two hand-offs of the GIL per tool call
queued behind every busy thread. An idle thread of this pool takes the next job at once, and a new
thread starts only when every thread is busy, so a tool that is abandoned (cancelled, past its time
limit) keeps its thread and never holds up another call. The threads are daemons, as the tool threads
were: an abandoned tool cannot keep the interpreter from exiting. A thread idle for
:data:`IDLE_SECONDS` ends.

Thread safety: :data:`POOL` is shared by every thread of the process; a forked child (a gunicorn worker)
starts its own threads, none of its parent's.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_NAME", "IDLE_SECONDS", "POOL", "DaemonThreadPool"]

IDLE_SECONDS = 60.0
"""Seconds a pool thread waits for another job before it ends."""
IDLE_NAME = "hookstream-idle"
"""The name of a pool thread waiting for a job (a thread leak check counts the others)."""


class DaemonThreadPool:
    """Runs each submitted job on an idle daemon thread, or on a new one when none is idle."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], str]] = queue.SimpleQueue()
        self._idle = 0
        self._pid = os.getpid()

    def submit(self, job: Callable[[], Any], name: str) -> None:
        """Run ``job()`` on a pool thread named ``name`` while it runs; returns at once. An exception
        ``job`` raises ends the job only (``job`` should report its own failures)."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's idle threads do not exist here
                self._pid, self._idle, self._jobs = os.getpid(), 0, queue.SimpleQueue()
            if self._idle:
                self._idle -= 1
                self._jobs.put((job, name))
                return
        threading.Thread(target=self._work, args=(job, name), name=name, daemon=True).start()

    def _work(self, job: Callable[[], Any], name: str) -> None:
        thread = threading.current_thread()
        while True:
            thread.name = name
            try:
                job()
            except Exception:  # the job reports its own failures; the thread goes on
                pass
            thread.name = IDLE_NAME
            with self._lock:
                self._idle += 1
                jobs = self._jobs
            try:
                job, name = jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    # A job put while this thread gave up waiting is taken now, not lost.
                    if jobs is self._jobs and not jobs.empty():
                        job, name = jobs.get()
                        continue
                    self._idle -= 1
                return


POOL = DaemonThreadPool()
"""The process's pool for tool calls (:func:`hookstream._agentloop.tools.run_tool_guarded`) and tool
phases."""
