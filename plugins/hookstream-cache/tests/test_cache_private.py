"""The cache keeps to its owner (issues 41.2 and 38.9): the offline ``test`` model with ``--cache`` opens no
socket and its second run is a hit; an entry is served only to a caller holding the credential it was
asked with (an HMAC fingerprint in the key, never the key) and, on ``serve``, only to the principal that
asked unless ``--cache-shared``; the file is ``0600`` in ``0700`` directories whatever the umask; a failed
batch line is retried by a rerun. Real processes and a real loopback server."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.conformance import require_corpus
from hookstream_cache import Cache

NEVER = 120

# Runs the user's commands in this child with an audit hook that records every name the process resolves
# and every socket it connects, binds or sends on (urllib3 makes one IPv6 socket at import, to probe,
# and never uses it): the test model must do none of that, cache or not.
AUDITED = r'''
import sys
opened = []
def hook(event, args):
    if event == "socket.bind" and args[1][:2] == ("::1", 0):
        return  # urllib3's import-time IPv6 probe
    if event in ("socket.getaddrinfo", "socket.connect", "socket.gethostbyname", "socket.bind", "socket.sendto",
                 "socket.sendmsg"):
        opened.append(f"{event} {args!r}")
sys.addaudithook(hook)
import json
from hookstream.testing import run_cli
codes = []
for args in json.loads(sys.argv[1]):
    res = run_cli(args)
    codes.append(res.exit_code)
    sys.stderr.write(res.output)
from hookstream import chat
text = chat("test", "from python", plugins=["cache"]).result().text
print(json.dumps({"codes": codes, "opened": opened, "text": text}))
'''


def env_for(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSTREAM_") and not k.endswith("_API_KEY")}
    return {**clean, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg"),
            "HOOKSTREAM_USER_DIR": str(tmp_path / "user"), "NO_COLOR": "1"}


def stats(tmp_path: Path) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-m", "hookstream", "cache", "stats", "--json"], env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=NEVER)
    assert done.returncode == 0, done.stderr
    doc: dict[str, int] = json.loads(done.stdout)
    return doc


def test_the_test_model_with_the_cache_opens_no_socket_and_hits_the_second_time(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "one"}\n{"id": "b", "prompt": "two"}\n')
    runs = [["chat", "hi", "--model", "test", "--cache"], ["chat", "hi", "--model", "test", "--cache"],
            ["chat", "hi", "--model", "test", "--plugin", "cache"],
            ["batch", str(tmp_path / "in.jsonl"), "--model", "test", "--cache", "--output", str(tmp_path / "o1.jsonl")],
            ["batch", str(tmp_path / "in.jsonl"), "--model", "test", "--cache", "--output", str(tmp_path / "o2.jsonl")]]
    proc = subprocess.run([sys.executable, "-c", AUDITED, json.dumps(runs)], env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["codes"] == [0] * len(runs), proc.stderr
    assert out["opened"] == []
    assert out["text"] == 'you said "from python" (turn 1)'
    assert proc.stderr.count('you said "hi" (turn 1)') == 3
    assert "***" not in proc.stderr
    figures = stats(tmp_path)
    # chat: 1 miss then 2 hits; batch: 2 misses then 2 hits; python: 1 miss.
    assert (figures["entries"], figures["hits"], figures["misses"]) == (4, 4, 4)
    lines = [json.loads(x) for x in (tmp_path / "o2.jsonl").read_text().splitlines()]
    assert sorted(d["text"] for d in lines) == ['you said "one" (turn 1)', 'you said "two" (turn 1)']


def test_a_failed_batch_line_is_not_done_a_rerun_retries_it(tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text('{"id": "a", "prompt": "one"}\n{"id": "b", "prompt": "two"}\n')
    out.write_text('{"id":"a","text":"kept","error":null}\n'
                   '{"id":"b","text":"","error":{"code":"connect_error","message":"cannot connect"}}\n')
    done = subprocess.run([sys.executable, "-m", "hookstream", "batch", str(inp), "--model", "test", "--output",
                           str(out)], env=env_for(tmp_path), capture_output=True, text=True, timeout=NEVER)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["id"] for d in lines] == ["a", "b"]
    assert lines[0]["text"] == "kept" and lines[1]["error"] is None and lines[1]["text"] == 'you said "two" (turn 1)'


def body(name: str) -> bytes:
    return (require_corpus() / f"{name}.sse").read_bytes()


def ask(srv: LoopbackServer, cache: Cache, key: str) -> str:
    with get_model("openai:gpt-4o-mini", base_url=srv.url + "/v1", api_key=key) as model:
        result = chat(model, "Weather?", plugins=[cache]).result()
    assert result.error is None, result.error
    return result.text


def test_entries_differ_by_credential_and_the_key_never_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    keys = ["sk-test-ALICE-0123456789", "sk-test-BOBBY-0123456789"]
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        ask(srv, Cache(path), keys[0])
        ask(srv, Cache(path), keys[1])  # another key: the provider is asked (it may refuse that key)
        assert len(srv.requests) == 2
        ask(srv, Cache(path), keys[0])
        ask(srv, Cache(path), keys[1])
        assert len(srv.requests) == 2  # each key's own entry
    Cache(path).store.close()
    for p in tmp_path.iterdir():
        data = p.read_bytes()
        assert not any(k.encode() in data or k[8:].encode() in data for k in keys)


def test_entries_differ_by_principal_unless_shared(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    per = Cache(path, per_principal=True)
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv:
        ask(srv, per.for_principal("alice"), "sk-test-SAME-0123456789")
        ask(srv, per.for_principal("bob"), "sk-test-SAME-0123456789")
        ask(srv, per.for_principal("alice"), "sk-test-SAME-0123456789")
        assert len(srv.requests) == 2
        shared = Cache(path)
        assert shared.for_principal("carol") is shared
        ask(srv, shared.for_principal("carol"), "sk-test-SAME-0123456789")
        ask(srv, shared.for_principal("dave"), "sk-test-SAME-0123456789")
        assert len(srv.requests) == 3


@contextmanager
def serving(tmp_path: Path, upstream: str, *extra: str) -> Iterator[str]:
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice alice\ntok-bob bob\n")
    env = {**env_for(tmp_path), "OPENAI_API_KEY": "sk-test-SERVER-0123456789"}
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--model", "openai:gpt-4o-mini",
                             "--base-url", upstream + "/v1", "--port", "0", "--auth-tokens", str(tokens), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        assert match, line + (proc.stderr.read() if proc.stderr else "")
        yield match.group(1).rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=NEVER)


def post_run(url: str, token: str, thread: str) -> str:
    run = {"threadId": thread, "runId": f"r-{thread}", "state": {}, "tools": [], "context": [], "forwardedProps": {},
           "messages": [{"id": "m1", "role": "user", "content": "Weather?"}]}
    with requests.post(url, json=run, headers={"Accept": "text/event-stream", "Authorization": f"Bearer {token}"},
                       timeout=NEVER) as response:
        assert response.status_code == 200, response.text
        return response.text


@pytest.mark.parametrize(("extra", "upstream_calls"), [((), 2), (("--cache-shared",), 1)])
def test_serve_keeps_each_principals_entries_unless_shared(tmp_path: Path, extra: tuple[str, ...],
                                                            upstream_calls: int) -> None:
    with LoopbackServer([Response(body("openai-chat__text"))]) as srv, \
            serving(tmp_path, srv.url, "--cache-path", str(tmp_path / "c.sqlite3"), *extra) as url:
        first = post_run(url, "tok-alice", "t1")
        post_run(url, "tok-bob", "t2")
        again = post_run(url, "tok-alice", "t3")
        assert "RUN_FINISHED" in first and "RUN_FINISHED" in again
        assert len(srv.requests) == upstream_calls


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_the_file_is_0600_in_a_0700_directory_under_umask_000(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        cache = Cache(tmp_path / "made" / "here" / "c.sqlite3")
        cache.store.stats()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "made" / "here").stat().st_mode) == 0o700
    for p in (tmp_path / "made" / "here").iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    cache.store.close()
    old = tmp_path / "old.sqlite3"
    old.touch(mode=0o644)
    os.chmod(old, 0o644)
    Cache(old).store.stats()
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    Cache(old).store.close()
