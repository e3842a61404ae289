"""A new user's first hour (issue 32): the offline ``test`` model everywhere a model is taken, one-line
errors, the run's outcome and pending approvals in ``final-json`` with exit code 3, install hints that
name the checkout's folders, and what ``./dev demo`` and the docs promise. Each test runs the user's
command (``python -m hookstream ...`` in a subprocess) or the public API."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hookstream import chat, get_model
from hookstream.plugin import install_command
from hookstream.testing import Reply, ToolCall, run_cli

ROOT = Path(__file__).resolve().parent.parent
NEVER = 120  # seconds: a hung child fails the test instead of hanging the suite

TOOLS = '''
from hookstream import tool

def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temperature_c": 18}

@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"

NOT_A_TOOL = 1
'''


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user with their own config directory, in a directory holding a tools module: the environment
    variables of their commands."""
    (tmp_path / "mytools.py").write_text(TOOLS)
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("HOOKSTREAM_")]:
        monkeypatch.delenv(name)
    return {"HOOKSTREAM_USER_DIR": str(tmp_path / "user"), "NO_COLOR": "1"}


def hookstream(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``hookstream ARGS`` in this process (the testing kit's runner): its exit code, stdout and stderr."""
    res = run_cli(args, input=stdin, env=env)
    return subprocess.CompletedProcess(list(args), res.exit_code, res.stdout, res.stderr)


def hookstream_process(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m hookstream ARGS`` in a process of its own: for what loads plugins anew or logs."""
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=cwd, timeout=NEVER)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line of a failed command, after checking there is no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- the test model ------------------------------------------------------------------------------------------

def test_chat_hi_with_the_test_model_then_continue(user: dict[str, str]) -> None:
    first = hookstream(user, "chat", "hi", "--model", "test")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == 'you said "hi" (turn 1)'
    more = hookstream(user, "chat", "more", "-c", "--model", "test")
    assert more.returncode == 0, more.stderr
    assert more.stdout.strip() == 'you said "more" (turn 2)'
    again = hookstream(user, "chat", "again", "-c")  # -c goes on with the conversation's own model
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == 'you said "again" (turn 3)'
    logs = hookstream(user, "logs")
    assert logs.returncode == 0, logs.stderr
    # Usage counted as words: what the test model was sent (1 + 7 + 13) and said (5 + 5 + 5).
    assert "6 messages  test:test  21 in / 15 out tokens  hi" in logs.stdout


def test_scripted_replies_call_a_tool_from_the_cli(user: dict[str, str]) -> None:
    env = {**user, "HOOKSTREAM_TEST_REPLIES": json.dumps(
        [{"tool": "get_weather", "args": {"city": "Paris"}}, "Sunny in Paris."])}
    done = hookstream(env, "chat", "Weather?", "--model", "test", "--tool", "mytools:get_weather",
                      "--output", "final-json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["text"] == "Sunny in Paris." and doc["outcome"] == "success" and doc["interrupts"] == []
    assert doc["usage"]["input_tokens"] > 0 and doc["usage"]["output_tokens"] > 0
    bad = hookstream({**user, "HOOKSTREAM_TEST_REPLIES": "not json"}, "chat", "hi", "--model", "test")
    assert bad.returncode == 2 and "HOOKSTREAM_TEST_REPLIES" in one_line_error(bad)


def test_the_test_model_from_python() -> None:
    assert chat("test", "hi").result().text == 'you said "hi" (turn 1)'

    def get_weather(city: str) -> dict[str, object]:
        """Current weather for a city."""
        return {"city": city, "temperature_c": 18}

    model = get_model("test", replies=[ToolCall("get_weather", {"city": "Paris"}), Reply("Sunny.")])
    result = chat(model, "Weather?", tools=[get_weather]).result()
    assert result.text == "Sunny." and result.steps[0].tool_calls[0].arguments == {"city": "Paris"}
    assert result.usage.output_tokens and result.usage.input_tokens
    assert get_model("test:named").model == "named"
    # Without replies every tool offered is called once, then their results are named.
    assert "get_weather returned" in chat("test", "go", tools=[get_weather]).result().text


def test_batch_with_the_test_model(user: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "one"}\n{"id": "b", "prompt": "two"}\n')
    done = hookstream(user, "batch", "in.jsonl", "--model", "test", "--output", "out.jsonl")
    assert done.returncode == 0, done.stderr
    lines = {d["id"]: d["text"] for d in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert lines == {"a": 'you said "one" (turn 1)', "b": 'you said "two" (turn 1)'}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """``hookstream serve --model test`` on a free port, for the module. (A run against ``hookstream serve
    --demo`` waiting for its approval is tests/test_agui_client.py's.)"""
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--model", "test", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        assert match, line + (proc.stderr.read() if proc.stderr else "")
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=NEVER)


def test_serve_with_the_test_model(served: str) -> None:
    run = {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
           "messages": [{"id": "m1", "role": "user", "content": "hello server"}]}
    with requests.post(served, json=run, headers={"Accept": "text/event-stream"}, timeout=NEVER) as response:
        assert response.status_code == 200
        body = response.text
    deltas = [json.loads(line[5:])["delta"] for line in body.splitlines()
              if line.startswith("data:") and '"TEXT_MESSAGE_CONTENT"' in line]
    assert "".join(deltas) == 'you said "hello server" (turn 1)'


# -- waiting for an approval ----------------------------------------------------------------------------------

def test_a_run_waiting_for_approval_says_so_and_exits_3(user: dict[str, str]) -> None:
    args = ["chat", "Delete notes.txt", "--model", "test", "--tool", "mytools:delete_file"]
    waiting = hookstream(user, *args, "--output", "final-json")
    assert waiting.returncode == 3, waiting.stderr
    doc = json.loads(waiting.stdout)
    assert doc["outcome"] == "interrupt"
    [pending] = doc["interrupts"]
    assert pending["kind"] == "approval" and pending["name"] == "delete_file"
    assert pending["arguments"] == {"path": "a"} and pending["tool_call_id"]
    assert f"waiting for approval of delete_file({{\"path\": \"a\"}}) [id {pending['id']}]" in waiting.stderr
    assert "resume with --approve" in waiting.stderr
    approved = hookstream(user, *args, "--approve", stdin="y\n")
    assert approved.returncode == 0, approved.stderr
    assert "delete_file returned deleted a" in approved.stdout


# -- one-line errors --------------------------------------------------------------------------------------------

def test_serve_on_a_port_in_use_is_one_line(user: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = hookstream(user, "serve", "--model", "test", "--port", str(port))
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in one_line_error(done)


def test_a_tool_that_is_not_callable_is_one_line(user: dict[str, str]) -> None:
    done = hookstream(user, "chat", "hi", "--model", "test", "--tool", "mytools:NOT_A_TOOL")
    assert done.returncode == 2
    assert "'mytools:NOT_A_TOOL' is int 1, not a function or a tool" in one_line_error(done)


def test_a_missing_recording_is_one_line(user: dict[str, str]) -> None:
    done = hookstream(user, "chat", "hi", "--model", "replay:no-such-folder")
    assert done.returncode == 2
    assert "no recording in 'no-such-folder' (no such directory)" in one_line_error(done)
    # serve builds its model elsewhere: an error nobody expected there is one line too, --debug shows where.
    served = hookstream(user, "serve", "--model", "replay:no-such-folder", "--port", "0")
    assert served.returncode == 1
    assert "FileNotFoundError: no recording in 'no-such-folder'" in one_line_error(served)
    debug = hookstream_process(user, "--debug", "serve", "--model", "replay:no-such-folder", "--port", "0")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


# -- replaying a file that is not a stream -------------------------------------------------------------------

@pytest.mark.parametrize(("content", "expected"), [
    (b"", "the file is empty: no SSE events found; is this an openai stream body?"),
    (b'{"model": "gpt-4o-mini", "messages": []}', "no SSE events found (the file is one JSON document"),
    (b"# Notes\n\nSome *markdown*.\n", "no SSE events found (the file is text that is not a stream); "
                                      "is this an openai stream body?"),
])
def test_replay_of_a_file_that_is_no_stream(user: dict[str, str], tmp_path: Path, content: bytes,
                                            expected: str) -> None:
    (tmp_path / "body").write_bytes(content)
    done = hookstream(user, "replay", "body", "--provider", "openai")
    assert done.returncode == 1
    assert expected in one_line_error(done)


def test_replay_as_the_wrong_provider_names_the_right_one(user: dict[str, str]) -> None:
    openai_body = ROOT / "core" / "hookstream" / "_demo" / "step2.sse"
    done = hookstream(user, "replay", str(openai_body), "--provider", "anthropic")
    assert done.returncode == 1
    assert "it looks like an openai stream: try --provider openai" in one_line_error(done)
    pytest.importorskip("hookstream_bedrock")
    bedrock = next((ROOT / "plugins" / "hookstream-bedrock" / "tests" / "recordings").glob("*.eventstream"))
    done = hookstream(user, "replay", str(bedrock), "--provider", "openai")
    assert done.returncode == 1
    assert "looks like an AWS event-stream (Amazon Bedrock) body" in one_line_error(done)
    assert "use --provider bedrock" in done.stderr


# -- install hints name the checkout ----------------------------------------------------------------------------

def test_install_hints_name_the_checkouts_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    assert install_command("hookstream-ollama") == "hookstream install ./plugins/hookstream-ollama"
    assert install_command("hookstream-ray[ray]") == "hookstream install './plugins/hookstream-ray[ray]'"
    assert install_command("hookstream[serve]") in ("hookstream install -e '.[serve]'",
                                                    "hookstream install '.[serve]'")
    monkeypatch.chdir(tmp_path)  # outside the checkout: the absolute path
    assert install_command("hookstream-ollama") == f"hookstream install {ROOT / 'plugins' / 'hookstream-ollama'}"
    assert install_command("hookstream-nosuch") == "hookstream install hookstream-nosuch"


def test_install_by_name_from_a_checkout_installs_its_folder(user: dict[str, str]) -> None:
    # pip refuses the unknown option at once, after hookstream has said which folder it hands to it.
    done = hookstream(user, "install", "hookstream-ollama", "--no-such-pip-option")
    assert done.returncode != 0
    folder = ROOT / "plugins" / "hookstream-ollama"
    assert f"hookstream install: hookstream-ollama from this checkout: {folder}" in done.stderr


# -- what ./dev demo installs and the docs say -----------------------------------------------------------------

def test_dev_demo_installs_every_plugin_and_the_docs_list_each() -> None:
    folders = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())
    demo = (ROOT / "requirements" / "demo.txt").read_text()
    installing = (ROOT / "docs" / "installing-plugins.md").read_text()
    for folder in folders:
        assert re.search(rf"^-e plugins/{folder}\b", demo, re.M), f"requirements/demo.txt misses {folder}"
        assert f"`plugins/{folder}`" in installing, f"docs/installing-plugins.md misses {folder}"
    for page in (ROOT / "docs" / "providers").glob("*.md"):
        text = page.read_text()
        assert "\n## Install\n" in text and "hookstream install ./plugins/hookstream-" in text, page.name
        assert "\n## Offline: a loopback server\n" in text, page.name


def test_dev_test_says_it_installs_system_packages_before_it_does() -> None:
    dev = (ROOT / "dev").read_text()
    said = dev.index("installing system packages with apt-get")
    assert said < dev.index("scripts/install-browser-deps") and said < dev.index("scripts/install-postgres")
    readme = (ROOT / "README.md").read_text()
    assert "./dev test` installs more, and says so before it starts: system packages with `apt-get`" in readme
    for script in ("install-browser-deps", "install-postgres"):
        text = (ROOT / "scripts" / script).read_text()
        assert text.index("apt-get (a system package)") < text.index("apt-get update"), script


def test_dev_demo_a_second_time_installs_nothing(tmp_path: Path) -> None:
    # ./dev demo runs under `set -euo pipefail`: its check of the packaging files must work on this
    # checkout's layout (a glob that matches nothing once ended the script before the demo). With the
    # stamp current and a hookstream in .venv, it runs the demo at once and calls no pip.
    import shutil

    for name in ("dev", "setup.cfg", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    for project in (ROOT / "plugins").glob("*/pyproject.toml"):
        (tmp_path / "plugins" / project.parent.name).mkdir(parents=True)
        shutil.copy(project, tmp_path / "plugins" / project.parent.name / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "hookstream").write_text('#!/bin/sh\necho "demo ran with: $*"\n')
    (bin_dir / "hookstream").chmod(0o755)
    stamp = subprocess.run(["bash", "-c", 'source <(sed -n "/^install_inputs()/,/^}/p" dev); install_inputs demo'],
                           cwd=tmp_path, env={**os.environ, "PY": sys.executable}, capture_output=True, text=True)
    assert stamp.returncode == 0 and len(stamp.stdout.strip()) == 64, stamp.stderr
    (tmp_path / ".venv" / ".demo-installed").write_text(stamp.stdout)
    done = subprocess.run(["./dev", "demo", "--output", "events"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=60)
    assert (done.returncode, done.stdout) == (0, "demo ran with: demo --output events\n"), done.stderr
