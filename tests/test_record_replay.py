"""Recordings: ``hookstream chat --record DIR`` against the loopback demo server, then ``replay:DIR``
played through the real adapter gives the same run; secrets never reach the directory; a changed
request is caught."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hookstream_openai", reason="the demo recording needs the hookstream-openai plugin")

from hookstream import Recorder, chat, get_model
from hookstream.events import to_dict
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, check_events, demo_server, demo_tools

SECRET = "sk-test-DO-NOT-LEAK-1234567890"


def comparable(events: list[dict]) -> list[dict]:
    # Message ids are minted per run by the adapter; everything else must be identical.
    return [{k: v for k, v in e.items() if k not in ("messageId", "threadId", "runId")} for e in events]


def test_cli_record_then_replay_gives_the_same_run(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    server = demo_server()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hookstream", "chat", DEMO_PROMPT, "--model", DEMO_MODEL,
             "--base-url", server.url + "/v1", "--tool", "hookstream._demo:get_weather",
             "--tool", "hookstream._demo:convert_currency", "--output", "events", "--record", str(rec)],
            capture_output=True, text=True, timeout=60, env={"OPENAI_API_KEY": SECRET, "PATH": ""},
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    recorded = [json.loads(line) for line in proc.stdout.splitlines()]
    manifest = json.loads((rec / "manifest.json").read_text("utf-8"))  # the documented file
    assert manifest["provider"] == "openai" and manifest["base_path"] == "/v1"
    assert [c["status"] for c in manifest["calls"]] == [200, 200]
    # The API key is nowhere in the recording: not in headers, URL, body or the manifest.
    for f in rec.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f.name
    request = json.loads((rec / "001-request.json").read_text())
    assert not {k.lower() for k in request["headers"]} & {"authorization", "x-api-key", "api-key"}
    assert (rec / "001-response.sse").read_bytes() == b"".join(server.responses[0].pieces or ())

    stream = chat(f"replay:{rec}", DEMO_PROMPT, tools=demo_tools())
    replayed = [to_dict(e) for e in stream]
    check_events(replayed, form="run")
    assert comparable(replayed) == comparable(recorded)
    assert stream.result().outcome == "success"


def test_replay_reports_a_request_that_no_longer_matches(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    server = demo_server()
    try:
        recorder = Recorder(rec, DEMO_MODEL, server.url + "/v1")
        list(chat(get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key=SECRET, session=recorder.session()),
                  DEMO_PROMPT, tools=demo_tools()))
    finally:
        server.stop()
    # Same tools, another question: the first request differs from the recording.
    stream = chat(f"replay:{rec}", "Something else entirely", tools=demo_tools())
    events = list(stream)
    assert events[-1].type == "RUN_ERROR"
    assert "differs from the recording" in events[-1].message and "content" in events[-1].message


def test_recorder_refuses_to_overwrite_and_needs_a_provider(tmp_path: Path) -> None:
    Recorder(tmp_path / "r", "openai:gpt-4o-mini")
    with pytest.raises(FileExistsError):
        Recorder(tmp_path / "r", "openai:gpt-4o-mini")
    Recorder(tmp_path / "r", "openai:gpt-4o-mini", overwrite=True)
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        Recorder(tmp_path / "x", "gpt-4o-mini")


def test_pytest_plugin_fixtures(hookstream_recorder, hookstream_replay, hookstream_server,  # type: ignore[no-untyped-def]
                                hookstream_check_events) -> None:
    with demo_server() as demo:  # the kit's fixture serving the demo's recorded steps, checked as the demo does
        server = hookstream_server(demo.responses, check=demo.check)
    recorder = hookstream_recorder(DEMO_MODEL, server.url + "/v1")
    tools = demo_tools()
    first = list(chat(get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="k", session=recorder.session()),
                      DEMO_PROMPT, tools=tools))
    assert len(server.requests) == 2
    events, result = hookstream_replay(recorder.directory, DEMO_PROMPT, tools=tools)
    hookstream_check_events(events, form="run")
    assert result.text == first_text(first) and "40,575" in result.text


def first_text(events: list) -> str:
    return "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT")
