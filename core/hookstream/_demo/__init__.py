"""The offline demo: a real two-step, tool-calling chat played on a loopback server.

Step 1's bundled response (written by us in OpenAI Chat Completions wire format, with the same quirks
as real streams: arguments split mid-token, a usage chunk with ``choices: []``, ``[DONE]``) asks for two
tool calls in parallel. The engine runs the two real Python tools below on parallel threads. The
server then checks that the second request carries the assistant tool-call message and both tool
results with matching ``tool_call_id`` s (answering 400 otherwise), and streams the final answer.
Each SSE event is its own HTTP chunk, ``delay`` seconds apart, so the answer streams live.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from importlib import resources
from typing import Any

from .._chat import ChatStream, chat, get_model
from .._stream.loopback import CapturedRequest, LoopbackServer, Response

__all__ = ["PROMPT", "convert_currency", "demo_stream", "get_weather"]

PROMPT = "What's the weather in Paris right now, and how much is 250 EUR in Japanese yen?"
MODEL = "openai:gpt-4o-mini"

_WEATHER = {"paris": {"city": "Paris", "temperature_c": 18, "conditions": "partly cloudy", "wind": "light, W"}}
_RATES = {("EUR", "JPY"): 162.30, ("EUR", "USD"): 1.08, ("USD", "JPY"): 150.28}

tool_log: list[tuple[str, str, float, float]] = []
"""(tool, thread name, start, end) of every demo tool run, in monotonic seconds: shows the parallelism."""
_log_lock = threading.Lock()


def _logged(name: str, start: float) -> None:
    with _log_lock:
        tool_log.append((name, threading.current_thread().name, start, time.monotonic()))


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Paris".
    """
    start = time.monotonic()
    time.sleep(0.2)  # a real lookup takes a moment; the two tools overlap on their threads
    report = _WEATHER.get(city.lower(), {"city": city, "temperature_c": None, "conditions": "unknown"})
    _logged("get_weather", start)
    return report


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    """Convert an amount between currencies at the demo's fixed rates.

    Args:
        amount: Amount in from_currency.
        from_currency: ISO 4217 code, e.g. "EUR".
        to_currency: ISO 4217 code, e.g. "JPY".
    """
    start = time.monotonic()
    time.sleep(0.2)
    rate = _RATES[(from_currency.upper(), to_currency.upper())]
    _logged("convert_currency", start)
    return {"amount": amount, "from": from_currency, "to": to_currency, "rate": rate,
            "converted": round(amount * rate, 2)}


def _events(body: bytes) -> list[bytes]:
    # One SSE event per HTTP chunk, as real providers send them.
    return [e + b"\n\n" for e in body.split(b"\n\n") if e]


def _body(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


def check_request(index: int, request: CapturedRequest) -> str | None:
    """The loopback server's check: None when request ``index`` is right, else what is wrong."""
    body = request.json()
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return "request body has no messages"
    names = sorted(t.get("function", {}).get("name", "") for t in body.get("tools", []))
    if names != ["convert_currency", "get_weather"]:
        return f"expected the two demo tools, got {names}"
    if index == 0:
        return None
    msgs = body["messages"]
    assistant = [m for m in msgs if m.get("role") == "assistant" and m.get("tool_calls")]
    if len(assistant) != 1:
        return "second request must carry the assistant tool-call message"
    call_ids = [c["id"] for c in assistant[0]["tool_calls"]]
    if call_ids != ["call_hsdemo_weather01", "call_hsdemo_currency02"]:
        return f"assistant tool calls have ids {call_ids}"
    results = {m.get("tool_call_id"): m.get("content") for m in msgs if m.get("role") == "tool"}
    if sorted(results) != sorted(call_ids):
        return f"tool results answer {sorted(k or '' for k in results)}, not {sorted(call_ids)}"
    if msgs.index(assistant[0]) > min(i for i, m in enumerate(msgs) if m.get("role") == "tool"):
        return "tool results must follow the assistant tool-call message"
    weather, money = (_json_or_text(results[k]) for k in ("call_hsdemo_weather01", "call_hsdemo_currency02"))
    if not isinstance(weather, dict) or weather.get("city") != "Paris":
        return f"weather result is {weather!r}"
    if not isinstance(money, dict) or money.get("converted") != 40575.0:
        return f"currency result is {money!r}"
    return None


def _json_or_text(content: Any) -> Any:
    """A tool result's content as JSON, or the text itself (a denial: ``Denied: ...``)."""
    try:
        return json.loads(content or "null")
    except (TypeError, ValueError):
        return content


def demo_stream(
    server: LoopbackServer | None = None, *, delay: float = 0.03, observers: Iterable[Any] | None = None
) -> tuple[LoopbackServer, ChatStream]:
    """Start the demo's loopback server (unless given) and return it with the run's ChatStream.

    ``delay`` is seconds between SSE events; ``observers`` are passed to ``chat`` (run observers on top
    of the installed plugins' ones). The caller stops the server when done.
    """
    if server is None:
        server = LoopbackServer(
            [Response(pieces=_events(_body("step1.sse")), delay=delay),
             Response(pieces=_events(_body("step2.sse")), delay=delay)],
            check=check_request,
        ).start()
    provider = get_model(MODEL, base_url=server.url + "/v1", api_key="demo-key")
    stream = chat(provider, PROMPT, tools=[get_weather, convert_currency], max_steps=4, observers=observers)
    return server, stream
