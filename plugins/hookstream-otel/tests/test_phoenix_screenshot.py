"""The demo's trace as Arize Phoenix's UI draws it, screenshotted in headless Chromium for the docs.

Phoenix (phoenix_kit.py, the session's one) is started on 127.0.0.1 and receives the trace of ``hookstream demo``; then
``tests/e2e/phoenix_trace.mjs`` (Debian's ``/usr/bin/chromium`` through ``playwright-core``, as the
browser end-to-end test drives it) opens Phoenix's page for that trace, waits until the span tree shows
every span name, and takes a screenshot. The test checks the page showed the names as text and that
the screenshot is a whole PNG of the viewport's size. With ``HOOKSTREAM_UPDATE_DOCS=1`` it then writes it
to ``docs/_static/otel-demo-trace.png``, the image docs/observability.md shows; otherwise a test run
leaves the checkout as it found it.

Needs Phoenix (``scripts/install-otel-backend``), Chromium, Node and ``tests/e2e/node_modules``
(``scripts/install-browser-deps``): a missing one skips with the reason, and fails when CI is set.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from phoenix_kit import DEMO_SPANS, ROOT, demo_spans, missing, phoenix_fixture  # noqa: F401  (fixture `phoenix`)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

E2E = ROOT / "tests" / "e2e"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DOCS_IMAGE = ROOT / "docs" / "_static" / "otel-demo-trace.png"
PROJECT = "hookstream-demo"
VIEWPORT = (1400, 860)  # phoenix_trace.mjs's viewport, in CSS pixels at device scale 1


def _node() -> str:
    node = shutil.which("node")
    if not Path(CHROMIUM).exists():
        missing(f"{CHROMIUM} not found: run scripts/install-browser-deps")
    if node is None:
        missing("Node.js not found: install it, then run scripts/install-browser-deps")
    if not (E2E / "node_modules" / "playwright-core").is_dir():
        missing("tests/e2e/node_modules missing: run scripts/install-browser-deps")
    return node


def png_image(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG (ISO/IEC 15948 sections 5 and 11); an
    AssertionError when the signature, a chunk's CRC, the 8-bit RGB(A) header or the data's length is
    wrong, so a truncated or broken file does not pass."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r} chunk"
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
        if kind == b"IEND":
            break
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format: depth {depth}, colour type {colour}"
    pixels = zlib.decompress(b"".join(idat))
    assert len(pixels) == height * (1 + width * (3 if colour == 2 else 4)), "PNG data does not fill the image"
    return width, height, pixels


def test_the_demo_trace_as_phoenix_draws_it(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    node = _node()  # before starting Phoenix: skip early when the browser is missing
    shot = tmp_path / "trace.png"
    url = request.getfixturevalue("phoenix")  # the session's Phoenix; this test's trace has a project of its own
    spans = demo_spans(url, PROJECT)
    (trace_id,) = {s["context"]["trace_id"] for s in spans}
    proc = subprocess.run([node, str(E2E / "phoenix_trace.mjs"), url, trace_id, str(shot), *DEMO_SPANS],
                          cwd=E2E, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["ok"], result.get("error") or result
    assert result["shown"] == DEMO_SPANS  # every span name is on the page as text
    assert f"/traces/{trace_id}" in result["url"]  # the trace's own page, not a list
    data = shot.read_bytes()
    width, height, pixels = png_image(data)
    assert (width, height) == VIEWPORT
    # Sensible size: a drawn page compresses to tens of kilobytes; a blank one to a few.
    assert 30_000 < len(data) < 5_000_000, len(data)
    assert len(set(pixels[:: 97])) > 16, "the screenshot is nearly one colour"
    if os.environ.get("HOOKSTREAM_UPDATE_DOCS") == "1":
        DOCS_IMAGE.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, DOCS_IMAGE)
