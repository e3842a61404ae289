"""Issue 38, findings 5 and 7, against real `hookstream serve` processes: steering a run past the message
limits is refused (413) and past the principal's rate limit too (429), and the next model request keeps
within --max-messages; on gunicorn (`--workers 2 --threads 4`) one principal's slow authenticated bodies
count toward its concurrent limit across the workers, so the 5th is refused at once while other
principals' runs are served; --max-runs-per-minute holds across gunicorn's workers too (a window in
memory the forked workers share). Nothing is timed: the good runs only have to finish (their times under
attack are measured by benchmarks/bench_serve_attack.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from engine_kit import MODEL, body_messages, text_body, text_pieces, tool_body
from holdkit import held
from hookstream import chat, get_model
from hookstream.errors import SteeringLimitError
from hookstream.testing import LoopbackServer, Response

NEVER = 60.0  # only keeps a broken test from hanging; nothing is timed
TOKENS = {"alice": "tok-alice-" + "a" * 24, "bob": "tok-bob-" + "b" * 24, "carol": "tok-carol-" + "c" * 24}


@contextlib.contextmanager
def serve(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """`hookstream serve --port 0 ARGS...` in its own process; yields its base URL, stops it after."""
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.split("listening on ", 1)[1].split()[0].rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


def tokens_file(tmp: Path) -> str:
    path = tmp / "tokens"
    path.write_text("".join(f"{token} {who}\n" for who, token in TOKENS.items()))
    return str(path)


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[who]}"}


def run_body(thread: str, text: str = "hello") -> dict[str, Any]:
    return {"threadId": thread, "runId": f"r-{thread}", "messages": [{"id": "u1", "role": "user", "content": text}]}


def events(resp: requests.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in resp.iter_lines(decode_unicode=True)
            if line.startswith("data: ") and line != "data: [DONE]"]


def wait_for(condition: Any) -> None:
    deadline = time.monotonic() + NEVER
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


# -- finding 5: steering ---------------------------------------------------------------------------------

def test_steering_past_the_limits_is_refused_and_the_next_request_keeps_within_max_messages(tmp_path: Path) -> None:
    pieces = text_pieces("Still ", "thinking.")
    with held(pieces[:2], tail=pieces[2:]) as (first, hold), \
            LoopbackServer([first, Response(b"".join(text_pieces("Done.")))]) as model:
        with serve("--model", "openai:gpt-4o-mini", "--base-url", model.url + "/v1", "--auth-tokens",
                   tokens_file(tmp_path), "--max-messages", "8", "--max-message-bytes", "2048",
                   "--max-runs-per-minute", "7", env={"OPENAI_API_KEY": "sk-test"}) as url:
            got: list[requests.Response] = []
            reader = threading.Thread(target=lambda: got.append(requests.post(
                url + "/", json=run_body("t-steer"), headers=auth("alice"), timeout=NEVER)))
            reader.start()
            wait_for(lambda: len(model.requests) == 1)  # the run waits in its first model call

            def steer(text: str, who: str = "alice") -> requests.Response:
                return requests.post(url + "/agui/threads/t-steer/messages", json={"content": text},
                                     headers=auth(who), timeout=NEVER)

            # one message over --max-message-bytes: 413 from its Content-Length, no permit taken
            assert steer("x" * 4096).status_code == 413
            # the conversation holds 1 message; 8 with room for the step's reply (2) leaves 5
            assert [steer(f"steer {i}").status_code for i in range(5)] == [202] * 5
            too_many = steer("one more")
            assert too_many.status_code == 413 and too_many.json()["error"]["code"] == "steering_limit"
            # 1 run + 6 steering POSTs used the 7 permits of the minute
            limited = steer("and another")
            assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
            assert steer("not bob's", who="bob").status_code == 404
            hold.release()
            reader.join(NEVER)
    assert got and got[0].status_code == 200
    sent = body_messages(model.requests[1])
    assert len(sent) <= 8
    assert [m["content"] for m in sent if m["role"] == "user"] == ["hello", *(f"steer {i}" for i in range(5))]


def test_the_conversation_bytes_bound_the_steering_messages(tmp_path: Path) -> None:
    pieces = text_pieces("Still ", "thinking.")
    with held(pieces[:2], tail=pieces[2:]) as (first, hold), \
            LoopbackServer([first, Response(b"".join(text_pieces("Done.")))]) as model:
        with serve("--model", "openai:gpt-4o-mini", "--base-url", model.url + "/v1", "--auth-tokens",
                   tokens_file(tmp_path), "--max-message-bytes", "4000", env={"OPENAI_API_KEY": "sk-test"}) as url:
            reader = threading.Thread(target=lambda: requests.post(
                url + "/", json=run_body("t-bytes"), headers=auth("alice"), timeout=NEVER))
            reader.start()
            wait_for(lambda: len(model.requests) == 1)
            statuses = [requests.post(url + "/agui/threads/t-bytes/messages", json={"content": "y" * 1500},
                                      headers=auth("alice"), timeout=NEVER).status_code for _ in range(3)]
            hold.release()
            reader.join(NEVER)
    # each message fits in 4,000 bytes, but the request (~100 bytes) and three of them do not
    assert statuses == [202, 202, 413]
    assert sum(len(m["content"]) for m in body_messages(model.requests[1])) < 4000


def test_chat_stream_add_message_has_a_bounded_queue_and_keeps_max_messages() -> None:
    refused: list[tuple[str, int]] = []
    runs: list[Any] = []

    def lookup(key: str) -> str:
        """Look up a key."""
        stream = runs[0]
        assert stream.add_message("first", max_queued=2) and stream.add_message("second", max_queued=2)
        for kwargs in ({"max_queued": 2}, {"max_messages": 5}):
            try:
                stream.add_message("refused", **kwargs)
            except SteeringLimitError as exc:
                refused.append((exc.limit, exc.value))
        return f"value of {key}"

    with LoopbackServer([Response(tool_body(("c1", "lookup", {"key": "a"}))), Response(text_body("Done."))]) as srv:
        stream = chat(get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test"), "Look it up.", tools=[lookup])
        runs.append(stream)
        result = stream.result()
    # 1 message + 2 queued + this one + 2 for the step's reply = 6 > 5
    assert refused == [("max_queued", 2), ("max_messages", 5)]
    assert [m.text for m in result.messages if m.role == "user"] == ["Look it up.", "first", "second"]
    assert len(body_messages(srv.requests[1])) == 5


# -- finding 7: authenticated slow bodies on gunicorn -------------------------------------------------------

def slow_body(url: str, who: str) -> socket.socket:
    """A run request of ``who`` announcing a 33 MB body, its first 40 KiB sent (the rest never is)."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=NEVER)
    s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer " + TOKENS[who].encode() + b"\r\nContent-Length: 33000000\r\n\r\n"
              + b"[" * 40 * 1024)
    return s


