"""``hookstream process EVENTS.jsonl``: final UI messages on stdout, callback counts on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from hookstream import events as E
from hookstream.testing import run_cli
from processor_kit import run_end, run_start, text, tool


def write_log(path: Path, evs: list[E.BaseEvent], extra: str = "") -> Path:
    path.write_text("\n".join(E.to_json(e) for e in evs) + "\n" + extra, encoding="utf-8")
    return path


def test_process_prints_messages_and_counts(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl", [run_start(), *text("m1", "Hi", " there"), *tool("c1", "f", "{}"),
                                              run_end("tool_calls")])
    res = run_cli(["process", str(log)])
    assert res.exit_code == 0, res.output
    messages = json.loads(res.stdout)
    assert messages[0]["parts"][0] == {"type": "text", "content": "Hi there"}
    assert messages[0]["parts"][1]["state"] == "input-complete"
    assert "on_messages_change: 5" in res.stderr and "on_text_update: 2" in res.stderr
    assert "on_tool_call_state_change: 3" in res.stderr


def test_process_bad_line_reports_it_and_keeps_what_arrived(tmp_path: Path) -> None:
    log = write_log(tmp_path / "bad.jsonl", [run_start(), *text("m1", "kept")], extra='{"type": "NOPE"}\n')
    res = run_cli(["process", str(log), "--strategy", "immediate"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)[0]["parts"][0]["content"] == "kept"
    assert "bad.jsonl:5: not an AG-UI event" in res.stderr


def test_process_unknown_strategy(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.jsonl", [run_start(), run_end()])
    res = run_cli(["process", str(log), "--strategy", "nope"])
    assert res.exit_code != 0 and "named 'nope'" in res.output
