"""hookstream-provider-batch takes ``hookstream batch`` over through ``CLIRun.main`` (the provider-batch runs
themselves are tested against each provider plugin's loopback batch server: plugins/hookstream-*/tests/
test_*_batch.py). In-process through the public ``hookstream.testing.run_cli``, on the offline ``test`` model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from hookstream import get_registry
from hookstream.plugin import CLIRun, hookimpl
from hookstream.testing import run_cli


def _inputs(tmp_path: Path) -> Path:
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"say {i}"}) + "\n" for i in range(2)))
    return inp


def test_the_options_are_the_plugins(tmp_path: Path) -> None:
    result = run_cli(["batch", "--help"])
    assert result.exit_code == 0
    assert "--provider-batch" in result.output and "--poll-interval" in result.output


def test_dry_run_needs_provider_batch(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli(["batch", str(_inputs(tmp_path)), "-m", "test:echo", "--output", str(out), "--dry-run"])
    assert result.exit_code == 2
    assert "--dry-run goes with --provider-batch" in result.output
    assert not out.exists()


def test_a_provider_without_a_batch_api_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli(["batch", str(_inputs(tmp_path)), "-m", "test:echo", "--output", str(out), "--provider-batch"])
    assert result.exit_code == 2, result.output
    assert "has no batch API" in result.output


def test_without_the_flag_the_command_runs_its_own_chats(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli(["batch", str(_inputs(tmp_path)), "-m", "test:echo", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["id"] for line in out.read_text().splitlines()) == ["q0", "q1"]


class _Other:
    """A second plugin that takes ``batch`` over: both cannot."""

    @hookimpl
    def hookstream_cli_configure(self, command: str, options: dict[str, Any], run: CLIRun) -> None:
        if command == "batch":
            run.main = lambda: click.echo("other")


def test_two_plugins_taking_the_command_over_is_a_usage_error(tmp_path: Path) -> None:
    pm = get_registry().pm
    other = _Other()
    pm.register(other)
    try:
        out = tmp_path / "out.jsonl"
        args = ["batch", str(_inputs(tmp_path)), "-m", "test:echo", "--output", str(out)]
        assert run_cli(args).output.strip().endswith("other")  # the other plugin's main ran, not the chats
        assert not out.exists()
        result = run_cli([*args, "--provider-batch"])
        assert result.exit_code == 2
    finally:
        pm.unregister(other)
