"""The chat page of ``hookstream serve --demo`` driven in headless Chromium (Debian's ``chromium`` through
``playwright-core``): type a prompt, approve the tool that asks, watch the answer stream in, see the
final answer. Screenshots go to ``artifacts/`` (mid-answer: ``artifacts/chat-mid-answer.png``).

Needs ``/usr/bin/chromium``, Node and ``tests/e2e/node_modules`` (``scripts/install-browser-deps``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_kit import serve_demo_process

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
NODE = shutil.which("node")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found: run scripts/install-browser-deps"),
    pytest.mark.skipif(NODE is None, reason="Node.js not found: install it, then run scripts/install-browser-deps"),
    pytest.mark.skipif(not (E2E / "node_modules" / "playwright-core").is_dir(),
                       reason="tests/e2e/node_modules missing: run scripts/install-browser-deps"),
]

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")
pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")


@pytest.fixture
def serve_demo() -> Iterator[str]:
    # 30 ms between provider events, as `hookstream serve --demo` defaults: slow enough to see streaming.
    with serve_demo_process() as url:
        yield url


def test_chat_page_streams_asks_approval_and_answers(serve_demo: str) -> None:
    artifacts = ROOT / "artifacts"
    artifacts.mkdir(exist_ok=True)
    mid = artifacts / "chat-mid-answer.png"
    mid.unlink(missing_ok=True)
    assert NODE is not None
    proc = subprocess.run([NODE, str(E2E / "browser_chat.mjs"), serve_demo, str(artifacts)], cwd=E2E,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["ok"], result.get("error") or result
    # The approval was asked for the currency tool only, while the weather tool needed none.
    before = dict(result["toolStatesBeforeApproval"])
    assert before["convert_currency"] == "approval-requested"
    # The screenshot was taken while the answer was still streaming: part of the text, not all of it.
    assert mid.is_file() and mid.stat().st_size > 10_000
    assert result["midAnswerText"] and len(result["midAnswerText"]) < len(result["finalText"])
    assert "Paris" in result["finalText"] and "40,575" in result["finalText"]
    # One card per tool call (the resumed run repeats the approved call; the page keeps one card).
    assert result["toolStates"] == [["get_weather", "output-available"], ["convert_currency", "output-available"]]
    assert any("40575" in r for r in result["toolResults"])
    assert not result["consoleErrors"], result["consoleErrors"]
