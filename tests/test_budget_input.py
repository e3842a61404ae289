"""Issue 38, finding 10: the budget counts what a client controls. Under ``max_input_tokens`` 2,000 a
3 MiB photo-sized image, a 2 MiB PDF and 7,000 CJK characters are refused before the request is sent
(real loopback HTTP: the model never sees them), also through a real `hookstream serve` process; and
``--max-cost-usd`` without genai-prices stops ``chat`` and ``serve`` at start-up."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import zlib
from typing import Any

import hookstream
import pytest
import requests
from hookstream import FilePart, Message
from hookstream.errors import BudgetExceededError
from hookstream.testing import LoopbackServer, Response, run_cli
from hookstream.testing.provider_bodies import final_stream

NEVER = 60.0


def png(width: int, height: int, noisy_rows: int) -> bytes:
    """A valid grey PNG of ``width`` x ``height`` pixels whose first ``noisy_rows`` rows are random (so
    they do not compress): its size in bytes is about ``width * noisy_rows``."""
    rng = random.Random(38)
    rows = bytearray()
    for y in range(height):
        rows += b"\x00" + (rng.randbytes(width) if y < noisy_rows else bytes(width))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 1))
            + chunk(b"IEND", b""))


def pdf(pages: int, padding: int) -> bytes:
    """A PDF of ``pages`` empty pages and a ``padding``-byte stream object (as a scanned page's image)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (4 + i) for i in range(pages))
               + b"] /Count %d >>" % pages,
               b"<< /Length %d >>\nstream\n" % padding + b"\x00" * padding + b"\nendstream"]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


PHOTO = png(3000, 2000, 1100)  # 3 MiB: Gemini's 768-pixel tiles charge 12 x 258 = 3,096 tokens
CJK = "漢字かなカナ한글" * 875  # 7,000 characters


def budget_run(message: Message, limit: int = 2000) -> tuple[hookstream.RunResult, int]:
    with LoopbackServer([Response(b"".join(final_stream("openai").events))]) as srv:
        model = hookstream.get_model("openai:local-llama", base_url=srv.url + "/v1", api_key="k")
        result = hookstream.chat(model, [message], plugins=[("budget", {"max_input_tokens": limit})]).result()
        return result, len(srv.requests)


@pytest.mark.parametrize("message", [
    Message.user("What is in this photo?", FilePart.from_bytes(PHOTO, "image/png")),
    Message.user("Summarise.", FilePart.from_bytes(pdf(1, 2 * 1024 * 1024), "application/pdf")),
    Message.user(CJK),
], ids=["3 MiB image", "2 MiB PDF", "7,000 CJK characters"])
def test_the_budget_refuses_what_a_client_controls(message: Message) -> None:
    assert len(PHOTO) > 3 * 1024 * 1024
    result, sent = budget_run(message)
    assert sent == 0  # refused before the request was sent
    assert isinstance(result.error, BudgetExceededError) and result.error.count > 2000


def test_small_files_and_ascii_text_count_as_the_providers_do() -> None:
    from hookstream._estimate import file_tokens, text_tokens

    assert file_tokens(FilePart.from_bytes(png(200, 200, 0), "image/png")) == 258  # Gemini's one small image
    assert file_tokens(FilePart.from_bytes(PHOTO, "image/png")) == 3096
    assert file_tokens(FilePart.from_bytes(pdf(3, 10), "application/pdf")) == 3 * 4600
    assert text_tokens("hello world!") == 3 and text_tokens("漢字") == 2
    result, sent = budget_run(Message.user("What is it?", FilePart.from_bytes(png(200, 200, 0), "image/png")))
    assert result.error is None and sent == 1


def test_serve_refuses_a_big_image_before_the_model_sees_it() -> None:
    with LoopbackServer([Response(b"".join(final_stream("openai").events))]) as srv:
        proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--port", "0", "--model",
                                 "openai:local-llama", "--base-url", srv.url + "/v1", "--max-input-tokens", "2000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "OPENAI_API_KEY": "k"})
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert "listening on" in line, line
            url = line.split("listening on ", 1)[1].split()[0]
            import base64

            image: dict[str, Any] = {"type": "image", "source": {"type": "data", "mimeType": "image/png",
                                                                 "value": base64.b64encode(PHOTO).decode()}}
            doc = {"threadId": "t-img", "runId": "r1", "messages": [
                {"id": "u1", "role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}]}
            resp = requests.post(url, json=doc, timeout=NEVER)
            events = [json.loads(x[6:]) for x in resp.iter_lines(decode_unicode=True) if x.startswith("data: ")]
        finally:
            proc.terminate()
            proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight
        assert srv.requests == []
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "budget_exceeded"


@pytest.mark.parametrize("command", ["chat", "serve"])
def test_max_cost_usd_without_prices_is_a_start_up_error(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hookstream import _prices

    monkeypatch.setattr(_prices, "_version", lambda: None)  # as without genai-prices installed
    args = ["chat", "hi"] if command == "chat" else ["serve", "--port", "0"]
    result = run_cli([*args, "--model", "openai:gpt-4o", "--base-url", "http://127.0.0.1:9/v1",
                      "--max-cost-usd", "0.5"], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 2  # click's usage error: nothing ran, nothing listens
    assert "--max-cost-usd needs model prices" in result.output
    with pytest.raises(ImportError, match="needs model prices"):
        hookstream.chat("openai:gpt-4o", "hi", plugins=[("budget", {"max_cost_usd": 0.5})])
