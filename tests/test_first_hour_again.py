"""A new user's first hour, again (issue 41): what the README and ``docs/`` show, run as a user runs it
(a snippet copied from README.md in a Python process of its own, ``python -m hookstream ...`` piped to
``head``), and the CLI habits carried over from simonw/llm."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from port_kit import refused_port

ROOT = Path(__file__).resolve().parent.parent
NEVER = 120  # seconds: a hung child fails the test instead of hanging the suite


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user with their own config and cache directories and no provider keys."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSTREAM_") and not k.endswith("_API_KEY")}
    return {**clean, "HOOKSTREAM_USER_DIR": str(tmp_path / "user"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "NO_COLOR": "1"}


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
    with refused_port() as port:
        script.write_text(snippet.replace("localhost:11434", f"127.0.0.1:{port}"))
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                              timeout=NEVER)
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


# -- 41.7: tokens and the test / default model ----------------------------------------------------------------

def hookstream(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``hookstream ARGS`` in this process (the testing kit's runner)."""
    from hookstream.testing import run_cli

    res = run_cli(args, input=stdin, env=env)
    return subprocess.CompletedProcess(list(args), res.exit_code, res.stdout, res.stderr)


def test_tokens_takes_the_test_model_and_the_default_model(env: dict[str, str]) -> None:
    from hookstream import count_tokens

    assert count_tokens("test", "hello there world").model == "test:test"
    done = hookstream(env, "tokens", "hello there world", "--model", "test", "--json")
    assert done.returncode == 0, done.stderr
    assert json_of(done)["model"] == "test:test"
    assert hookstream(env, "models", "default", "test").returncode == 0
    done = hookstream(env, "tokens", "hello there world", "--json")
    assert done.returncode == 0, done.stderr
    assert json_of(done)["model"] == "test:test"


def json_of(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    import json

    doc: dict[str, object] = json.loads(done.stdout)
    return doc


# -- 41.8: every plugin option and command says what to install -------------------------------------------------

@pytest.mark.parametrize(("args", "dist"), [
    (["chat", "hi", "--model", "test", "--cache"], "hookstream-cache"),
    (["batch", "in.jsonl", "--model", "test", "--output", "o.jsonl", "--cache-path", "c.db"], "hookstream-cache"),
    (["serve", "--model", "test", "--cache-shared"], "hookstream-cache"),
    (["chat", "hi", "--model", "test", "--compact"], "hookstream-compaction"),
    (["chat", "hi", "--model", "test", "--tool-search"], "hookstream-toolsearch"),
    (["chat", "hi", "--model", "test", "--mcp", "mcp-server-time"], "hookstream-mcp"),
    (["cache", "stats"], "hookstream-cache"),
])
def test_a_plugin_option_or_command_without_its_plugin_names_what_to_install(
        env: dict[str, str], args: list[str], dist: str) -> None:
    from hookstream.plugin import install_command

    # A process of its own: the plugins blocked are read when the registry loads, once per process.
    done = subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True, timeout=NEVER,
                          env={**env, "HOOKSTREAM_BLOCK_PLUGINS": "cache,compaction,tool-search,mcp"})
    assert done.returncode == 2
    assert f"needs the {dist} plugin: {install_command(dist)}" in done.stderr
    assert "Did you mean" not in done.stderr and "No such" not in done.stderr


# -- 41.9: simonw/llm habits -----------------------------------------------------------------------------------

def test_a_bare_model_name_the_catalogue_knows_gets_its_provider(env: dict[str, str]) -> None:
    done = hookstream(env, "chat", "hi", "-m", "gpt-4o-mini", "--output", "final-json")
    assert done.returncode == 1
    assert "no API key for the openai provider" in done.stdout  # resolved to openai:gpt-4o-mini
    unknown = hookstream(env, "chat", "hi", "-m", "no-such-model-anywhere")
    assert unknown.returncode == 2 and "PROVIDER:MODEL" in unknown.stderr


def test_key_and_model_options_reach_the_provider(env: dict[str, str]) -> None:
    from hookstream.testing import LoopbackServer, Response
    from hookstream.testing.conformance import require_corpus

    body = (require_corpus() / "openai-chat__text.sse").read_bytes()
    with LoopbackServer([Response(body)]) as srv:
        done = hookstream(env, "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url", srv.url + "/v1",
                          "--key", "sk-test-GIVEN-0123456789", "-o", "temperature", "0.25", "-o", "top_p", "0.5",
                          "-o", "seed", "7", "--output", "final-json")
        assert done.returncode == 0, done.stderr
        hookstream(env, "keys", "set", "work", stdin="sk-test-STORED-0123456789\n")
        stored = hookstream(env, "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url", srv.url + "/v1",
                            "--key", "work")
        assert stored.returncode == 0, stored.stderr
    first, second = srv.requests
    assert first.headers["Authorization"] == "Bearer sk-test-GIVEN-0123456789"
    assert second.headers["Authorization"] == "Bearer sk-test-STORED-0123456789"
    sent = first.json()
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.25, 0.5, 7)
    bad = hookstream(env, "chat", "hi", "-m", "test", "-o", "temperature", "hot")
    assert bad.returncode == 2 and "temperature is a number" in bad.stderr


