"""Every ```python block in docs/ runs on its own (offline: samples use the test model, the loopback
server or the demo), as a reader who copies one block runs it.

Each block runs alone in a fresh interpreter, in a temporary working directory that holds the page's
*file blocks* (a fenced block right after a line holding only its path in backticks and a colon, see
``tests/guide_kit.py``), as a reader who saved the files the page shows has them. A page whose blocks
build on each other says so at the top, in a line holding :data:`IN_ORDER`; its blocks run in order in
one interpreter instead (keep that the exception: a reader copies one block). A block right after an
``<!-- skip-sample ... -->`` comment is not run: that marker is only for samples that cannot run offline
(a live API key), and says why. A file block is not run as a sample: it is a file the samples use (a
guide's file blocks are its package's modules, which ``tests/test_plugin_guides.py`` runs where the guide
puts them).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from guide_kit import FILE_LINE, files

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"(?P<skip><!--\s*skip-sample[^>]*-->\s*\n|" + FILE_LINE + r")?```python\n(?P<code>.*?)\n```",
                    re.S | re.M)
IN_ORDER = "The samples on this page run in order"
"""The note a page whose blocks build on each other carries before its first block."""
IN_ORDER_PAGES: set[str] = set()
"""The pages (relative to docs/) whose samples run in order: none today."""


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def samples(page: Path) -> list[tuple[int, str]]:
    text = page.read_text("utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code"))
            for m in _BLOCK.finditer(text) if not m.group("skip")]


def in_order(page: Path) -> bool:
    text = page.read_text("utf-8")
    first = text.find("```python")
    return IN_ORDER in text[:first if first >= 0 else len(text)]


def _cases() -> list[tuple[Path, list[tuple[int, str]]]]:
    cases = []
    for page in pages():
        blocks = samples(page)
        if in_order(page) and blocks:
            cases.append((page, blocks))
        else:
            cases.extend((page, [block]) for block in blocks)
    return cases


def _case_id(case: tuple[Path, list[tuple[int, str]]]) -> str:
    page, blocks = case
    name = str(page.relative_to(DOCS))
    return f"{name}:{blocks[0][0]}" if len(blocks) == 1 and not in_order(page) else f"{name}:in-order"


def test_docs_have_samples() -> None:
    assert sum(len(samples(p)) for p in pages()) >= 5


def test_in_order_pages_are_the_exception() -> None:
    # A page joins this list deliberately (every sample that can be made self-contained is).
    ordered = {str(p.relative_to(DOCS)) for p in pages() if samples(p) and in_order(p)}
    assert ordered == IN_ORDER_PAGES


@pytest.mark.parametrize("case", _cases(), ids=_case_id)
def test_sample_runs(case: tuple[Path, list[tuple[int, str]]], tmp_path: Path) -> None:
    pytest.importorskip("hookstream_openai", reason="the doc samples use the demo, which needs hookstream-openai")
    page, blocks = case
    for rel, content in files(page.read_text("utf-8")).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    # Line markers so a traceback names the block's line in the page.
    source = "\n".join(f"# --- {page.name}:{line}\n{code}\n" for line, code in blocks)
    (tmp_path / "sample.py").write_text(source)
    proc = subprocess.run([sys.executable, "sample.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PATH": "", "HOME": str(tmp_path), "HOOKSTREAM_DOCS_SAMPLE": "1"})
    where = f"{page.name}:{blocks[0][0]}" if len(blocks) == 1 else f"{page.name} (in order)"
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-4000:]}"
