"""``POST /api/chat`` read by the Vercel AI SDK's own client code in Node (the ``ai`` package pinned in
tests/e2e/package.json, installed by scripts/install-browser-deps).

``tests/e2e/ui_chat_check.mjs`` drives a real ``hookstream serve`` subprocess with
``DefaultChatTransport`` and ``readUIMessageStream`` (the demo's UIMessage rebuilt: text and two tool
parts with inputs and outputs, the approval answered in the message form), and with ``AbstractChat``
(what React's ``useChat`` runs) using ``addToolApprovalResponse`` and
``lastAssistantMessageIsCompleteWithApprovalResponses``: against ``serve --demo``, and against
``serve --workers 2 --store sqlite`` with a simulated OpenAI provider, where the provider must receive
a paired history after the approval (or the denial).

Skipped with a message when Node or the package is missing; failed instead when ``CI`` is set.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hookstream.testing.conformance import shared_missing
from serve_kit import serve_demo_process

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
SCRIPT = E2E / "ui_chat_check.mjs"
NODE = shutil.which("node")

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")
pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")


@pytest.fixture(autouse=True)
def _node_and_ai() -> None:
    if NODE is None:
        shared_missing("Node.js not found: install Node 20+, then run scripts/install-browser-deps")
    if not (E2E / "node_modules" / "ai" / "package.json").is_file():
        shared_missing("tests/e2e/node_modules/ai missing: run scripts/install-browser-deps")


def node(*args: str, timeout: float = 90) -> dict[str, Any]:
    assert NODE is not None
    proc = subprocess.run([NODE, str(SCRIPT), *args], cwd=E2E, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"node failed ({proc.returncode}): {proc.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def tools_of(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["type"]: p for p in message["parts"] if p["type"].startswith("tool-")}


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def check_demo_answer(message: dict[str, Any]) -> None:
    """The demo's whole answer: two tool parts with inputs and outputs, two steps, the final text."""
    assert message["role"] == "assistant"
    kinds = [p["type"] for p in message["parts"]]
    assert kinds == ["step-start", "tool-get_weather", "tool-convert_currency", "step-start", "text"], kinds
    tools = tools_of(message)
    weather, money = tools["tool-get_weather"], tools["tool-convert_currency"]
    assert weather["state"] == "output-available"
    assert weather["input"] == {"city": "Paris"}
    assert weather["output"]["city"] == "Paris" and weather["output"]["temperature_c"] == 18
    assert money["state"] == "output-available"
    assert money["input"] == {"amount": 250, "from_currency": "EUR", "to_currency": "JPY"}
    assert money["output"]["converted"] == 40575
    assert money["approval"]["approved"] is True
    assert "40,575 JPY" in text_of(message)
    assert message["metadata"]["hookstream"]["outcome"] == "success"


def test_reader_rebuilds_the_demo_message() -> None:
    with serve_demo_process("--delay", "0") as url:
        out = node(url, "read")
    assert out["errors"] == []
    first = out["first"]
    kinds = [c["type"] for c in first["chunks"]]
    assert kinds[0] == "start" and kinds[-1] == "finish"
    assert "tool-approval-request" in kinds
    assert first["message"]["parts"][2]["state"] == "approval-requested"
    # the request bodies DefaultChatTransport sent
    body1, body2 = out["requests"]
    assert body1["id"] == "chat-read" and body1["trigger"] == "submit-message"
    assert body1["messages"][0]["parts"][0]["type"] == "text"
    assert body2["messages"][1]["parts"][2]["state"] == "approval-responded"
    # the continuation keeps the assistant message's id and completes it
    assert out["message"]["id"] == first["message"]["id"]
    check_demo_answer(out["message"])


def test_use_chat_approval_round_trip_with_the_demo() -> None:
    with serve_demo_process("--delay", "0") as url:
        out = node(url, "approve")
    assert out.get("error") is None, out
    assert out["errors"] == [] and out["status"] == "ready"
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
    asked = out["first"][-1]
    assert tools_of(asked)["tool-convert_currency"]["state"] == "approval-requested"
    # addToolApprovalResponse sent the assistant message back with the answer, as AI SDK 6 does
    sent = out["requests"][1]["messages"][-1]
    answered = tools_of(sent)["tool-convert_currency"]
    assert answered["state"] == "approval-responded" and answered["approval"]["approved"] is True
    check_demo_answer(out["messages"][-1])


@pytest.mark.parametrize("approve", [True, False], ids=["approve", "deny"])
def test_use_chat_approval_against_workers_with_a_store(tmp_path: Path, approve: bool) -> None:
    pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn")
    from store_kit import SimProvider, serve_workers

    tag = f"ui{int(approve)}"
    with SimProvider() as sim, serve_workers(f"sqlite:///{tmp_path}/threads.db", sim.url, workers=2, threads=4) as url:
        out = node(url, "approve" if approve else "deny", f"{tag}| pay 7", f"chat-{tag}")
        requests = sim.requests_of(tag)
    assert out.get("error") is None, out
    assert out["errors"] == [] and out["status"] == "ready"
    message = out["messages"][-1]
    tools = tools_of(message)
    assert tools["tool-whoami"]["state"] == "output-available"
    transfer = tools["tool-transfer"]
    assert transfer["input"] == {"amount": 7}
    if approve:
        assert transfer["state"] == "output-available" and transfer["output"].startswith("sent 7 by pid ")
        assert "sent 7 by pid" in text_of(message)
    else:
        assert transfer["state"] == "output-denied"
        assert "Denied" in text_of(message)
    # the provider got the paired history: the assistant's two calls, then a result for each
    assert len(requests) == 2
    second = json.loads(requests[1])
    calls = [c["id"] for m in second if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in second if m["role"] == "tool"]
    assert len(calls) == 2 and results == calls
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
