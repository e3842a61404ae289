"""Batch runs: output line shape, resume after a SIGKILL (every id once, no repeated requests for
finished ids), a cut last line truncated, the rate limiter's caps over every 10-second window (fake
clock), 429 Retry-After pausing every worker, --fail-fast, and bad input lines.

Chats go through a real loopback OpenAI Chat Completions server; the crash test runs the CLI in a
real subprocess and kills it with SIGKILL. Each prompt names its id, so the server's captured
requests tell how often each id was asked.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from engine_kit import text_body, text_pieces, tool_body, usage
from holdkit import NEVER, PauseWatch, hold_after, kill_after_lines
from hookstream import BatchInput, BatchResult, Callbacks, RateLimiter, RunSettings, batch
from hookstream.errors import BatchInputError
from hookstream.plugin import BatchJob, ChatRunner, Permit, open_output
from hookstream.testing import CapturedRequest, LoopbackServer, Response, run_cli

MODEL = "openai:gpt-4o-mini"
KEYS = {"id", "text", "tool_calls", "finish_reason", "usage", "error"}


def prompt_id(req: CapturedRequest) -> str:
    """The id named in a request's last user message (``"item <id>"``)."""
    content = req.json()["messages"][-1]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return str(text).split("item ", 1)[1]


def write_inputs(path: Path, ids: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "prompt": f"item {i}"}) + "\n" for i in ids))


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def refuse(bad: str) -> Any:
    """A server check answering 400 to the request for id ``bad``."""
    def check(index: int, req: CapturedRequest) -> str | None:
        return "this one is refused" if prompt_id(req) == bad else None
    return check


# -- output ---------------------------------------------------------------------------------------


