"""Every ```python block in docs/ runs (offline: samples use the loopback server or the demo).

Blocks of one page run in order in one fresh interpreter (later blocks may use earlier names), in a
temporary working directory. A block right after an ``<!-- skip-sample ... -->`` comment is not run:
that marker is only for samples that cannot run offline (a live API key), and says why. Nor is a *file
block* of a guide (right after a line holding only its path in backticks and a colon, see
``tests/guide_kit.py``): it is a module of the guide's package, and ``tests/test_plugin_guides.py`` runs
it where the guide puts it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from guide_kit import FILE_LINE

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"(?P<skip><!--\s*skip-sample[^>]*-->\s*\n|" + FILE_LINE + r")?```python\n(?P<code>.*?)\n```",
                    re.S | re.M)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def samples(page: Path) -> list[tuple[int, str]]:
    text = page.read_text("utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code"))
            for m in _BLOCK.finditer(text) if not m.group("skip")]


def test_docs_have_samples() -> None:
    assert sum(len(samples(p)) for p in pages()) >= 5


@pytest.mark.parametrize("page", [p for p in pages() if samples(p)], ids=lambda p: str(p.relative_to(DOCS)))
def test_page_samples_run(page: Path, tmp_path: Path) -> None:
    pytest.importorskip("hookstream_openai", reason="the doc samples use the demo, which needs hookstream-openai")
    script = []
    for line, code in samples(page):
        # Line markers so a traceback names the block's line in the page.
        script.append(f"# --- {page.name}:{line}\n{code}\n")
    source = "\n".join(script)
    (tmp_path / "sample.py").write_text(source)
    proc = subprocess.run([sys.executable, "sample.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PATH": "", "HOME": str(tmp_path), "HOOKSTREAM_DOCS_SAMPLE": "1"})
    assert proc.returncode == 0, f"{page.name} samples failed:\n{proc.stderr[-4000:]}"
