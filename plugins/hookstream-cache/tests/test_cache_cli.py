"""``hookstream chat ... --cache`` and ``hookstream cache stats|clear`` in real processes against a loopback
server playing a recorded OpenAI body: a repeated run makes one request and prints the same object, a
different prompt misses, a server error is not cached.

Needs the core CLI to call the CLI hooks (``hookstream_cli_options``, ``hookstream_cli_configure``,
``hookstream_register_commands``; issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hookstream.testing import LoopbackServer, Response
from hookstream.testing.conformance import require_corpus

KEY = "sk-test-SECRET-0123456789"
HOOKSTREAM = str(Path(sys.executable).with_name("hookstream"))


def hookstream(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "OPENAI_API_KEY": KEY}
    return subprocess.run([HOOKSTREAM, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def ask(tmp_path: Path, srv: LoopbackServer, prompt: str) -> subprocess.CompletedProcess[str]:
    return hookstream(tmp_path, "chat", prompt, "--model", "openai:gpt-4o-mini", "--base-url", srv.url + "/v1",
                      "--cache", "--output", "final-json")


def stats(tmp_path: Path) -> dict[str, Any]:
    done = hookstream(tmp_path, "cache", "stats", "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_chat_cache_twice_makes_one_request_and_prints_the_same_object(tmp_path: Path) -> None:
    body = (require_corpus() / "openai-chat__text.sse").read_bytes()
    with LoopbackServer([Response(body)]) as srv:
        first = ask(tmp_path, srv, "hi")
        second = ask(tmp_path, srv, "hi")
        assert first.returncode == 0, first.stderr
        assert second.returncode == 0, second.stderr
        assert len(srv.requests) == 1
        assert json.loads(second.stdout) == json.loads(first.stdout)
        assert json.loads(first.stdout)["text"].startswith("I'm unable to provide real-time weather updates")

        other = ask(tmp_path, srv, "hello")  # a different prompt: a miss
        assert other.returncode == 0, other.stderr
        assert len(srv.requests) == 2

    figures = stats(tmp_path)
    cache_file = tmp_path / "xdg" / "hookstream" / "responses.sqlite3"
    assert figures["path"] == str(cache_file)
    assert (figures["entries"], figures["hits"], figures["misses"]) == (2, 1, 2)
    assert figures["bytes"] == 2 * len(body)
    for path in cache_file.parent.iterdir():
        assert KEY.encode() not in path.read_bytes()

    cleared = hookstream(tmp_path, "cache", "clear")
    assert cleared.returncode == 0 and "deleted 2 responses" in cleared.stdout
    assert stats(tmp_path)["entries"] == 0


def test_a_server_error_is_not_cached(tmp_path: Path) -> None:
    error = json.dumps({"error": {"message": "the server had an error", "type": "server_error"}}).encode()
    failing = Response(error, status=500, content_type="application/json", headers={"Retry-After": "0"})
    with LoopbackServer([failing]) as srv:
        first = ask(tmp_path, srv, "hi")
        asked = len(srv.requests)  # with the call's own retries
        second = ask(tmp_path, srv, "hi")
    assert first.returncode != 0 and second.returncode != 0
    assert "the server had an error" in first.stdout + first.stderr
    assert asked >= 1 and len(srv.requests) == 2 * asked
    assert stats(tmp_path)["entries"] == 0


def test_the_cli_hooks_add_the_options_the_plugin_and_the_commands(tmp_path: Path) -> None:
    # The plugin's side of the CLI hooks, called through the registry's hook relay as the CLI calls them.
    import click
    from click.testing import CliRunner
    from hookstream import RunSettings, get_registry
    from hookstream.plugin import CLIRun
    from hookstream_cache import Cache

    hook = get_registry().pm.hook
    options = [o for found in hook.hookstream_cli_options(command="chat") if found for o in found]
    assert {"cache", "cache_path"} <= {o.name for o in options}
    assert not [o for found in hook.hookstream_cli_options(command="replay") if found for o in found
                if o.name and o.name.startswith("cache")]

    run = CLIRun("chat", RunSettings())
    hook.hookstream_cli_configure(command="chat", options={"cache": False, "cache_path": None}, run=run)
    assert run.settings.plugins == ()
    path = tmp_path / "answers.sqlite3"
    hook.hookstream_cli_configure(command="chat", options={"cache": False, "cache_path": str(path)}, run=run)
    (plugin,) = run.settings.plugins
    assert isinstance(plugin, Cache) and plugin.path == str(path)

    cli = click.Group("hookstream")
    hook.hookstream_register_commands(cli=cli)
    shown = CliRunner().invoke(cli, ["cache", "stats", "--path", str(path), "--json"])
    assert shown.exit_code == 0, shown.output
    figures = json.loads(shown.output)
    assert figures.pop("file_bytes") > 0  # created by the first look
    assert figures == {"path": str(path), "entries": 0, "bytes": 0, "hits": 0, "misses": 0}
    cleared = CliRunner().invoke(cli, ["cache", "clear", "--path", str(path)])
    assert cleared.exit_code == 0 and "deleted 0 responses" in cleared.output
