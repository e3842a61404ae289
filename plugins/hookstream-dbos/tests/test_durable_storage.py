"""Where the durable-run journal lives by default (``hookstream_dbos.default_url``): hookstream's user
directory (``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory), a journal left at
platformdirs' directory before ``$HOOKSTREAM_USER_DIR`` was set still used while none is in the new one.
platformdirs follows ``$XDG_DATA_HOME`` on Linux only: elsewhere the test would touch the real directory."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_durable_run import ANSWER, scripted_server

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="platformdirs reads XDG_DATA_HOME")


def _dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.delenv("DBOS_SYSTEM_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "hookstream" / "durable.sqlite", tmp_path / "mine" / "durable.sqlite"


def test_the_default_journal_follows_hookstream_user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    from hookstream_dbos import default_url

    old, new = _dirs(tmp_path, monkeypatch)
    monkeypatch.delenv("HOOKSTREAM_USER_DIR", raising=False)
    assert default_url() == f"sqlite:///{old}"  # unset: where it always was
    monkeypatch.setenv("HOOKSTREAM_USER_DIR", str(new.parent))
    assert default_url() == f"sqlite:///{new}"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"")  # a journal made before the variable was set: its runs stay resumable
    with caplog.at_level(logging.WARNING, "hookstream_dbos"):
        assert default_url() == f"sqlite:///{old}"
    assert str(new) in caplog.text
    new.parent.mkdir()
    new.write_bytes(b"")  # moved (or a new one made there): the new place wins
    assert default_url() == f"sqlite:///{new}"
    monkeypatch.setenv("DBOS_SYSTEM_DATABASE_URL", "sqlite:///elsewhere.sqlite")
    assert default_url() == "sqlite:///elsewhere.sqlite"


def test_chat_durable_journals_in_hookstream_user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _dirs(tmp_path, monkeypatch)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent), "OPENAI_API_KEY": "test-key",
           "HOOKSTREAM_USER_DIR": str(new.parent)}
    hookstream = [sys.executable, "-m", "hookstream"]
    with scripted_server() as server:
        done = subprocess.run([*hookstream, "chat", "Run a then b.", "--model", "openai:gpt-4o-mini", "--base-url",
                               server.url + "/v1", "--tool", "durable_kit:tool_a", "--tool", "durable_kit:tool_b",
                               "--durable", "mine-1"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and ANSWER in done.stdout, done.stderr[-3000:]
    assert new.exists() and not old.exists()
    listed = subprocess.run([*hookstream, "runs", "list"], env=env, capture_output=True, text=True, timeout=120)
    assert "mine-1" in listed.stdout and "finished" in listed.stdout, listed.stdout + listed.stderr
