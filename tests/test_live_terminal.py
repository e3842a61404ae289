"""The live terminal renderer (rich) on the demo run: Markdown, tool results, y/n approval, plain text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")

from hookstream import _demo as demo
from hookstream import chat, get_model, tool
from hookstream import events as E
from hookstream._cli.live import LiveRenderer, _MarkdownTail, render_live
from hookstream._cli.render import render_text
from hookstream.testing import LoopbackServer, Response


def demo_server() -> LoopbackServer:
    return LoopbackServer([Response(pieces=demo._events(demo._body("step1.sse"))),
                           Response(pieces=demo._events(demo._body("step2.sse")))],
                          check=demo.check_request).start()


def test_terminal_rendering_with_approval() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    renderer = LiveRenderer(console, stdin=io.StringIO("y\n"))
    server = demo_server()
    try:
        tools = [demo.get_weather, tool(demo.convert_currency, needs_approval=True)]
        stream = chat(get_model(demo.MODEL, base_url=server.url + "/v1", api_key="k"), demo.PROMPT, tools=tools,
                      approve=renderer.approve)
        code = renderer.render(stream)
    finally:
        server.stop()
    text = out.getvalue()
    assert code == 0
    assert "Run tool convert_currency" in text          # the y/n prompt
    assert "✓ get_weather" in text and "✓ convert_currency" in text
    assert "40,575 JPY" in text and "In Paris it is 18" in text   # Markdown rendered: no ** in the final text


def test_plain_text_when_not_a_terminal() -> None:
    out = io.StringIO()
    server = demo_server()
    try:
        stream = chat(get_model(demo.MODEL, base_url=server.url + "/v1", api_key="k"), demo.PROMPT,
                      tools=[demo.get_weather, demo.convert_currency])
        code = render_live(stream, Console(file=out))
    finally:
        server.stop()
    text = out.getvalue()
    assert code == 0
    assert "[tool call] get_weather" in text and "[tool result] convert_currency" in text
    assert "In **Paris** it is 18" in text


def test_markdown_tail_commits_blocks_outside_code_fences() -> None:
    tail = _MarkdownTail()
    tail.add("para one\n\n```py\nx = 1\n\ny = 2\n")
    assert tail.take_done() == "para one"
    tail.add("```\n\nafter")
    assert tail.take_done() == "```py\nx = 1\n\ny = 2\n```"
    assert tail.take_all() == "after"

def test_text_output_names_the_repaired_call(capsys: pytest.CaptureFixture[str]) -> None:
    render_text([E.RunStarted("t", "r"), E.ToolCallStart("c1", "addition"), E.ToolCallArgs("c1", '{"x": "40"}'),
                 E.ToolCallEnd("c1"),
                 E.Custom("tool-call-repaired", {"toolCallId": "c1", "toolName": "add", "input": {"a": 40, "b": 2}}),
                 E.ToolCallResult("toolres_c1", "c1", "42"), E.RunFinished("t", "r")])
    out = capsys.readouterr().out
    assert "[tool call repaired] add (c1)" in out
