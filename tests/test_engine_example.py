"""docs/examples/approval_chat.py runs against a loopback OpenAI server with the terminal answered."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from types import ModuleType

import pytest
from engine_kit import body_messages, text_body, tool_body
from hookstream.testing import LoopbackServer, Response

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "approval_chat.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("approval_chat_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("answer", "result"), [("y", "deleted /tmp/old.log"), ("n", "Denied")])
def test_approval_chat_asks_on_the_terminal(answer: str, result: str) -> None:
    example = load()
    answers = iter(["clean up /tmp/old.log", answer, ""])
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    out = io.StringIO()
    responses = [Response(tool_body(("c1", "delete_file", {"path": "/tmp/old.log"}))),
                 Response(text_body("All done."))]
    with LoopbackServer(responses) as srv:
        code = example.main(["--model", "openai:gpt-4o-mini", "--base-url", srv.url + "/v1"], read=read, out=out)
    assert code == 0
    assert prompts == ["you> ", "approve? [y/N] ", "you> "]
    assert '[tool] delete_file({"path": "/tmp/old.log"})' in out.getvalue()
    assert "assistant> All done." in out.getvalue()
    tool_msg = next(m for m in body_messages(srv.requests[1]) if m["role"] == "tool")
    assert tool_msg["content"].startswith(result)
