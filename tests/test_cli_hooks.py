"""The CLI hooks, through real installed plugins (a ``*.dist-info`` with entry points on the
``PYTHONPATH`` of a ``hookstream`` subprocess): a plugin's command in ``--help`` and running, asked for
only when a name is not built in or the commands are listed; a plugin's option on ``chat`` reaching
``hookstream_cli_configure``, which changes the run's settings, prints a note and closes what it opened
on the run's stack; a plugin's usage error; ``--plugin NAME`` turning a run plugin on (an unknown name
is a usage error naming the installed ones); and a plugin with a misspelt hook under ``failures``.

Chats go to a real loopback OpenAI Chat Completions server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from dist_kit import make_dist, run_cli
from engine_kit import text_body
from hookstream.testing import LoopbackServer, Response
from hookstream.testing import run_cli as invoke_cli

MODEL = "openai:gpt-4o-mini"

CLIPLUG = """
    import os
    import sys

    from hookstream import Message
    from hookstream.plugin import hookimpl


    @hookimpl
    def hookstream_register_commands(cli):
        import click

        marker = os.environ.get("CLIPLUG_MARKER")
        if marker:
            with open(marker, "a") as f:
                f.write("asked\\n")

        @cli.command("hello")
        @click.argument("name")
        def hello(name):
            \"\"\"Say hello (a plugin's command).\"\"\"
            click.echo(f"hello {name} from cliplug")

        @cli.command("chat")
        def not_the_chat():
            \"\"\"A plugin may not replace a built-in command.\"\"\"


    @hookimpl
    def hookstream_cli_options(command):
        import click

        if command != "chat":
            return None
        return [click.Option(["--house-style"], is_flag=True, help="Answer in the house style (cliplug)."),
                click.Option(["--system"], default=None, help="taken by the core: left out")]


    @hookimpl
    def hookstream_cli_configure(command, options, run):
        import click

        if command != "chat" or not options.get("house_style"):
            return
        if options.get("system"):
            raise click.UsageError("--house-style sets the system prompt: drop --system")
        run.settings = run.settings.evolve(system="Answer in the house style.")
        run.notes.append("cliplug: house style on")
        run.stack.callback(lambda: print("cliplug: stack closed", file=sys.stderr))


    class Tagger:
        @hookimpl
        def hookstream_run_start(self, run):
            run.messages.append(Message.user("tagged by the run plugin"))


    @hookimpl
    def hookstream_register_run_plugins(register):
        register("tagger", Tagger)
"""


@pytest.fixture
def cliplug(tmp_path: Path) -> Path:
    return make_dist(tmp_path, "cliplug", CLIPLUG)


def test_a_plugin_command_is_listed_and_runs_and_built_ins_pay_nothing_for_it(cliplug: Path, tmp_path: Path) -> None:
    marker = tmp_path / "asked"
    for args in (["replay", "--help"], ["--version"], ["chat", "--help"]):
        done = run_cli(args, [cliplug], CLIPLUG_MARKER=str(marker))
        assert done.returncode == 0, done.stderr
        assert not marker.exists(), f"hookstream {' '.join(args)} asked plugins for commands"
    listing = run_cli(["--help"], [cliplug], CLIPLUG_MARKER=str(marker))
    assert listing.returncode == 0, listing.stderr
    assert "hello" in listing.stdout and "Say hello (a plugin's command)." in listing.stdout
    assert marker.read_text() == "asked\n"
    hello = run_cli(["hello", "Ada"], [cliplug])
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout == "hello Ada from cliplug\n"
    # The built-in chat stays the built-in one.
    assert "Chat with MODEL" in run_cli(["chat", "--help"], [cliplug]).stdout


def test_a_plugin_option_configures_the_run(cliplug: Path) -> None:
    helped = run_cli(["chat", "--help"], [cliplug])
    assert "--house-style" in helped.stdout and "taken by the core" not in helped.stdout
    with LoopbackServer(Response(text_body("In house style."))) as srv:
        args = ["chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--no-log", "--output", "final-json"]
        done = run_cli([*args, "--house-style"], [cliplug], OPENAI_API_KEY="sk-test")
        messages = srv.requests[0].json()["messages"]
    assert done.returncode == 0, done.stderr
    assert messages[0] == {"role": "system", "content": "Answer in the house style."}
    assert json.loads(done.stdout)["text"] == "In house style."
    assert done.stderr.splitlines() == [
        "WARNING hookstream.cli: hookstream chat: plugin option --system is left out: the command has --system, "
        "system already",
        "cliplug: house style on", "cliplug: stack closed"]


def test_a_plugin_usage_error_is_exit_code_2(cliplug: Path) -> None:
    with LoopbackServer(Response(text_body("never asked"))) as srv:
        done = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--no-log", "--house-style",
                        "--system", "mine"], [cliplug], OPENAI_API_KEY="sk-test")
        asked = len(srv.requests)
    assert done.returncode == 2
    assert "--house-style sets the system prompt: drop --system" in done.stderr
    assert asked == 0


def test_plugin_turns_a_registered_run_plugin_on(cliplug: Path) -> None:
    with LoopbackServer(Response(text_body("ok"))) as srv:
        done = run_cli(["chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--no-log", "--plugin",
                        "tagger"], [cliplug], OPENAI_API_KEY="sk-test")
        messages = srv.requests[0].json()["messages"]
    assert done.returncode == 0, done.stderr
    assert messages[-1] == {"role": "user", "content": "tagged by the run plugin"}


def test_an_unknown_plugin_name_is_a_one_line_usage_error() -> None:
    res = invoke_cli(["chat", "hi", "--model", MODEL, "--no-log", "--plugin", "nosuch"])
    assert res.exit_code == 2
    [error] = [line for line in res.output.splitlines() if line.startswith("Error")]
    assert "--plugin: no run plugin named 'nosuch' (installed: " in error


def test_a_plugin_with_a_misspelt_hook_is_listed_under_failures(tmp_path: Path) -> None:
    typo = make_dist(tmp_path, "typoplug", """
        from hookstream.plugin import hookimpl

        @hookimpl
        def hookstream_register_comands(cli):
            pass
    """)
    done = run_cli(["plugins", "--json"], [typo])
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "typoplug" not in {p["name"] for p in doc["plugins"]}
    [failure] = [f for f in doc["failures"] if f["name"] == "typoplug"]
    assert failure["error"].startswith("hookstream_register_comands: no such hook")
    text = run_cli(["plugins"], [typo]).stdout
    assert "FAILED typoplug: hookstream_register_comands: no such hook" in text


def test_serve_builds_its_runs_from_the_same_run_options(cliplug: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(cliplug), "OPENAI_API_KEY": "sk-test"}
    with LoopbackServer(Response(text_body("served"))) as srv:
        proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--model", MODEL, "--base-url",
                                 srv.url + "/v1", "--port", "0", "--system", "Serve briefly.", "--plugin", "tagger"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
            body = {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
                    "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
            answer = requests.post(line.rsplit(" ", 1)[-1].strip(), json=body, timeout=60)
        finally:
            proc.terminate()
            proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight
        messages = srv.requests[0].json()["messages"]
    assert answer.status_code == 200 and "served" in answer.text
    assert messages[0] == {"role": "system", "content": "Serve briefly."}
    assert messages[-1] == {"role": "user", "content": "tagged by the run plugin"}
