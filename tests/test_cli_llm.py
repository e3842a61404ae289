"""The command line as a simonw/llm user expects it (issue 32, points 6 and 7): a default model
(``hookstream models default``), ``-c`` continuing with the conversation's own model, the prompt from
stdin, ``-m``/``-s``, an interactive ``hookstream chat`` on a terminal, stored keys (``hookstream keys``,
never printed), ``hookstream logs`` with model, tokens and cost, and a catalogue of chat models only.

Each test runs the user's command: in-process through :func:`hookstream.testing.run_cli`, the interactive
chat as a real process on a pseudo-terminal. Models answer from a real loopback HTTP server."""

from __future__ import annotations

import json
import os
import pty
import selectors
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_kit import text_body, usage
from hookstream.testing import LoopbackServer, Response, run_cli

KEY = "sk-stored-Zq81xV"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "user"


def hs(user_dir: Path, *args: str, input: str | None = None, **env: str | None) -> Any:
    """``hookstream ARGS`` with its own user directory and no default model or key from the caller's shell."""
    base: dict[str, str | None] = {"HOOKSTREAM_USER_DIR": str(user_dir), "HOOKSTREAM_MODEL": None,
                                   "OPENAI_API_KEY": None, "NO_COLOR": "1"}
    return run_cli(list(args), input=input, env={**base, **env})


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    answers = [Response(text_body(f"answer {i}", u=usage(10 + i, 5))) for i in range(8)]
    with LoopbackServer(answers) as srv:
        yield srv


def sent(srv: LoopbackServer, i: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = srv.requests[i].json()
    return body


# -- the default model, -c, -m, -s ------------------------------------------------------------------


def test_chat_without_a_model_says_how_to_set_one_then_uses_the_default(user_dir: Path,
                                                                         server: LoopbackServer) -> None:
    base = server.url + "/v1"
    none = hs(user_dir, "chat", "hi", "--base-url", base, OPENAI_API_KEY="k")
    assert none.exit_code == 2 and "hookstream models default PROVIDER:MODEL" in none.output
    assert server.requests == []
    shown = hs(user_dir, "models", "default")
    assert shown.exit_code == 1 and "no default model" in shown.output
    assert hs(user_dir, "models", "default", "openai:gpt-4o-mini").exit_code == 0
    assert hs(user_dir, "models", "default").stdout.strip() == "openai:gpt-4o-mini"
    done = hs(user_dir, "chat", "hi", "--base-url", base, OPENAI_API_KEY="k")
    assert done.exit_code == 0, done.output
    assert sent(server)["model"] == "gpt-4o-mini" and "answer 0" in done.stdout
    # $HOOKSTREAM_MODEL wins over the stored default.
    env = hs(user_dir, "models", "default", HOOKSTREAM_MODEL="openai:gpt-4.1")
    assert env.stdout.strip() == "openai:gpt-4.1"
    assert hs(user_dir, "chat", "hi", "--base-url", base, OPENAI_API_KEY="k", HOOKSTREAM_MODEL="openai:gpt-4.1",
              ).exit_code == 0
    assert sent(server)["model"] == "gpt-4.1"


def test_continue_uses_the_conversations_model_and_short_flags_work(user_dir: Path, server: LoopbackServer) -> None:
    base = server.url + "/v1"
    hs(user_dir, "models", "default", "openai:the-default")
    first = hs(user_dir, "chat", "Capital of France?", "-m", "openai:gpt-4o-mini", "-s", "Be brief.",
               "--base-url", base, OPENAI_API_KEY="k")
    assert first.exit_code == 0, first.output
    assert sent(server)["messages"][0] == {"role": "system", "content": "Be brief."}
    again = hs(user_dir, "chat", "And Spain?", "-c", "--base-url", base, OPENAI_API_KEY="k")
    assert again.exit_code == 0, again.output
    body = sent(server)
    assert body["model"] == "gpt-4o-mini"  # the conversation's, not the default
    assert [m["content"] for m in body["messages"] if m["role"] != "system"] == [
        "Capital of France?", "answer 0", "And Spain?"]
    # -m still wins over the conversation's model.
    assert hs(user_dir, "chat", "And Italy?", "-c", "-m", "openai:gpt-4.1", "--base-url", base,
              OPENAI_API_KEY="k").exit_code == 0
    assert sent(server)["model"] == "gpt-4.1"


# -- the prompt from stdin --------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "piped", "prompt"), [
    ((), "hi from a pipe\n", "hi from a pipe\n"),
    (("-",), "dash reads stdin", "dash reads stdin"),
    (("explain this",), "def f(): pass\n", "def f(): pass\n explain this"),  # llm: piped text, then the argument
])
def test_the_prompt_comes_from_stdin_as_llm_reads_it(user_dir: Path, server: LoopbackServer, args: tuple[str, ...],
                                                     piped: str, prompt: str) -> None:
    res = hs(user_dir, "chat", *args, "-m", "openai:gpt-4o-mini", "--base-url", server.url + "/v1",
             input=piped, OPENAI_API_KEY="k")
    assert res.exit_code == 0, res.output
    assert sent(server)["messages"][-1] == {"role": "user", "content": prompt}


