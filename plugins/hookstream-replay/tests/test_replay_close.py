"""A closed ``replay`` provider stays usable, as every provider does after ``close()``, and still only
replays: no request leaves the process, even with a proxy configured that would accept one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

pytest.importorskip("hookstream_openai", reason="the demo recording needs the hookstream-openai plugin")

from hookstream import Recorder, chat, get_model
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, LoopbackServer, Response, demo_server, demo_tools
from hookstream_replay import ReplayProvider


def record(directory: Path) -> None:
    with demo_server() as server:
        recorder = Recorder(directory, DEMO_MODEL, server.url + "/v1")
        model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="k", session=recorder.session())
        assert chat(model, DEMO_PROMPT, tools=demo_tools()).result().outcome == "success"


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    """A loopback server set as the HTTP(S) proxy: any request to a remote host lands here (the demo
    server on 127.0.0.1 is reached directly). It answers 400, which is not retried."""
    server = LoopbackServer(Response(b'{"error": {"message": "reached the network"}}', status=400,
                                     content_type="application/json")).start()
    for name in ("ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, server.url)
    yield server
    server.stop()


def test_replay_after_close_replays_and_never_reaches_the_network(tmp_path: Path,
                                                                   network: LoopbackServer) -> None:
    record(tmp_path / "rec")
    provider = ReplayProvider(str(tmp_path / "rec"))
    provider.close()
    stream = chat(provider, DEMO_PROMPT, tools=demo_tools())
    stream.result()
    assert len(network.requests) == 0, f"{len(network.requests)} request(s) reached the network"
    assert stream.result().outcome == "success", stream.result()
    assert "40,575" in stream.result().text
    provider.close()
    # The recording is played out: a further run is told so by the replay, not answered by a server.
    again = list(chat(provider, DEMO_PROMPT, tools=demo_tools()))
    assert again[-1].type == "RUN_ERROR" and "the recording has 2" in again[-1].message
    assert network.requests == []


def test_the_proxy_would_catch_a_request(network: LoopbackServer) -> None:
    # The check above is only worth something if a plain session really goes through the proxy.
    with requests.Session() as session:
        assert session.post("http://replay.invalid/v1/chat/completions", json={}).status_code == 400
    assert len(network.requests) == 1
