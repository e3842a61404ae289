"""``hookstream chat --timing``: the summary on stderr (total, first chunk, tokens per second, each step
and each tool), built on the run observer hook; stdout keeps only the answer. A real loopback OpenAI
server plays a tool-calling step and an answer."""

from __future__ import annotations

import re

from engine_kit import text_body, tool_body
from hookstream.testing import LoopbackServer, Response, run_cli

MODEL = "openai:gpt-4o-mini"
T = r"(\d+ ms|\d+\.\d\d s)"  # a duration as the summary prints it


def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: City name.
    """
    return f"{city}: sunny"


def test_timing_summary_on_stderr() -> None:
    with LoopbackServer([Response(tool_body(("c1", "lookup", {"city": "Oslo"}))),
                         Response(text_body("It is", " sunny."))]) as srv:
        res = run_cli(["chat", "weather?", "--model", MODEL, "--base-url", srv.url + "/v1",
                                        "--tool", "test_cli_timing:lookup", "--timing", "--output", "text"],
                                 env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 0, res.output
    assert "It is sunny." in res.stdout and "timing:" not in res.stdout
    err = res.stderr.splitlines()
    head = next(line for line in err if line.startswith("timing: "))
    assert re.search(rf"{T} in total; first chunk after {T}; [\d.]+ output tokens/s", head), head
    steps = [line for line in err if line.startswith("  step ")]
    assert len(steps) == 2
    assert "chat gpt-4o-mini" in steps[0] and "tool_calls" in steps[0] and "10 in / 5 out tokens" in steps[0]
    assert "stop" in steps[1]
    tools = [line.strip() for line in err if line.startswith("    tool ")]
    assert len(tools) == 1 and re.fullmatch(rf"tool lookup\s+{T}", tools[0]), tools
    # The tool line sits under step 1, before step 2.
    tool_line = next(i for i, line in enumerate(err) if line.startswith("    tool "))
    assert err.index(steps[0]) < tool_line < err.index(steps[1])


def test_no_timing_without_the_flag() -> None:
    with LoopbackServer([Response(text_body("hello"))]) as srv:
        res = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1"],
                                 env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 0, res.output
    assert "timing:" not in res.stderr
