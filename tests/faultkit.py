"""Helpers shared by the fault, secrets and soak tests: a tool that records its calls, resource counts
(threads, open TCP sockets) with a settle loop, and one chat run against a FaultServer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psutil
from hookstream import ChatStream, LoopSettings, Timeouts, chat, get_model
from hookstream._agentloop.thread_pool import IDLE_NAME
from hookstream.events import BaseEvent


class RecordingTool:
    """``get_weather(city, unit, note)``: records every call it gets (thread-safe)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, city: str, unit: str = "celsius", note: str = "") -> dict[str, Any]:
        """Current weather for a city.

        Args:
            city: the city name
            unit: celsius or fahrenheit
            note: free text
        """
        with self._lock:
            self.calls.append({"city": city, "unit": unit, "note": note})
        return {"temperature": 18, "unit": unit}


def _named(obj: RecordingTool) -> Callable[..., Any]:
    def get_weather(city: str, unit: str = "celsius", note: str = "") -> dict[str, Any]:
        """Current weather for a city.

        Args:
            city: the city name
            unit: celsius or fahrenheit
            note: free text
        """
        return obj(city, unit, note)

    return get_weather


def recording_tool() -> tuple[RecordingTool, Callable[..., Any]]:
    """(the recorder, a ``get_weather`` function to pass as a tool)."""
    rec = RecordingTool()
    return rec, _named(rec)


def open_sockets() -> int:
    """TCP sockets this process holds that are not yet closed (TIME_WAIT belongs to the kernel)."""
    return sum(1 for c in psutil.Process().net_connections(kind="tcp") if c.status != psutil.CONN_TIME_WAIT)


def running_threads() -> int:
    """Threads of this process, not counting the tool pool's idle ones: they wait for the next tool call
    (and end after a minute unused), so they are not a run's leak; an abandoned tool's thread counts."""
    return sum(1 for t in threading.enumerate() if t.name != IDLE_NAME)


def settle(baseline_threads: int, baseline_sockets: int, timeout: float = 30.0) -> tuple[int, int]:
    """Wait until thread and socket counts fall back to the baselines; return the last counts.

    ``timeout`` only keeps a leak from hanging the test: a clean run returns as soon as the counts are
    back, so a loaded machine makes this slower, never failing."""
    deadline = time.monotonic() + timeout
    while True:
        threads, sockets = running_threads(), open_sockets()
        if (threads <= baseline_threads and sockets <= baseline_sockets) or time.monotonic() > deadline:
            return threads, sockets
        time.sleep(0.02)


def run_chat(
    provider: str,
    base_url: str,
    tools: list[Any],
    *,
    api_key: str = "sk-fault-test",
    read_timeout: float | None = 5.0,
    max_event_bytes: int | None = None,
    prompt: str = "What is the weather in Paris?",
) -> tuple[list[BaseEvent], ChatStream]:
    """One run through the public entry point, ``chat()``."""
    loop = LoopSettings() if max_event_bytes is None else LoopSettings(max_event_bytes=max_event_bytes)
    with get_model(f"{provider}:fault-model", base_url=base_url, api_key=api_key) as model:
        stream = chat(model, prompt, tools=tools, timeouts=Timeouts(read=read_timeout), loop=loop)
        return list(stream), stream
