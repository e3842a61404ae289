"""What an attack on `hookstream serve` found (issue 31, findings 3 to 7), each against a real server process:
a few hundred slow sockets no longer starve waitress, gunicorn answers 401 before reading an
unauthenticated body, the no-auth loopback server refuses cross-site requests and foreign Host names,
malformed paths are 4xx, and a run past --max-run-seconds ends with RUN_ERROR run_timeout.

Two server processes for the module: waitress (`serve --demo`, no authentication, events slowed so that
every run passes its one-second limit) and gunicorn (`serve --demo --workers 2` with a token). Good
clients' times under attack are measured by benchmarks/bench_serve_attack.py, not asserted here."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from serve_kit import serve_demo_process
from test_server_adversarial import cut_off

TOKEN = "tok-attack-" + "t" * 24
ALLOWED = "http://allowed.example"


@pytest.fixture(scope="module")
def waitress_url() -> Iterator[str]:
    # 0.25 s between the recording's events: every run is still going when its 1 s limit passes.
    with serve_demo_process("--delay", "0.25", "--max-run-seconds", "1", "--cors-origin", ALLOWED) as url:
        yield url.rstrip("/")


@pytest.fixture(scope="module")
def gunicorn_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text(f"{TOKEN} grace\n")
    with serve_demo_process("--workers", "2", "--threads", "2", "--auth-tokens", str(tokens)) as url:
        yield url.rstrip("/")


def run_body(thread: str = "t-attack") -> dict[str, Any]:
    return {"threadId": thread, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hello"}]}


def events(resp: requests.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in resp.iter_lines(decode_unicode=True)
            if line.startswith("data: ") and line != "data: [DONE]"]


def address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def trickling(url: str, n: int, stop: threading.Event) -> list[socket.socket]:
    """``n`` sockets that start a request and send one more header byte every 0.5 s until ``stop``."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(address(url), timeout=60)
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(s)

    def trickle() -> None:
        while not stop.wait(0.5):
            for s in socks:
                try:
                    s.sendall(b"a")
                except OSError:
                    pass

    threading.Thread(target=trickle, daemon=True).start()
    return socks


# -- finding 3: slowloris on waitress --------------------------------------------------------------------

def test_many_trickling_sockets_do_not_starve_waitress(waitress_url: str) -> None:
    # 120 sockets: more than waitress's default connection limit (100), which 110 of them used to fill.
    stop = threading.Event()
    socks = trickling(waitress_url, 120, stop)
    try:
        page = requests.get(waitress_url + "/", timeout=30)
        assert page.status_code == 200
        run = requests.post(waitress_url + "/", json=run_body("t-slowloris"), timeout=30, stream=True)
        assert run.status_code == 200 and events(run)[0]["type"] == "RUN_STARTED"
        # and every trickling socket is cut off by the request-read deadline
        assert all(cut_off(s, 30) for s in socks)
    finally:
        stop.set()
        for s in socks:
            s.close()


# -- finding 4: gunicorn authenticates before reading a body ---------------------------------------------

def test_an_unauthenticated_body_gets_401_before_it_is_sent(gunicorn_url: str) -> None:
    with socket.create_connection(address(gunicorn_url), timeout=30) as s:
        # 33 MB announced (under the 32 MiB limit), not a byte of it sent
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 33000000\r\n\r\n")
        head = s.recv(4096)
        assert head.startswith(b"HTTP/1.1 401 "), head
        assert b"connection: close" in head.lower()
    ok = requests.post(gunicorn_url + "/", json=run_body("t-authed"), timeout=30, stream=True,
                       headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and events(ok)[-1]["type"] == "RUN_FINISHED"


# -- finding 5: the no-auth loopback server and other web pages -------------------------------------------

def test_no_auth_server_refuses_foreign_origins_and_hosts(waitress_url: str) -> None:
    evil = requests.post(waitress_url + "/", data=json.dumps(run_body("t-evil")), timeout=30,
                         headers={"Origin": "https://evil.example", "Content-Type": "text/plain"})
    assert evil.status_code == 403 and "RUN_STARTED" not in evil.text
    rebound = requests.post(waitress_url + "/", json=run_body("t-rebound"), timeout=30,
                            headers={"Host": "evil.example:80"})
    assert rebound.status_code == 403
    assert requests.get(waitress_url + "/", headers={"Host": "evil.example"}, timeout=30).status_code == 403
    # the allowed origin, the server's own page, and loopback names are served
    allowed = requests.post(waitress_url + "/", json=run_body("t-allowed"), timeout=30, stream=True,
                            headers={"Origin": ALLOWED})
    assert allowed.status_code == 200 and allowed.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert events(allowed)[0]["type"] == "RUN_STARTED"
    port = address(waitress_url)[1]
    for host in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"):
        assert requests.get(waitress_url + "/", headers={"Host": host}, timeout=30).status_code == 200, host
    own = requests.post(waitress_url + "/", json=run_body("t-own"), timeout=30, stream=True,
                        headers={"Origin": waitress_url})
    assert own.status_code == 200


def test_an_authenticated_server_keeps_its_cors_answers(gunicorn_url: str) -> None:
    # With a token to ask for, a foreign origin is not refused up front: it gets 401 like anyone without one.
    resp = requests.post(gunicorn_url + "/", json=run_body("t-cors"), timeout=30,
                         headers={"Origin": "https://evil.example"})
    assert resp.status_code == 401 and "Access-Control-Allow-Origin" not in resp.headers


# -- finding 6: malformed paths -----------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/index.html%00.js", "/app.js%00", "/%ZZ.js", "/..%2Fsetup.cfg", "/../x.js",
                                  "/index.html/..", "/%2e%2e/x.css", "/a\\b.js"])
@pytest.mark.parametrize("server", ["waitress", "gunicorn"])
def test_malformed_paths_are_4xx(path: str, server: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(f"{server}_url")
    host, port = address(url)
    with socket.create_connection((host, port), timeout=30) as s:  # raw: no client normalises the path
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        status = s.recv(4096).split(b"\r\n", 1)[0]
    assert status.split()[1].startswith(b"4"), (path, status)


# -- finding 7: --max-run-seconds -----------------------------------------------------------------------

def test_a_run_past_max_run_seconds_ends_with_run_error(waitress_url: str) -> None:
    resp = requests.post(waitress_url + "/", json=run_body("t-long"), timeout=60, stream=True)
    got = events(resp)
    assert got[0]["type"] == "RUN_STARTED"
    assert got[-1]["type"] == "RUN_ERROR" and got[-1]["code"] == "run_timeout", got[-1]
    assert "max_run_seconds" in got[-1]["message"]
    assert not any(e["type"] == "RUN_FINISHED" for e in got)


def test_the_ui_message_stream_reports_the_timeout_as_an_error(waitress_url: str) -> None:
    body = {"id": "chat-long", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
            "trigger": "submit-message"}
    resp = requests.post(waitress_url + "/api/chat", json=body, timeout=60, stream=True)
    chunks = events(resp)
    errors = [c for c in chunks if c.get("type") == "error"]
    assert errors and "max_run_seconds" in errors[0]["errorText"]
    assert not any(c.get("type") == "abort" for c in chunks)

