"""``hookstream chat`` keeps conversations (unless ``--no-log``); ``-c`` and ``--cid`` continue one;
``hookstream logs`` lists, shows and deletes them (issue 25). Real CLI processes, a real loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine_kit import text_body
from hookstream.testing import LoopbackServer, Response


def hs(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOKSTREAM_USER_DIR": str(user_dir), "OPENAI_API_KEY": "k-logs", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_chat_keeps_continues_lists_and_deletes(tmp_path: Path) -> None:
    with LoopbackServer([Response(text_body("Paris.")), Response(text_body("About 2.1 million.")),
                         Response(text_body("Lyon.")), Response(text_body("unlogged"))]) as srv:
        base = srv.url + "/v1"
        first = hs("chat", "Capital of France?", "--model", "openai:m", "--base-url", base, user_dir=tmp_path)
        assert first.returncode == 0, first.stderr
        second = hs("chat", "Its population?", "-c", "--model", "openai:m", "--base-url", base, user_dir=tmp_path)
        assert second.returncode == 0, second.stderr
        sent = srv.requests[1].json()["messages"]
        assert [m["content"] for m in sent] == ["Capital of France?", "Paris.", "Its population?"]
        listed = json.loads(hs("logs", "--json", user_dir=tmp_path).stdout)
        assert len(listed) == 1 and listed[0]["title"] == "Capital of France?" and listed[0]["messages"] == 4
        cid = listed[0]["id"]
        third = hs("chat", "Second city?", "--cid", cid, "--model", "openai:m", "--base-url", base,
                   user_dir=tmp_path)
        assert third.returncode == 0 and len(srv.requests[2].json()["messages"]) == 5
        hs("chat", "secret", "--no-log", "--model", "openai:m", "--base-url", base, user_dir=tmp_path)
    shown = hs("logs", "--cid", cid, user_dir=tmp_path).stdout
    assert "Its population?" in shown and "Lyon." in shown
    text = hs("logs", "-n", "5", user_dir=tmp_path).stdout
    assert cid in text and "secret" not in text
    assert hs("logs", "delete", cid, user_dir=tmp_path).returncode == 0
    assert json.loads(hs("logs", "--json", user_dir=tmp_path).stdout) == []
    missing = hs("chat", "hi", "--cid", "nope", "--model", "openai:m", user_dir=tmp_path)
    assert missing.returncode == 2 and "no conversation 'nope'" in missing.stderr
