"""``hookstream chat "describe" --attach photo.png --attach report.pdf`` end to end for the Anthropic
and Gemini providers (the OpenAI ones: plugins/hookstream-openai/tests/test_openai_files.py): the real
CLI in a subprocess, a loopback server that records the request body, each provider's documented form.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import BASE_PATH, final_stream

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
PDF = b"%PDF-1.4\n%hookstream test\n"


def _run(provider: str, tmp_path: Path) -> tuple[dict[str, object], dict[str, object]]:
    pytest.importorskip(f"hookstream_{provider}", reason=f"needs the hookstream-{provider} plugin")
    photo, report = tmp_path / "photo.png", tmp_path / "report.pdf"
    photo.write_bytes(PNG)
    report.write_bytes(PDF)
    with LoopbackServer([Response(final_stream(provider, "ok").body)]) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "hookstream", "chat", "describe", "--attach", str(photo), "--attach",
             str(report), "--model", f"{provider}:m", "--base-url", srv.url + BASE_PATH[provider],
             "--output", "final-json"],
            capture_output=True, text=True, check=False,
            env={**os.environ, "ANTHROPIC_API_KEY": "k-test", "GEMINI_API_KEY": "k-test", "NO_COLOR": "1"},
        )
        assert proc.returncode == 0, proc.stderr
        return srv.requests[0].json(), json.loads(proc.stdout)


def test_cli_attach_anthropic_sends_image_and_document_blocks(tmp_path: Path) -> None:
    sent, out = _run("anthropic", tmp_path)
    content = sent["messages"][0]["content"]  # type: ignore[index]
    assert content[0] == {"type": "text", "text": "describe"}
    assert content[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": base64.b64encode(PNG).decode()}}
    assert content[2]["type"] == "document"
    assert content[2]["source"] == {"type": "base64", "media_type": "application/pdf",
                                    "data": base64.b64encode(PDF).decode()}
    assert out["text"] == "ok"


def test_cli_attach_gemini_sends_inline_data(tmp_path: Path) -> None:
    sent, out = _run("gemini", tmp_path)
    parts = sent["contents"][0]["parts"]  # type: ignore[index]
    assert parts[0] == {"text": "describe"}
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}
    assert parts[2] == {"inlineData": {"mimeType": "application/pdf", "data": base64.b64encode(PDF).decode()}}
    assert out["text"] == "ok"
