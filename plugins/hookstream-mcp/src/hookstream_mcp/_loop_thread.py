"""A private asyncio event loop on its own daemon thread, so the MCP SDK's async API can serve
hookstream's synchronous callers.

Coroutines are handed over with :func:`asyncio.run_coroutine_threadsafe` (safe from any thread); the
caller waits on the :class:`concurrent.futures.Future` it gets back. :meth:`LoopThread.stop` stops the
loop, cancels what is still pending there and closes it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["LoopThread"]


class LoopThread:
    """One event loop running on one daemon thread named ``name``; started by the constructor."""

    __slots__ = ("_started", "loop", "thread")

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._started.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            # Whatever is left (a tool call still waiting when the server was closed) is cancelled and
            # given one pass to unwind, so no task is destroyed while pending.
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop; thread-safe. Raises RuntimeError once the loop is stopped."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Call ``fn(*args)`` on the loop thread; thread-safe; does nothing once the loop is closed."""
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # closed between the check and the call
                pass

    def stop(self, timeout: float | None = None) -> None:
        """Stop the loop and wait up to ``timeout`` seconds for its thread to end."""
        self.call_soon(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)