def test_each_input_gets_one_line_of_the_documented_shape(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    inputs: list[dict[str, Any]] = [{"id": "a", "prompt": "item a"},
              {"id": "b", "messages": [{"role": "system", "content": "be brief"},
                                       {"role": "user", "content": "item b"}]},
              {"id": "bad", "prompt": "item bad"}]
    with LoopbackServer(Response(text_body("Hel", "lo", u=usage(7, 3))), check=refuse("bad")) as srv:
        results = list(batch(inputs, MODEL, base_url=srv.url + "/v1", api_key="sk-test", output=out,
                             concurrency=2))
    assert sorted(r.id for r in results) == ["a", "b", "bad"]
    lines = {d["id"]: d for d in read_lines(out)}
    assert set(lines) == {"a", "b", "bad"}
    for doc in lines.values():
        assert set(doc) == KEYS
    assert lines["a"] == {"id": "a", "text": "Hello", "tool_calls": [], "finish_reason": "stop",
                          "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}, "error": None}
    assert lines["b"]["text"] == "Hello"
    assert lines["bad"]["error"]["code"] == "bad_request"
    assert "refused" in lines["bad"]["error"]["message"]
    assert out.read_bytes().endswith(b"\n")


def test_tool_calls_of_the_last_step_are_in_the_line(tmp_path: Path) -> None:
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    body = tool_body(("call_1", "lookup", {"city": "Paris"}))
    with LoopbackServer(Response(body)) as srv:
        (result,) = batch([{"id": "t", "prompt": "item t"}], MODEL, base_url=srv.url + "/v1", tools=[lookup],
                          max_steps=1, output=tmp_path / "out.jsonl")
    assert result.tool_calls == [{"id": "call_1", "name": "lookup", "arguments": {"city": "Paris"}}]
    assert result.finish_reason == "tool_calls" and result.error is None
    assert read_lines(tmp_path / "out.jsonl") == [result.to_dict()]


def test_cli_progress_bar_and_unwritable_output(tmp_path: Path) -> None:
    write_inputs(tmp_path / "in.jsonl", ["a", "b"])
    with LoopbackServer(Response(text_body("ok"))) as srv:
        args = ["batch", str(tmp_path / "in.jsonl"), "--model", MODEL, "--base-url", srv.url + "/v1"]
        res = run_cli([*args, "--output", str(tmp_path / "out.jsonl"), "--progress"])
        assert res.exit_code == 0, res.output
        assert "2/2" in res.output and "batch: 2/2 done, 0 errors" in res.output
        res = run_cli([*args, "--output", str(tmp_path / "no" / "out.jsonl")])
    assert res.exit_code == 2 and "cannot open" in res.output


def test_rerun_skips_done_ids_and_truncates_a_cut_last_line(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    done: dict[str, Any] = {"id": "a", "text": "old", "tool_calls": [], "finish_reason": "stop",
                            "usage": None, "error": None}
    out.write_bytes(json.dumps(done).encode() + b"\n" + b'{"id": "b", "text": "cut by a cra')
    f = open_output(out)  # the SDK's way to open it, as a batch runner plugin does
    assert f is not None
    with f:
        assert f.done == {"a"}
        assert f.truncated == len(b'{"id": "b", "text": "cut by a cra')
    assert out.read_bytes() == json.dumps(done).encode() + b"\n"
    out.write_bytes(out.read_bytes() + b'{"id": "b", "te')
    with LoopbackServer(Response(text_body("new"))) as srv:
        run = batch([{"id": i, "prompt": f"item {i}"} for i in "abc"], MODEL, base_url=srv.url + "/v1",
                    output=out)
        got = sorted(r.id for r in run)
        asked = sorted(prompt_id(r) for r in srv.requests)
    assert got == ["b", "c"] and asked == ["b", "c"] and run.skipped == 1
    lines = read_lines(out)
    assert lines[0]["id"] == "a" and sorted(d["id"] for d in lines) == ["a", "b", "c"]
    assert lines[0]["text"] == "old"


def test_an_output_file_that_is_not_a_result_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("not json\n" + json.dumps({"id": "a"}) + "\n")
    with pytest.raises(BatchInputError, match="line 1"):
        batch([{"id": "a", "prompt": "x"}], MODEL, base_url="http://127.0.0.1:9/v1", output=out)
    assert out.read_text().startswith("not json\n")


def test_cli_bad_input_line_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    res = run_cli(["batch", str(tmp_path / "in.jsonl"), "--model", MODEL, "--base-url",
                                    "http://127.0.0.1:9/v1", "--output", str(tmp_path / "out.jsonl")])
    assert res.exit_code == 2
    assert "line 2" in res.output and "appears twice" in res.output
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_exit_0_with_failed_runs_and_1_with_fail_fast(tmp_path: Path) -> None:
    ids = ["a", "b", "bad", "c", "d"]
    write_inputs(tmp_path / "in.jsonl", ids)
    with LoopbackServer(Response(text_body("ok")), check=refuse("bad")) as srv:
        common = ["batch", str(tmp_path / "in.jsonl"), "--model", MODEL, "--base-url", srv.url + "/v1",
                  "--concurrency", "1", "--no-progress"]
        res = run_cli([*common, "--output", str(tmp_path / "all.jsonl")])
        assert res.exit_code == 0, res.output
        assert sorted(d["id"] for d in read_lines(tmp_path / "all.jsonl")) == sorted(ids)
        assert "1 errors" in res.output
        res = run_cli([*common, "--output", str(tmp_path / "ff.jsonl"), "--fail-fast"])
    assert res.exit_code == 1, res.output
    assert "fail-fast" in res.output
    # One thread, inputs in order: the batch stopped at "bad" and never asked for c and d.
    assert [d["id"] for d in read_lines(tmp_path / "ff.jsonl")] == ["a", "b", "bad"]


# -- crash and resume -----------------------------------------------------------------------------


def test_resume_after_sigkill_writes_every_id_once_without_asking_finished_ids_again(tmp_path: Path) -> None:
    ids = [f"n{i:03d}" for i in range(60)]
    write_inputs(tmp_path / "in.jsonl", ids)
    out = tmp_path / "out.jsonl"
    slow = Response(pieces=text_pieces("one", " two", " three"), delay=0.03)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}

    def command(url: str) -> list[str]:
        return [sys.executable, "-m", "hookstream", "batch", str(tmp_path / "in.jsonl"), "--model", MODEL,
                "--base-url", url + "/v1", "--output", str(out), "--concurrency", "4", "--no-progress"]

    # The server answers the first 14 requests only and holds the rest until the kill: the kill comes
    # after 10 lines and before the 15th, however the machine is loaded.
    answered, release = 14, threading.Event()
    with LoopbackServer(slow, check=hold_after(answered, release)) as srv:
        kill_after_lines(command(srv.url), env, out, 10, release, limit=120)
    first = read_lines(out)
    finished = {d["id"] for d in first}
    assert 10 <= len(finished) <= answered
    assert len(first) == len(finished)
    # A write cut by a crash elsewhere (power loss) leaves a partial last line: the re-run drops it.
    with open(out, "ab") as f:
        f.write(b'{"id": "n059", "text": "cu')
    # The re-run talks to a server of its own, so a request of the killed process still on its way
    # cannot be mistaken for one of the re-run.
    with LoopbackServer(slow) as srv2:
        res = subprocess.run(command(srv2.url), env=env, capture_output=True, text=True, check=False)
        asked_again = [prompt_id(r) for r in srv2.requests]
    assert res.returncode == 0, res.stderr
    assert "resuming" in res.stderr
    lines = read_lines(out)
    assert sorted(d["id"] for d in lines) == ids  # every id exactly once
    assert not finished & set(asked_again)
    assert len(asked_again) == len(ids) - len(finished)
    assert all(d["error"] is None and d["text"] == "one two three" for d in lines)


def test_ctrl_c_exits_130_and_the_rerun_finishes(tmp_path: Path) -> None:
    ids = [f"k{i:02d}" for i in range(40)]
    write_inputs(tmp_path / "in.jsonl", ids)
    out = tmp_path / "out.jsonl"
    slow = Response(pieces=text_pieces("done"), delay=0.05)
    # The server answers the first 6 requests only and holds the rest until the batch has exited, so
    # Ctrl-C comes after 4 lines and before the 7th, however the machine is loaded, and the exit does
    # not wait for requests in flight.
    answered, release = 6, threading.Event()
    with LoopbackServer(slow, check=hold_after(answered, release)) as srv:
        cmd = [sys.executable, "-m", "hookstream", "batch", str(tmp_path / "in.jsonl"), "--model", MODEL,
               "--base-url", srv.url + "/v1", "--output", str(out), "--concurrency", "2", "--no-progress"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120  # a hang guard, not a speed assertion
        while (not out.exists() or out.read_bytes().count(b"\n") < 4) and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=NEVER)
        finally:
            release.set()
        assert proc.returncode == 130, err
        assert "interrupted" in err
        first = {d["id"] for d in read_lines(out)}
        assert out.read_bytes().endswith(b"\n") and 4 <= len(first) <= answered
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    lines = read_lines(out)
    assert sorted(d["id"] for d in lines) == ids
    assert first < {d["id"] for d in lines}


def test_a_batch_that_is_not_iterated_can_be_closed(tmp_path: Path) -> None:
    with batch([{"id": "a", "prompt": "x"}], MODEL, base_url="http://127.0.0.1:9/v1",
               output=tmp_path / "out.jsonl") as run:
        assert run.skipped == 0
    with pytest.raises(RuntimeError):
        iter(run)


# -- rate limiter ---------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def max_in_window(times: list[tuple[float, int]], width: float) -> tuple[int, int]:
    """Most requests and most tokens inside any half-open window ``[s, s + width)``."""
    most_req = most_tok = 0
    for k, (start, _) in enumerate(times):
        inside = [tok for t, tok in times[k:] if t < start + width]
        most_req, most_tok = max(most_req, len(inside)), max(most_tok, sum(inside))
    return most_req, most_tok


@pytest.mark.parametrize(("rpm", "tpm"), [(600, None), (100, None), (None, 60_000), (300, 20_000), (90, 1_000_000)])
def test_limiter_holds_both_caps_over_every_10_second_window(rpm: int | None, tpm: int | None) -> None:
    rng = random.Random(rpm or 0)
    clock = FakeClock()
    lim = RateLimiter(rpm, tpm, clock=clock)
    admitted: list[tuple[float, int]] = []
    start = clock.now
    # Eight "workers" ask in turn; each waits what the limiter says, or a random think time.
    wakeups = [clock.now] * 8
    while clock.now < start + 300:
        w = min(range(8), key=wakeups.__getitem__)
        clock.now = max(clock.now, wakeups[w])
        estimate = rng.randint(50, 400)
        got = lim.try_acquire(estimate)
        if isinstance(got, Permit):
            real = rng.randint(estimate // 2, estimate)  # estimates err high, as the batch's do
            lim.settle(got, real)
            admitted.append((clock.now, real))
            wakeups[w] = clock.now + rng.uniform(0, 0.3)
        else:
            assert got > 0
            wakeups[w] = clock.now + got
    most_req, most_tok = max_in_window(admitted, 10.0)
    if rpm is not None:
        assert most_req <= rpm / 6 * 1.05
        assert max_in_window(admitted, 60.0)[0] <= rpm
        assert len(admitted) >= 0.9 * rpm * 5 or tpm is not None  # and it does not starve
    if tpm is not None:
        assert most_tok <= tpm / 6 * 1.05
        assert max_in_window(admitted, 60.0)[1] <= tpm


def test_limiter_corrects_an_under_estimate_by_waiting_longer() -> None:
    clock = FakeClock()
    lim = RateLimiter(tpm=600, clock=clock)  # 100 tokens per 10 s
    first = lim.try_acquire(10)
    assert isinstance(first, Permit)
    lim.settle(first, 100)  # the answer was longer than estimated: the window is full
    wait = lim.try_acquire(10)
    assert isinstance(wait, float) and wait == pytest.approx(10.0)
    clock.now += wait
    assert isinstance(lim.try_acquire(10), Permit)


def test_limiter_admits_a_request_larger_than_a_window_alone() -> None:
    clock = FakeClock()
    lim = RateLimiter(tpm=60, clock=clock)
    assert isinstance(lim.try_acquire(5), Permit)
    wait = lim.try_acquire(500)
    assert isinstance(wait, float)
    clock.now += wait
    assert isinstance(lim.try_acquire(500), Permit)


def test_limiter_pause_holds_every_request_until_it_ends() -> None:
    clock = FakeClock()
    lim = RateLimiter(clock=clock)
    lim.pause(2.5)
    lim.pause(1.0)  # a shorter pause does not cut the longer one
    assert lim.try_acquire() == pytest.approx(2.5)
    clock.now += 2.5
    assert isinstance(lim.try_acquire(), Permit)


def test_limiter_margin_keeps_a_request_counted_past_its_window() -> None:
    clock = FakeClock()
    lim = RateLimiter(rpm=6, window=10.0, margin=0.25, clock=clock)  # one request per 10 s window
    assert isinstance(lim.try_acquire(), Permit)
    clock.now += 10.0
    assert lim.try_acquire() == pytest.approx(0.25)
    clock.now += 0.25
    assert isinstance(lim.try_acquire(), Permit)
    with pytest.raises(ValueError, match="margin"):
        RateLimiter(rpm=6, margin=-1)


def test_limiter_is_shared_safely_by_threads() -> None:
    # Real clock, short window: 5 requests per 0.2 s, asked by 6 threads at once.
    lim = RateLimiter(rpm=1500, window=0.2)
    got: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def worker() -> None:
        barrier.wait()
        for _ in range(4):
            permit = lim.acquire(1)
            assert permit is not None
            with lock:
                got.append(permit.time)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 24
    assert max_in_window(sorted((t, 1) for t in got), 0.2)[0] <= 5


def test_limiter_rejects_bad_caps() -> None:
    with pytest.raises(ValueError, match="rpm"):
        RateLimiter(rpm=0)
    assert RateLimiter(rpm=3).window == 20.0  # a window holds at least one request


# -- 429 ------------------------------------------------------------------------------------------


def test_a_429_with_retry_after_pauses_every_worker(tmp_path: Path) -> None:
    # Causal, not timed: the server holds every request after the 429 until the test has seen the
    # limiter count the pause (at t_ack), so no worker can run ahead meanwhile. A request that arrives
    # after t_ack and before Retry-After ends must have passed the limiter before the pause: at most
    # one per worker other than the one that got the 429. A limiter that ignored the 429 would let the
    # other workers go on sending right after t_ack.
    concurrency, retry_after = 4, 1.0
    w = PauseWatch()
    refused = Response(b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}', status=429,
                       headers={"Retry-After": f"{retry_after:g}"}, content_type="application/json")
    with LoopbackServer([refused, Response(text_body("ok"))], check=w.check) as srv:
        run = batch([{"id": f"r{i}", "prompt": f"item r{i}"} for i in range(12)], MODEL,
                    base_url=srv.url + "/v1", output=tmp_path / "out.jsonl", concurrency=concurrency)
        with w.watching(run, poll=0.002):
            results = list(run)
    stamps = w.stamps
    assert all(r.error is None for r in results) and len(results) == 12
    assert run.limiter.pauses == 1
    assert len(stamps) == 13  # 12 chats and the one retry
    t429 = dict(stamps)[0]
    assert w.t_ack is not None and w.t_ack > t429
    # The pause began when the client read the 429, after the server stamped it.
    late = [t for i, t in stamps if i > 0 and w.t_ack < t < t429 + retry_after]
    assert len(late) <= concurrency - 1, late
    assert any(t >= t429 + retry_after for _, t in stamps), "the batch went on after the pause"


def test_the_limiter_counts_every_request_with_its_real_tokens(tmp_path: Path) -> None:
    # A clock that never moves: nothing leaves the window, so the limiter's totals are the batch's.
    lim = RateLimiter(tpm=10**9, rpm=10**6, clock=lambda: 0.0)
    refused = Response(b'{"error": {"message": "slow down"}}', status=429, headers={"Retry-After": "0"},
                       content_type="application/json")
    with LoopbackServer([refused, Response(text_body("ok", u=usage(7, 3)))]) as srv:
        results = list(batch([{"id": f"u{i}", "prompt": f"item u{i}"} for i in range(5)], MODEL,
                             base_url=srv.url + "/v1", concurrency=2, limiter=lim))
    assert [r.error for r in results] == [None] * 5
    # Six requests (one refused and retried); estimates replaced by the real 10 tokens per answer,
    # the refused request charged none.
    assert lim.usage() == (6, 50)
    assert lim.pauses == 1


# -- one settings value; the runner --------------------------------------------------------------------


def test_settings_and_their_fields_as_keywords_reach_every_chat(tmp_path: Path) -> None:
    seen: list[int] = []
    settings = RunSettings(system="Be brief.", max_tokens=50,
                           callbacks=Callbacks(on_step_finish=lambda step: seen.append(step.number)))
    with LoopbackServer(Response(text_body("ok", u=usage(7, 3)))) as srv:
        results = list(batch([{"id": f"s{i}", "prompt": f"item s{i}"} for i in range(3)], MODEL,
                             settings=settings, temperature=0.5, base_url=srv.url + "/v1", concurrency=2))
        bodies = [r.json() for r in srv.requests]
    assert [r.error for r in results] == [None] * 3
    for body in bodies:
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["temperature"] == 0.5 and body["max_tokens"] == 50
    assert seen == [1, 1, 1]  # the user's callback still runs beside the limiter's own


def test_a_wrong_field_fails_at_once() -> None:
    with pytest.raises(TypeError):
        batch([], MODEL, max_step=3)
    with pytest.raises(ValueError, match="max_steps"):
        batch([], MODEL, max_steps=0)


class _CountingRunner:
    """A real runner around the in-process one that counts the chats it ran (what a plugin's runner
    factory returns: run, stop, close)."""

    def __init__(self, job: BatchJob) -> None:
        self.job, self.inner, self.ran = job, ChatRunner.from_job(job), 0
        self.limiter = self.inner.limiter

    def run(self, item: BatchInput) -> BatchResult | None:
        self.ran += 1
        return self.inner.run(item)

    def stop(self) -> None:
        self.inner.stop()

    def close(self) -> None:
        self.inner.close()


def test_a_runner_factory_gets_the_job_and_runs_every_chat(tmp_path: Path) -> None:
    with LoopbackServer(Response(text_body("ok"))) as srv:
        run = batch([{"id": f"j{i}", "prompt": f"item j{i}"} for i in range(4)], MODEL, base_url=srv.url + "/v1",
                    concurrency=3, rpm=600, system="S", runner=_CountingRunner, output=tmp_path / "out.jsonl")
        results = list(run)
    runner = run.runner
    assert isinstance(runner, _CountingRunner) and runner.ran == 4 and len(results) == 4
    job = runner.job
    assert (job.model, job.concurrency, job.rpm, job.settings.system) == (MODEL, 3, 600, "S")
    assert run.limiter is runner.limiter
    assert sorted(d["id"] for d in read_lines(tmp_path / "out.jsonl")) == ["j0", "j1", "j2", "j3"]