def test_empty_stdin_and_no_prompt_is_a_usage_error(user_dir: Path, server: LoopbackServer) -> None:
    res = hs(user_dir, "chat", "-m", "openai:gpt-4o-mini", "--base-url", server.url + "/v1", input="",
             OPENAI_API_KEY="k")
    assert res.exit_code == 2 and "PROMPT is empty" in res.output and server.requests == []


# -- the interactive chat, on a real pseudo-terminal ---------------------------------------------------


def _read_until(fd: int, marker: bytes, seen: bytearray, start: int = 0) -> int:
    """Read the terminal into ``seen`` until ``marker`` shows after ``start``; where it ends."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    while marker not in seen[start:]:
        sel.select()
        try:
            data = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        seen += data
    return seen.find(marker, start) + len(marker)


def test_chat_on_a_terminal_without_a_prompt_is_an_interactive_conversation(user_dir: Path,
                                                                            server: LoopbackServer) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "HOOKSTREAM_USER_DIR": str(user_dir), "OPENAI_API_KEY": "k", "NO_COLOR": "1",
           "TERM": "dumb"}
    env.pop("HOOKSTREAM_MODEL", None)
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "chat", "-m", "openai:gpt-4o-mini", "--base-url",
                             server.url + "/v1"], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    seen = bytearray()
    try:
        at = _read_until(master, b"> ", seen)
        assert b"Chatting with openai:gpt-4o-mini" in seen
        os.write(master, b"Capital of France?\n")
        at = _read_until(master, b"> ", seen, _read_until(master, b"answer 0", seen, at))
        os.write(master, b"!multi\nline one\nline two\n!end\n")
        _read_until(master, b"> ", seen, _read_until(master, b"answer 1", seen, at))
        os.write(master, b"quit\n")
        code = proc.wait(timeout=60)  # a safety net for a hung child, not a speed bound
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert code == 0, seen.decode(errors="replace")
    second = [m["content"] for m in sent(server, 1)["messages"]]
    assert second == ["Capital of France?", "answer 0", "line one\nline two"]  # one conversation
    assert len(server.requests) == 2
    listed = hs(user_dir, "logs", "--json")
    assert json.loads(listed.stdout)[0]["messages"] == 4


# -- stored keys ------------------------------------------------------------------------------------


def test_a_stored_key_is_used_kept_0600_and_never_printed(user_dir: Path, server: LoopbackServer) -> None:
    stored = hs(user_dir, "keys", "set", "openai", input=KEY + "\n")
    assert stored.exit_code == 0, stored.output
    path = Path(hs(user_dir, "keys", "path").stdout.strip())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = hs(user_dir, "keys", "list")
    assert listed.stdout.split() == ["openai"] and KEY not in listed.output
    done = hs(user_dir, "--debug", "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url", server.url + "/v1")
    assert done.exit_code == 0, done.output
    assert server.requests[-1].headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in done.output
    # The environment variable wins over the stored key.
    hs(user_dir, "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url", server.url + "/v1", OPENAI_API_KEY="env-k")
    assert server.requests[-1].headers["Authorization"] == "Bearer env-k"
    logs = b"".join(p.read_bytes() for p in user_dir.glob("logs.db*"))
    assert logs and KEY.encode() not in logs
    assert hs(user_dir, "keys", "remove", "openai").exit_code == 0
    assert hs(user_dir, "keys", "list").stdout == ""


def test_a_rejected_stored_key_is_not_in_the_error(user_dir: Path) -> None:
    hs(user_dir, "keys", "set", "openai", input=KEY)
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}).encode()
    with LoopbackServer([Response(echo, status=401, content_type="application/json")]) as srv:
        res = hs(user_dir, "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url", srv.url + "/v1")
    assert res.exit_code == 1 and "Incorrect API key" in res.output and KEY not in res.output


def test_no_key_anywhere_names_the_variable_and_keys_set(user_dir: Path) -> None:
    res = hs(user_dir, "chat", "hi", "-m", "openai:gpt-4o-mini", "--output", "final-json")
    assert res.exit_code == 1
    assert "OPENAI_API_KEY" in res.output and "hookstream keys set openai" in res.output


def test_keys_set_refuses_an_empty_key_and_a_bad_name(user_dir: Path) -> None:
    assert hs(user_dir, "keys", "set", "openai", input="\n").exit_code == 2
    bad = hs(user_dir, "keys", "set", "open ai", input=KEY)
    assert bad.exit_code == 2 and KEY not in bad.output
    assert hs(user_dir, "keys", "list").stdout == ""


# -- logs: model, tokens, cost ------------------------------------------------------------------------


def test_logs_show_each_responses_model_tokens_and_cost(user_dir: Path, server: LoopbackServer) -> None:
    genai = pytest.importorskip("genai_prices", reason="costs need hookstream[prices]")
    base = server.url + "/v1"
    hs(user_dir, "chat", "one", "-m", "openai:gpt-4o-mini", "--base-url", base, OPENAI_API_KEY="k")
    hs(user_dir, "chat", "two", "-c", "--base-url", base, OPENAI_API_KEY="k")
    each = [genai.calc_price(genai.Usage(input_tokens=n, output_tokens=5), "gpt-4o-mini", provider_id="openai"
                             ).total_price for n in (10, 11)]
    [conversation] = json.loads(hs(user_dir, "logs", "--json").stdout)
    assert conversation["model"] == "openai:gpt-4o-mini"
    assert (conversation["input_tokens"], conversation["output_tokens"]) == (21, 10)
    assert conversation["cost"] == {"amount": float(sum(each)), "currency": "USD"}
    listed = hs(user_dir, "logs").stdout
    assert "openai:gpt-4o-mini" in listed and "21 in / 10 out tokens" in listed and f"${sum(each):f}" in listed
    shown = hs(user_dir, "logs", "--cid", conversation["id"]).stdout
    assert f"(openai:gpt-4o-mini, 10 in / 5 out tokens, ${each[0]:f})" in shown
    assert f"(openai:gpt-4o-mini, 11 in / 5 out tokens, ${each[1]:f})" in shown
    doc = json.loads(hs(user_dir, "logs", "--cid", conversation["id"], "--json").stdout)
    assert [r["input_tokens"] for r in doc["responses"]] == [10, 11]
    assert Path(hs(user_dir, "logs", "path").stdout.strip()) == user_dir / "logs.db"


# -- the catalogue: chat models only, each one the provider serves --------------------------------------


def names(*args: str, user_dir: Path) -> list[str]:
    res = hs(user_dir, "models", *args, "--json")
    assert res.exit_code == 0, res.output
    return [m["name"] for m in json.loads(res.stdout)["models"]]


def test_models_lists_chat_models_only(user_dir: Path) -> None:
    pytest.importorskip("genai_prices", reason="the catalogue's models come from hookstream[prices]")
    openai = names("openai", user_dir=user_dir)
    assert {"openai:gpt-4o-mini", "openai:gpt-4.1", "openai:o3"} <= set(openai)
    not_chat = [n for n in openai if any(w in n for w in (
        "tts", "whisper", "embedding", "image", "moderation", "transcribe", "realtime", "davinci", "babbage"))]
    assert not_chat == []
    assert [n for n in openai if n.endswith(("-", ".")) or n.count(":") > 1] == []  # ft:gpt-3.5-turbo-...
    text = hs(user_dir, "models").stdout
    assert "openai:gpt-4o-mini " in text and "openai:ft:" not in text and "text-embedding" not in text


def test_vertex_lists_no_claude_and_vertex_anthropic_only_claude(user_dir: Path) -> None:
    pytest.importorskip("genai_prices", reason="the catalogue's models come from hookstream[prices]")
    pytest.importorskip("hookstream_vertex", reason="the vertex providers are hookstream-vertex's")
    vertex = names("vertex", user_dir=user_dir)
    assert "vertex:gemini-2.5-flash" in vertex and [n for n in vertex if "claude" in n] == []
    claude = names("vertex-anthropic", user_dir=user_dir)
    assert claude and all(n.startswith("vertex-anthropic:claude-") for n in claude)


def test_models_of_a_provider_with_none_known_says_how_to_list_them(user_dir: Path) -> None:
    pytest.importorskip("hookstream_ollama", reason="ollama is hookstream-ollama's")
    res = hs(user_dir, "models", "ollama")
    assert res.exit_code == 0 and res.stdout == ""
    assert "no models known for ollama; list yours with `ollama list`" in res.stderr
    unknown = hs(user_dir, "models", "no-such-provider")
    assert unknown.exit_code != 0


def test_with_approve_piped_stdin_answers_approvals_and_is_not_the_prompt(user_dir: Path,
                                                                          server: LoopbackServer) -> None:
    args = ("-m", "openai:gpt-4o-mini", "--base-url", server.url + "/v1", "--approve")
    missing = hs(user_dir, "chat", *args, input="y\n", OPENAI_API_KEY="k")
    assert missing.exit_code == 2 and "give the prompt as an argument" in missing.output
    done = hs(user_dir, "chat", "hi", *args, input="y\n", OPENAI_API_KEY="k")
    assert done.exit_code == 0, done.output
    assert sent(server)["messages"][-1] == {"role": "user", "content": "hi"}


def test_a_process_without_stdin_takes_the_prompt_argument(user_dir: Path, server: LoopbackServer) -> None:
    env = {**os.environ, "HOOKSTREAM_USER_DIR": str(user_dir), "OPENAI_API_KEY": "k"}
    # fd 0 closed before the interpreter starts: Python then sets sys.stdin to None.
    done = subprocess.run([sys.executable, "-m", "hookstream", "chat", "hi", "-m", "openai:gpt-4o-mini", "--base-url",
                           server.url + "/v1"], capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=lambda: os.close(0))
    assert done.returncode == 0, done.stderr
    assert sent(server)["messages"][-1] == {"role": "user", "content": "hi"}


def test_a_broken_keys_file_is_named_never_quoted(user_dir: Path) -> None:
    user_dir.mkdir(parents=True)
    (user_dir / "keys.json").write_text('{"openai": "' + KEY + '",}')  # a trailing comma: not JSON
    res = hs(user_dir, "keys", "list")
    assert res.exit_code == 1 and "keys.json is not valid JSON" in res.output and KEY not in res.output
    missing = hs(user_dir, "chat", "hi", "-m", "openai:gpt-4o-mini")  # no key from it: the usual error
    assert missing.exit_code == 1 and "hookstream keys set openai" in missing.output and KEY not in missing.output