def test_logs_q_finds_the_conversations_that_mention_a_text(env: dict[str, str]) -> None:
    for prompt in ("tell me about Paris", "and about Lisbon", "PARIS again"):
        assert hookstream(env, "chat", prompt, "-m", "test").returncode == 0
    done = hookstream(env, "logs", "-q", "paris", "--json")
    assert done.returncode == 0, done.stderr
    import json

    titles = [t["title"] for t in json.loads(done.stdout)]
    assert len(titles) == 2 and not any("Lisbon" in (t or "") for t in titles)
    both = json.loads(hookstream(env, "logs", "-q", "paris", "-q", "again", "--json").stdout)
    assert len(both) == 1


# -- 38.14: the user directory is the user's ------------------------------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_keys_set_under_umask_000_makes_private_dirs_and_a_world_readable_file_is_warned(tmp_path: Path,
                                                                                         env: dict[str, str]) -> None:
    import stat

    user = tmp_path / "deep" / "user"
    env = {**env, "HOOKSTREAM_USER_DIR": str(user)}
    proc = subprocess.run(["sh", "-c", f"umask 000 && {sys.executable} -m hookstream keys set openai"],
                          input="sk-test-UMASK-0123456789\n", capture_output=True, text=True, env=env, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((tmp_path / "deep").stat().st_mode) == 0o700
    assert stat.S_IMODE(user.stat().st_mode) == 0o700
    assert stat.S_IMODE((user / "keys.json").stat().st_mode) == 0o600
    quiet = subprocess.run([sys.executable, "-m", "hookstream", "keys", "list"], capture_output=True, text=True,
                           env=env, timeout=NEVER)
    assert "not private" not in quiet.stderr
    (user / "keys.json").chmod(0o644)
    warned = subprocess.run([sys.executable, "-m", "hookstream", "keys", "list"], capture_output=True, text=True,
                            env=env, timeout=NEVER)
    assert warned.returncode == 0 and warned.stdout.strip() == "openai"
    assert "can be read by other users" in warned.stderr and "sk-test-UMASK" not in warned.stderr


# -- 41.10: smaller things -------------------------------------------------------------------------------------

def test_replay_without_provider_uses_the_one_the_body_looks_like(env: dict[str, str], tmp_path: Path) -> None:
    from hookstream.testing.conformance import require_corpus

    body = require_corpus() / "openai-chat__text.sse"
    done = hookstream(env, "replay", str(body))
    assert done.returncode == 0, done.stderr
    assert "replaying as --provider openai" in done.stderr
    assert done.stdout.startswith("I'm unable to provide real-time weather updates")
    (tmp_path / "x.txt").write_text("hello\n")
    unknown = hookstream(env, "replay", str(tmp_path / "x.txt"))
    assert unknown.returncode == 2 and "give --provider NAME" in unknown.stderr


def test_tool_search_prints_no_debug_line(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "twotools.py").write_text('def add_one(x: int) -> int:\n    """Add one."""\n    return x + 1\n\n\n'
                                          'def sub_one(x: int) -> int:\n    """Subtract one."""\n    return x - 1\n')
    proc = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "-m", "test", "--tool", "twotools:add_one",
                           "--tool", "twotools:sub_one", "--tool-search", "--tool-search-threshold", "0"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path,
                          timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    assert "[tool call] search_tools" in proc.stdout
    assert "DEBUG" not in proc.stderr


def test_the_quickstart_approval_example_shows_the_call_the_demo_makes(env: dict[str, str]) -> None:
    text = (ROOT / "docs" / "quickstart.md").read_text("utf-8")
    shown = re.search(r"^waiting for approval of (.*) \[id \.\.\.\]$", text, re.M)
    assert shown, "docs/quickstart.md shows no waiting line"
    server = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--demo", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        url = re.search(r"listening on (http://\S+)", server.stdout.readline())
        assert url
        proc = subprocess.run([sys.executable, "-m", "hookstream", "chat", "Weather in Paris and Lyon?", "--model",
                               f"agui:{url.group(1)}"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              env=env, timeout=NEVER)
    finally:
        server.terminate()
        server.wait(timeout=NEVER)
    assert proc.returncode == 3, proc.stderr
    assert f"waiting for approval of {shown.group(1)} [id " in proc.stderr


def test_timing_on_the_test_model_reports_no_made_up_rate(env: dict[str, str]) -> None:
    done = hookstream(env, "chat", "hi", "-m", "test", "--timing")
    assert done.returncode == 0, done.stderr
    assert "no tokens/s (the test model answers in-process)" in done.stderr
    assert "output tokens/s" not in done.stderr


# -- 41.10: a doc block that needs an earlier one is on a page that says its blocks run in order ---------------

def _bound_and_used(code: str) -> tuple[set[str], set[str]]:
    import ast

    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else used).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, used


def test_a_page_whose_blocks_build_on_each_other_says_so_at_the_top() -> None:
    import builtins

    sys.path.insert(0, str(ROOT / "tests"))
    from test_docs_samples import DOCS, pages, samples

    unsaid = []
    for page in pages():
        earlier: set[str] = set()
        needs_order = False
        for _, code in samples(page):
            bound, used = _bound_and_used(code)
            needs_order |= bool((used - bound - set(dir(builtins))) & earlier)
            earlier |= bound
        top = "\n".join(page.read_text("utf-8").splitlines()[:8])
        if needs_order and "blocks on this page run in order" not in top:
            unsaid.append(str(page.relative_to(DOCS)))
    assert unsaid == []
