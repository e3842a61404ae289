"""``hookstream plugins --json``, ``install``/``uninstall`` passing pip through, and the "install it with"
hint for a provider no plugin registers: all through the real CLI in a subprocess.

Installing real distributions into a fresh environment is in ``test_install_wheels.py`` (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dist_kit import make_dist, run_cli
from hookstream._registry import FIRST_PARTY, KINDS
from hookstream.errors import UnknownPluginError
from hookstream.plugin import Registry


def test_plugins_json_is_one_document_with_plugins_and_failures(tmp_path: Path) -> None:
    broken = make_dist(tmp_path, "brokenjson", "raise RuntimeError('broken on purpose')\n")
    good = make_dist(tmp_path, "goodjson", """
        from hookstream import ImmediateStrategy
        from hookstream.plugin import hookimpl

        @hookimpl
        def hookstream_register_chunk_strategies(register):
            register("good-json-immediate", ImmediateStrategy)
    """)
    proc = run_cli(["plugins", "--json"], [broken, good])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # the whole of stdout is one document: nothing printed around it
    assert doc["core"]["distribution"] == "hookstream" and doc["core"]["version"]
    by_name = {p["name"]: p for p in doc["plugins"]}
    assert [p["name"] for p in doc["plugins"]] == sorted(by_name)
    assert by_name["goodjson"] == {
        "name": "goodjson", "distribution": "goodjson", "version": "1.2.3",
        "hooks": ["hookstream_register_chunk_strategies"],
        "registered": {"providers": [], "chunk_strategies": ["good-json-immediate"], "tool_executors": [],
                       "stop_conditions": [], "observers": [], "authenticators": [], "models": [],
                       "run_plugins": []},
    }
    assert list(by_name["builtins"]["registered"]) == list(KINDS)
    assert "replay" in by_name["replay"]["registered"]["providers"]
    assert doc["failures"] == [{"name": "brokenjson", "error": "RuntimeError: broken on purpose"}]


def test_plugins_json_agrees_with_the_text_listing() -> None:
    text = run_cli(["plugins"], []).stdout
    doc = json.loads(run_cli(["plugins", "--json"], []).stdout)
    for plugin in doc["plugins"]:
        assert f"{plugin['name']}  [{plugin['distribution']} {plugin['version']}]" in text
        for kind, names in plugin["registered"].items():
            if names:
                assert f"  {kind.replace('_', ' ')}: {', '.join(names)}" in text


def test_install_passes_pips_output_and_exit_code_through(tmp_path: Path) -> None:
    # --no-index: pip fails without asking any index, and its own message and exit code come back.
    proc = run_cli(["install", "--no-index", "hookstream-no-such-plugin-h11"], [])
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "No matching distribution found for hookstream-no-such-plugin-h11" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_uninstall_runs_pip_uninstall_without_asking() -> None:
    proc = run_cli(["uninstall", "hookstream-no-such-plugin-h11"], [])
    assert proc.returncode == 0, proc.stderr
    assert "Skipping hookstream-no-such-plugin-h11 as it is not installed" in proc.stdout + proc.stderr


def test_install_without_a_spec_is_a_usage_error() -> None:
    proc = run_cli(["install"], [])
    assert proc.returncode == 2 and "Missing argument 'SPEC...'" in proc.stderr


def test_blocked_first_party_provider_says_why_it_is_missing() -> None:
    pytest.importorskip("hookstream_gemini", reason="needs hookstream-gemini installed")
    proc = run_cli(["chat", "hi", "--model", "gemini:gemini-2.0-flash"], [], HOOKSTREAM_BLOCK_PLUGINS="gemini")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no provider named 'gemini'" in proc.stderr
    assert "hookstream-gemini 0.1.0 is installed but is blocked by HOOKSTREAM_BLOCK_PLUGINS" in proc.stderr


def test_misspelt_provider_gets_the_close_name() -> None:
    pytest.importorskip("hookstream_anthropic", reason="needs hookstream-anthropic installed")
    proc = run_cli(["chat", "hi", "--model", "antropic:claude-sonnet-4-5"], [])
    assert "no provider named 'antropic'" in proc.stderr and "did you mean 'anthropic'?" in proc.stderr


def test_unknown_provider_gets_a_generic_hint_not_a_guessed_distribution() -> None:
    proc = run_cli(["chat", "hi", "--model", "zzqx:model-1"], [])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no provider named 'zzqx'" in proc.stderr
    assert "install the plugin distribution that registers it (hookstream install SPEC)" in proc.stderr
    assert "hookstream-zzqx" not in proc.stderr


def test_first_party_name_whose_distribution_is_absent_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every first-party distribution is installed in the test environment, so an absent one is a table row
    # naming a distribution nobody installed; test_install_wheels.py checks the real one after uninstall.
    monkeypatch.setitem(FIRST_PARTY["providers"], "nosuchprov", "hookstream-nosuchprov-h11")
    with pytest.raises(UnknownPluginError) as info:
        Registry(autoload=False).provider("nosuchprov")
    assert info.value.message == (
        "no provider named 'nosuchprov' (installed: none); "
        "install it with: hookstream install hookstream-nosuchprov-h11"
    )


def test_first_party_table_names_what_the_plugins_register() -> None:
    reg = Registry()
    for kind, table in FIRST_PARTY.items():
        for name, dist in table.items():
            if name in reg.names(kind):
                owner = next(p for p in reg.plugins.values() if name in p.registered.get(kind, []))
                assert owner.distribution == dist, (kind, name)
