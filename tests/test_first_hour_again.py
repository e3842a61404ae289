"""A new user's first hour, again (issue 41): what the README and ``docs/`` show, run as a user runs it
(a snippet copied from README.md in a Python process of its own, ``python -m hookstream ...`` piped to
``head``), and the CLI habits carried over from simonw/llm."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NEVER = 120  # seconds: a hung child fails the test instead of hanging the suite


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user with their own config and cache directories and no provider keys."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSTREAM_") and not k.endswith("_API_KEY")}
    return {**clean, "HOOKSTREAM_USER_DIR": str(tmp_path / "user"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "NO_COLOR": "1"}


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def readme_block(containing: str, lang: str = "python") -> str:
    """The README's fenced ``lang`` block holding ``containing``."""
    text = (ROOT / "README.md").read_text("utf-8")
    blocks = [b for b in re.findall(rf"```{lang}\n(.*?)```", text, re.S) if containing in b]
    assert len(blocks) == 1, f"one README block with {containing!r} expected, found {len(blocks)}"
    return blocks[0]


# -- 41.1: iter_text() raises the run's error ------------------------------------------------------------------

def test_the_readme_iter_text_snippet_fails_loudly_with_nothing_listening(env: dict[str, str], tmp_path: Path) -> None:
    snippet = readme_block(".iter_text()")
    assert "localhost:11434" in snippet
    # The README's own port may have an Ollama running on a developer's machine: a port nobody listens on.
    script = tmp_path / "snippet.py"
    script.write_text(snippet.replace("localhost:11434", f"127.0.0.1:{free_port()}"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=NEVER)
    assert proc.returncode != 0
    assert "ConnectError: cannot connect to http://127.0.0.1:" in proc.stderr, proc.stderr


def test_iter_text_raises_the_typed_error_after_the_text_so_far() -> None:
    from hookstream import HookstreamError, chat
    from hookstream.testing import FunctionModel, ModelError, Reply

    failing = Reply("partial answer", error=ModelError(500, "boom", type="server_error"))
    stream = chat(FunctionModel(lambda m, i: failing), "hi")
    seen: list[str] = []
    with pytest.raises(HookstreamError) as caught:
        for delta in stream.iter_text():
            seen.append(delta)
    assert "".join(seen) == "partial answer"
    assert stream.result().error is caught.value and stream.result().outcome == "error"


def test_iter_text_of_a_cancelled_or_broken_off_run_raises_nothing() -> None:
    from hookstream import chat
    from hookstream.testing import TestModel

    stream = chat(TestModel(text="one two three"), "hi")
    for _ in stream.iter_text():
        break
    assert stream.result().outcome == "cancelled"


# -- 41.2: the key's redaction masks the key, not the same letters in a host name -----------------------------

def test_redaction_masks_the_key_itself_not_a_word_that_contains_it() -> None:
    from hookstream.plugin import Secret

    assert Secret("fake").redact("cannot connect to http://fake-model.invalid/calls") == (
        "cannot connect to http://fake-model.invalid/calls")
    assert Secret("sk-abc123").redact("Incorrect API key provided: sk-abc123.") == "Incorrect API key provided: ***."
    assert Secret("sk-abc123").redact('{"key":"sk-abc123"} key=sk-abc123&x') == '{"key":"***"} key=***&x'


# -- 41.5: a closed stdout ends every command quietly, exit 0 ------------------------------------------------

PIPED = [["models"], ["chat", "hi", "--model", "test", "--output", "events"], ["demo", "--output", "events"]]


@pytest.mark.parametrize("args", PIPED, ids=lambda a: a[0])
def test_piped_to_head_ends_quietly(env: dict[str, str], args: list[str]) -> None:
    command = " ".join([sys.executable, "-m", "hookstream", *args])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True,
                          env=env, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 1


@pytest.mark.parametrize("args", PIPED, ids=lambda a: a[0])
def test_a_stdout_closed_before_the_first_line_ends_quietly(env: dict[str, str], args: list[str]) -> None:
    # The reader is gone before anything is written: every write meets EPIPE, whatever the timing.
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "hookstream", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=NEVER)
    finally:
        os.close(write)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


# -- 41.4 and 41.6: MCP after ./dev demo, and the test model does not run a plugin's tools unasked --------------

def readme_command(containing: str) -> list[str]:
    """The README console line holding ``containing``, as argv (the ``$`` and the trailing comment dropped)."""
    import shlex

    text = (ROOT / "README.md").read_text("utf-8")
    lines = [line for line in text.splitlines() if line.startswith("$ hookstream") and containing in line]
    assert len(lines) == 1, lines
    return shlex.split(lines[0][2:], comments=True)


def test_the_readme_mcp_sample_runs_with_what_dev_demo_installs(env: dict[str, str]) -> None:
    argv = readme_command("--mcp mcp-server-time")
    assert "mcp-server-time" in (ROOT / "requirements" / "demo.txt").read_text()
    # The README's model needs a key: the offline test model, scripted to call the tool the prompt asks for.
    argv[argv.index("--model") + 1] = "test"
    replies = '[{"tool": "get_current_time", "args": {"timezone": "Asia/Tokyo"}}, "It is evening in Tokyo."]'
    bindir = str(Path(sys.executable).parent)  # where ./dev demo's console scripts are, on the user's PATH
    proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=NEVER,
                          env={**env, "HOOKSTREAM_TEST_REPLIES": replies, "PATH": bindir + os.pathsep + env["PATH"]})
    assert proc.returncode == 0, proc.stderr
    assert '"timezone": "Asia/Tokyo"' in proc.stdout and "It is evening in Tokyo." in proc.stdout


def test_the_test_model_does_not_call_an_mcp_servers_tools_unless_told(env: dict[str, str]) -> None:
    server = f"{sys.executable} -m mcp_server_time"
    refused = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "--model", "test", "--mcp", server],
                             capture_output=True, text=True, env=env, timeout=NEVER)
    assert refused.returncode == 2
    assert "convert_time, get_current_time" in refused.stderr and "--test-calls-plugin-tools" in refused.stderr
    assert "[tool call]" not in refused.stdout
    allowed = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "--model", "test", "--mcp", server,
                              "--test-calls-plugin-tools"], capture_output=True, text=True, env=env, timeout=NEVER)
    assert allowed.returncode == 0, allowed.stderr
    assert "[tool call] get_current_time" in allowed.stdout and "[tool call] convert_time" in allowed.stdout


def test_an_mcp_server_that_dies_at_start_is_quoted_in_the_error(env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "--model", "test", "--mcp",
                           f"{sys.executable} -m mcp_server_time --local-timezone Nowhere/Bad"],
                          capture_output=True, text=True, env=env, timeout=NEVER)
    assert proc.returncode == 1
    error = [line for line in proc.stderr.splitlines() if line.startswith("Error: MCP server")]
    assert len(error) == 1, proc.stderr
    assert "the server said: Error: invalid --local-timezone 'Nowhere/Bad'" in error[0]
