"""A new user against a local server (issue 32): ``hookstream chat --model bedrock:... --base-url
http://127.0.0.1:PORT`` without AWS credentials says what to set, naming ``AWS_BEARER_TOKEN_BEDROCK`` and
that any value will do on loopback; with that variable set the recorded stream plays unsigned."""

from __future__ import annotations

from pathlib import Path

import pytest
from bedrock_frames import MEDIA_TYPE, set_credentials
from hookstream.testing import LoopbackServer, Response, run_cli

RECORDING = Path(__file__).parent / "recordings" / "bedrock__llm-bedrock__tiny_text_nova_lite.eventstream"
MODEL = "bedrock:us.amazon.nova-lite-v1:0"


def test_loopback_without_credentials_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, keys=False)
    monkeypatch.setenv("HOOKSTREAM_USER_DIR", str(tmp_path / "user"))
    with LoopbackServer([Response(RECORDING.read_bytes(), content_type=MEDIA_TYPE)]) as srv:
        done = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url, "--no-log"])
        assert srv.requests == []
    assert done.exit_code == 1
    assert "no credentials for the bedrock provider: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)" in done.stderr
    assert "any value will do (AWS_BEARER_TOKEN_BEDROCK=test)" in done.stderr


def test_loopback_with_a_bearer_token_needs_no_aws_credentials(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, keys=False)
    monkeypatch.setenv("HOOKSTREAM_USER_DIR", str(tmp_path / "user"))
    with LoopbackServer([Response(RECORDING.read_bytes(), content_type=MEDIA_TYPE)]) as srv:
        done = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url, "--no-log"],
                       env={"AWS_BEARER_TOKEN_BEDROCK": "test"})
        [request] = srv.requests
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip()
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["authorization"] == "Bearer test" and "x-amz-date" not in headers