def answered(s: socket.socket) -> bytes:
    """What the server has sent on ``s`` so far (nothing: b"")."""
    s.setblocking(False)
    try:
        return s.recv(4096)
    except BlockingIOError:
        return b""
    finally:
        s.setblocking(True)


def test_the_fifth_slow_body_of_a_principal_is_refused_at_once_on_gunicorn(tmp_path: Path) -> None:
    pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    from hookstream_server.limits import MIN_BODY_RATE

    with serve("--demo", "--workers", "2", "--threads", "4", "--auth-tokens", tokens_file(tmp_path)) as url:
        slow = [slow_body(url, "alice") for _ in range(4)]
        answers: dict[int, bytes] = {}
        refused: list[bytes] = []
        # Alice's four go on sending at twice the least body rate, so the read deadline (about 5 s for a
        # body that stops) never frees her threads while the test runs, however slowly it runs.
        stop = threading.Event()

        def keep_sending() -> None:
            while not stop.wait(0.25):
                for s in slow[:4]:
                    try:
                        s.sendall(b"[" * (MIN_BODY_RATE // 2))
                    except OSError:
                        pass

        threading.Thread(target=keep_sending, daemon=True).start()
        try:
            # Alice's next slow bodies, one at a time: once her four are counted (each as a thread takes it,
            # before its body is read) the next is answered 429 without its body. Requests sent at the same
            # instant as the four may queue in the same worker behind them instead (docs/agui-server.md).
            def next_is_refused() -> bool:
                extra = slow_body(url, "alice")
                extra.settimeout(2.0)
                try:
                    got = extra.recv(4096)
                except TimeoutError:
                    got = b""
                if got:
                    refused.append(got)
                else:
                    slow.append(extra)  # queued behind the four: held open, never answered
                return bool(got)

            wait_for(next_is_refused)
            assert refused[-1].startswith(b"HTTP/1.1 429 ")
            # the four are still being read; alice's next request is refused at once as well
            again = slow_body(url, "alice")
            again.settimeout(NEVER)
            assert again.recv(4096).startswith(b"HTTP/1.1 429 ")
            again.close()
            # other principals are served meanwhile, on the threads alice does not hold
            for who in ("bob", "carol", "bob", "carol"):
                ok = requests.post(url + "/", json=run_body(f"t-{who}"), headers=auth(who), timeout=NEVER)
                assert ok.status_code == 200 and events(ok)[-1]["type"] == "RUN_FINISHED"
            assert not _answers(slow[:4], answers)  # alice's four are still held, unanswered
        finally:
            stop.set()
            for s in slow:
                s.close()


def _answers(socks: list[socket.socket], answers: dict[int, bytes]) -> bool:
    """Add to ``answers`` (by index) what each socket has been answered so far; whether any was."""
    for i, s in enumerate(socks):
        if i not in answers:
            data = answered(s)
            if data:
                answers[i] = data
    return bool(answers)


# -- runs per minute across gunicorn workers ---------------------------------------------------------------

def test_the_runs_per_minute_window_is_shared_by_forked_processes() -> None:
    """Two processes forked from the one that made the window (as gunicorn forks its workers) share it:
    between them they get exactly ``per_window`` permits, then a wait until the oldest run's bucket has
    left the window; another principal has a window of its own."""
    multiprocessing = pytest.importorskip("multiprocessing")
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork (gunicorn's workers are forked)")
    from hookstream_server.limits import SharedWindows

    now = [1000.0]  # the clock stands still: nothing leaves the window unless the test moves it
    window = SharedWindows(3, 60.0, clock=lambda: now[0])
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(2)
    admitted = ctx.Queue()

    def worker() -> None:
        start.wait(NEVER)
        admitted.put(sum(window.try_acquire("alice") is None for _ in range(5)))

    procs = [ctx.Process(target=worker) for _ in range(2)]
    for p in procs:
        p.start()
    counts = [admitted.get(timeout=NEVER) for _ in procs]
    for p in procs:
        p.join(NEVER)
    assert sum(counts) == 3, counts
    wait = window.try_acquire("alice")  # the parent shares the window too
    assert wait is not None and 60.0 <= wait <= 61.0
    assert window.try_acquire("bob") is None
    now[0] += wait  # the three were admitted in one bucket (of a second), which has left the window now
    assert [window.try_acquire("alice") is None for _ in range(4)] == [True, True, True, False]


def test_max_runs_per_minute_holds_across_gunicorn_workers(tmp_path: Path) -> None:
    """`--max-runs-per-minute 3` with `--workers 2`: of ten runs alice starts at once, on connections of
    their own (spread over both workers by the kernel), three are served and seven refused with
    `Retry-After`; bob's minute is his own."""
    pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    with serve("--demo", "--workers", "2", "--threads", "4", "--auth-tokens", tokens_file(tmp_path),
               "--max-runs-per-minute", "3", "--max-concurrent-runs", "100") as url:
        start = threading.Barrier(10)
        answers: list[requests.Response] = []

        def run(i: int) -> None:
            start.wait(NEVER)
            answers.append(requests.post(url + "/", json=run_body(f"t-alice-{i}"), headers=auth("alice"),
                                         timeout=NEVER))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(NEVER)
        statuses = sorted(r.status_code for r in answers)
        assert statuses == [200] * 3 + [429] * 7, statuses
        assert all(int(r.headers["Retry-After"]) >= 1 for r in answers if r.status_code == 429)
        assert all(events(r)[-1]["type"] == "RUN_FINISHED" for r in answers if r.status_code == 200)
        ok = requests.post(url + "/", json=run_body("t-bob"), headers=auth("bob"), timeout=NEVER)
        assert ok.status_code == 200
