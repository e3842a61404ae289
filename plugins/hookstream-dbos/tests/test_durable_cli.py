"""The command line of durable runs, in-process (``hookstream.testing.run_cli``): ``chat --durable``,
``runs list``, ``runs resume`` and ``runs export`` whose directory ``--model replay:DIR`` replays."""

from __future__ import annotations

import json
from pathlib import Path

import durable_kit
import pytest
from hookstream.testing import LoopbackServer, Response, run_cli
from test_durable_run import ANSWER, scripted_server

PROMPT = "Run a then b."
TOOLS = ["--tool", "durable_kit:tool_a", "--tool", "durable_kit:tool_b"]


@pytest.fixture
def session_db() -> str:
    return durable_kit.session_url()


def test_chat_durable_then_list_resume_and_export_replays(session_db: str, tmp_path: Path) -> None:
    durable_kit.CALLS.clear()
    with scripted_server() as server:
        args = ["chat", PROMPT, "--model", "openai:gpt-4o-mini", "--base-url", server.url + "/v1", *TOOLS,
                "--durable", "cli-1", "--durable-db", session_db]
        done = run_cli(args, env={"OPENAI_API_KEY": "test-key"})
        assert done.exit_code == 0, done.output
        assert ANSWER in done.output
        assert len(server.requests) == 3 and durable_kit.CALLS == ["tool_a", "tool_b"]

        listed = run_cli(["runs", "list", "--durable-db", session_db, "--json"])
        assert listed.exit_code == 0, listed.output
        rows = {r["id"]: r for r in map(json.loads, listed.output.splitlines())}
        assert rows["cli-1"]["state"] == "finished"
        assert rows["cli-1"]["steps"] == 5  # three model calls, two tool calls
        assert rows["cli-1"]["model"] == "openai:gpt-4o-mini"
        table = run_cli(["runs", "list", "--durable-db", session_db]).output
        assert "cli-1" in table and "finished" in table

        # The same command again, through `runs resume`: the recorded answer, nothing sent or run.
        resumed = run_cli(["runs", "resume", "cli-1", "--durable-db", session_db],
                          env={"OPENAI_API_KEY": "test-key"})
        assert resumed.exit_code == 0, resumed.output
        assert ANSWER in resumed.output
        assert len(server.requests) == 3 and durable_kit.CALLS == ["tool_a", "tool_b"]

    # ★ The run's record is a recording: replayed offline (the server is gone) with the same prompt and tools.
    folder = tmp_path / "rec"
    exported = run_cli(["runs", "export", "cli-1", str(folder), "--durable-db", session_db])
    assert exported.exit_code == 0, exported.output
    assert "wrote 3 model calls" in exported.output
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    assert manifest["provider"] == "openai" and len(manifest["calls"]) == 3
    assert "test-key" not in "".join(p.read_text("utf-8", "replace") for p in folder.iterdir())
    replayed = run_cli(["chat", PROMPT, "--model", f"replay:{folder}", *TOOLS])
    assert replayed.exit_code == 0, replayed.output
    assert ANSWER in replayed.output
    assert durable_kit.CALLS == ["tool_a", "tool_b", "tool_a", "tool_b"]  # a replay runs the tools


def test_runs_errors_are_plain(session_db: str, tmp_path: Path) -> None:
    missing = run_cli(["runs", "resume", "no-such-run", "--durable-db", session_db])
    assert missing.exit_code == 2 and "no durable run" in missing.output
    nothing = run_cli(["runs", "export", "no-such-run", str(tmp_path / "x"), "--durable-db", session_db])
    assert nothing.exit_code == 1 and "no durable run" in nothing.output
    bad = run_cli(["chat", "hi", "--model", "test", "--durable-db", session_db])
    assert bad.exit_code == 2 and "--durable-db needs --durable" in bad.output


