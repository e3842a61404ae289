"""The README's Python example reports a failed run instead of printing an empty line and exiting 0,
and the distributions declare their license the current way (an SPDX expression, no deprecated
``license = {text = ...}`` table that makes every install print setuptools deprecation warnings)."""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hookstream.testing import LoopbackServer, Response

ROOT = Path(__file__).resolve().parent.parent
CALL = 'chat("openai:gpt-4o-mini", "Weather in Paris?", tools=[get_weather])'


def readme_example(base_url: str) -> str:
    """The README's "Use" Python block, pointed at ``base_url`` (it has no other way to take one)."""
    text = (ROOT / "README.md").read_text("utf-8")
    use = text[text.index("## Use"):]
    code = re.search(r"```python\n(.*?)\n```", use, re.S).group(1)  # type: ignore[union-attr]
    assert CALL in code, "the README example's chat() call changed; update this test"
    pointed = CALL.replace('"openai:gpt-4o-mini"', f'get_model("openai:gpt-4o-mini", base_url={base_url!r})')
    return "from hookstream import get_model\n" + code.replace(CALL, pointed)


def run_example(tmp_path: Path, responses: list[Response]) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("hookstream_openai", reason="the README example uses the openai plugin")
    with LoopbackServer(responses) as srv:
        (tmp_path / "example.py").write_text(readme_example(srv.url + "/v1"))
        return subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env={"PATH": "", "HOME": str(tmp_path),
                                                "OPENAI_API_KEY": "sk-wrong-key-123456"})


def test_readme_example_fails_loudly_on_a_wrong_key(tmp_path: Path) -> None:
    body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}).encode()
    proc = run_example(tmp_path, [Response(body, status=401, content_type="application/json")])
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    assert "Incorrect API key" in proc.stderr and "Traceback" not in proc.stderr
    assert "sk-wrong-key-123456" not in proc.stdout + proc.stderr


def test_readme_example_prints_the_answer_and_usage(tmp_path: Path) -> None:
    from engine_kit import text_body

    proc = run_example(tmp_path, [Response(text_body("Sunny", " in Paris."))])
    assert proc.returncode == 0, proc.stderr
    assert "Sunny in Paris." in proc.stdout and "input_tokens" in proc.stdout


PLUGINS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_license_is_an_spdx_expression(plugin: str) -> None:
    doc = tomllib.loads((ROOT / "plugins" / plugin / "pyproject.toml").read_text("utf-8"))
    assert isinstance(doc["project"]["license"], str), "use license = \"MIT\" (PEP 639), not a table"
    # setuptools reads a license expression from 77 on.
    requires = doc["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in requires), requires


def test_core_finds_its_data_only_directories_as_packages() -> None:
    # With find: the data-only web/ directory makes setuptools print a "Package would be ignored" warning
    # on every install; find_namespace: lists it.
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["options"]["packages"].strip() == "find_namespace:"
    assert "__pycache__" in cfg["options.packages.find"]["exclude"]
