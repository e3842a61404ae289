"""Tools that fail: each gives the model a clear error result and the run goes on to the next step.

Real loopback server, real adapters: step 1 asks for ``get_weather``; the faulty tool runs; the request
of step 2 must carry an error tool result; step 2's text ends the run with RUN_FINISHED.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from faultkit import open_sockets, running_threads, settle
from hookstream import chat, get_model, get_registry, tool
from hookstream.events import RunFinished, ToolCallResult
from hookstream.testing import check_events
from hookstream.testing.faults import FaultServer
from hookstream.testing.provider_bodies import final_stream

PROVIDERS = ("openai", "anthropic")
TEN_MB = 10 * 1024 * 1024


def _raises(city: str, unit: str = "celsius", note: str = "") -> str:
    raise RuntimeError(f"weather service down for {city}")


def _not_json(city: str, unit: str = "celsius", note: str = "") -> Any:
    return {"when": object()}


def _huge(city: str, unit: str = "celsius", note: str = "") -> str:
    return "y" * TEN_MB


_release = threading.Event()
_returned = threading.Event()


def _hangs(city: str, unit: str = "celsius", note: str = "") -> str:
    _release.wait(30)  # released only after the run; 30 s only keeps a broken test from hanging
    _returned.set()
    return "too late"


FAULTY = {
    "raises": (_raises, None, "RuntimeError"),
    "not_json": (_not_json, None, "JSON"),
    "hangs": (_hangs, 0.3, "timed out"),
    "huge": (_huge, None, None),
}


def _tool_result_text(request_json: dict[str, Any], provider: str) -> str:
    """The tool result text the second request sends back to the model."""
    if provider == "anthropic":
        for m in request_json["messages"]:
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    return content if isinstance(content, str) else str(content)
    for m in request_json["messages"]:
        if m.get("role") == "tool":
            return str(m.get("content"))
    raise AssertionError(f"no tool result in the second request: {request_json!r}"[:500])


@pytest.mark.parametrize("kind", list(FAULTY))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_faulty_tool_gives_error_result_and_run_goes_on(provider: str, kind: str) -> None:
    if provider not in get_registry().names("providers"):
        pytest.skip(f"provider {provider!r} is not installed")
    fn, timeout, expected = FAULTY[kind]
    t = tool(fn, name="get_weather", timeout=timeout)
    threads0, sockets0 = running_threads(), open_sockets()
    _release.clear()
    _returned.clear()
    try:
        with FaultServer(provider, "none") as srv:
            stream = chat(get_model(f"{provider}:fault-model", base_url=srv.base_url, api_key="k"),
                          "weather?", tools=[t])
            events = list(stream)
            second = srv.requests[1].json() if len(srv.requests) > 1 else None
        returned_before_run_ended = _returned.is_set()
    finally:
        _release.set()
    check_events(events, form="run")
    assert isinstance(events[-1], RunFinished), events[-1]
    assert stream.result().text == final_stream(provider).text
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert len(results) == 1
    assert second is not None, "the run did not call the model again"
    sent = _tool_result_text(second, provider)
    if kind == "huge":
        # Either a clear error or the output bounded: never 10 MB pushed into the next request silently.
        assert len(sent) < TEN_MB
        assert results[0].error is not None or "truncat" in sent.lower()
    else:
        assert results[0].error is not None, "a failed tool must give an error result"
        assert expected is not None and expected in results[0].content and expected in sent
    if kind == "hangs":
        assert not returned_before_run_ended, "the tool timeout did not stop the wait"
    settle(threads0, sockets0)
