"""The testing kit's demo parts (``demo_server``, ``demo_tools``, ``DEMO_PROMPT``): what the doc samples
use instead of the demo's internals."""

from __future__ import annotations

import pytest

pytest.importorskip("hookstream_openai", reason="the demo recording is played by the hookstream-openai adapter")

from hookstream import chat, get_model
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, DEMO_STEPS, check_events, demo_server, demo_tools


def test_demo_server_plays_both_steps_and_checks_the_second_request() -> None:
    with demo_server() as server, get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="k") as model:
        stream = chat(model, DEMO_PROMPT, tools=demo_tools())
        events = check_events(list(stream), form="run")
    result = stream.result()
    assert result.outcome == "success" and "40,575" in result.text
    assert [e.type for e in events].count("TOOL_CALL_RESULT") == 2
    assert len(server.requests) == 2  # the check answered 200 to both


def test_demo_server_check_refuses_a_request_without_the_demo_tools() -> None:
    with demo_server() as server, get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="k") as model:
        result = chat(model, DEMO_PROMPT).result()
    assert result.outcome == "error" and "two demo tools" in str(result.error)


def test_demo_server_steps_and_no_check() -> None:
    # Only the final answer, no tools offered: with check=False the server does not object.
    with demo_server(steps=["step2"], check=False) as server, \
            get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="k") as model:
        result = chat(model, DEMO_PROMPT).result()
    assert result.outcome == "success" and "40,575" in result.text


def test_demo_tools_approval() -> None:
    weather, currency = demo_tools(approval=True)
    assert (weather.name, currency.name) == ("get_weather", "convert_currency")
    assert not weather.needs_approval and currency.needs_approval
    assert not any(t.needs_approval for t in demo_tools())


@pytest.mark.parametrize("kwargs", [{"steps": ["step3"]}, {"steps": []}, {"delay": -1.0}])
def test_demo_server_rejects_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        demo_server(**kwargs)


def test_steps_are_named() -> None:
    assert DEMO_STEPS == ("step1", "step2")


def test_a_started_server_in_a_with_block_is_not_started_twice() -> None:
    server = demo_server()
    url = server.url
    with server as same:
        assert same is server and same.url == url