def test_sigkill_of_chat_durable_then_runs_resume_does_nothing_twice(tmp_path: Path) -> None:
    """The command line in processes of its own: `hookstream chat --durable` killed while tool_b runs,
    then `hookstream runs resume` (the same command again)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    db = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent), "DURABLE_KIT_DIR": str(tmp_path),
           "OPENAI_API_KEY": "test-key", "DBOS_SYSTEM_DATABASE_URL": db}
    hookstream = [sys.executable, "-m", "hookstream"]
    tools = ["--tool", "durable_logged:tool_a", "--tool", "durable_logged:tool_b"]
    with scripted_server() as server:
        args = [*hookstream, "chat", PROMPT, "--model", "openai:gpt-4o-mini", "--base-url", server.url + "/v1",
                *tools, "--durable", "cli-kill"]
        proc = subprocess.Popen(args, env={**env, "DURABLE_KIT_HOLD": "1"}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        barrier = tmp_path / "b-running"
        for _ in range(2400):
            if barrier.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert barrier.exists(), "".join(proc.communicate())[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert len(server.requests) == 2

        listed = subprocess.run([*hookstream, "runs", "list"], env=env, capture_output=True, text=True, timeout=120)
        assert "cli-kill" in listed.stdout and "interrupted" in listed.stdout, listed.stdout + listed.stderr

        for _ in range(2):  # resumed, then finished: the second sends and runs nothing
            done = subprocess.run([*hookstream, "runs", "resume", "cli-kill"], env=env, capture_output=True,
                                  text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-3000:]
            assert ANSWER in done.stdout
            assert len(server.requests) == 3
            log = (tmp_path / "tools.log").read_text("utf-8").splitlines()
            assert log == ["tool_a 1", "tool_b 1", "tool_b 2"]


def test_chat_durable_waits_for_approval_then_approve_answers_it_in_another_process(tmp_path: Path) -> None:
    """`hookstream chat --durable ID` with a tool that needs approval and nobody to ask: exit 3, the run
    waits (`runs list`); `runs resume ID --approve` (the same command with `--approve`, y on stdin), in a
    new process, replays the first model call, runs the tool once and ends the same durable run."""
    import os
    import subprocess
    import sys

    from hookstream.testing.provider_bodies import final_stream, provider_stream

    db = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent), "DURABLE_KIT_DIR": str(tmp_path),
           "OPENAI_API_KEY": "test-key", "DBOS_SYSTEM_DATABASE_URL": db}
    bodies = [provider_stream("openai", text="", reasoning="", tool_name="pay", tool_args={"amount": 5}).events,
              final_stream("openai", text="Paid.").events]
    with LoopbackServer([Response(pieces=b) for b in bodies]) as server:
        args = [sys.executable, "-m", "hookstream", "chat", "Pay 5.", "--model", "openai:gpt-4o-mini", "--base-url",
                server.url + "/v1", "--tool", "durable_logged:pay", "--durable", "cli-wait"]
        first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert first.returncode == 3, first.stderr[-3000:]
        assert "waiting for approval of pay" in first.stderr
        listed = subprocess.run([sys.executable, "-m", "hookstream", "runs", "list"], env=env, capture_output=True,
                                text=True, timeout=120)
        assert "cli-wait" in listed.stdout and "waiting" in listed.stdout, listed.stdout + listed.stderr

        done = subprocess.run([sys.executable, "-m", "hookstream", "runs", "resume", "cli-wait", "--approve"], env=env,
                              input="y\n", capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Paid." in done.stdout
        assert len(server.requests) == 2  # the first model call came from the journal
        assert (tmp_path / "tools.log").read_text("utf-8").splitlines() == ["pay 1"]
        listed = subprocess.run([sys.executable, "-m", "hookstream", "runs", "list", "--json"], env=env,
                                capture_output=True, text=True, timeout=120)
        row = json.loads(listed.stdout.splitlines()[0])
        assert (row["id"], row["state"], row["steps"]) == ("cli-wait", "finished", 3)


def test_installed_but_unused_the_plugin_adds_no_run_hook() -> None:
    """A run that does not ask for `durable` pays nothing: the entry point implements no run hook (and
    importing it imports no DBOS)."""
    import subprocess
    import sys

    code = ("import sys; from hookstream import get_registry; reg = get_registry(); info = reg.plugins['durable'];"
            "print(bool(info.run_hooks), 'dbos' in sys.modules, callable(reg.run_plugin('durable')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False", "True"], done.stdout + done.stderr
