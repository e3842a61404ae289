"""The byte heuristic for token counts: 4 characters a token, the rule of thumb OpenAI's tokenizer guide
gives for English (Google's Gemini docs give the same). It is what every count falls back to when neither
the provider's endpoint nor a tokenizer for the model is at hand (:func:`hookstream.count_tokens`, source
``"estimate"``) and what ``History.last_tokens`` sizes a window with.

The rule is for ASCII text only: a client sending Chinese, Japanese or Korean text (about one token a
character or more in every provider's tokenizer) would be undercounted four times, so each non-ASCII
character counts as a whole token (:func:`text_tokens`). Files (:class:`~hookstream.FilePart`) count by
the providers' documented rules (:func:`file_tokens`): an image by its size in pixels, read from its
header (the most any of OpenAI's 512-pixel tiles, Anthropic's pixels / 750 and Gemini's 768-pixel tiles
of 258 tokens would charge), a PDF by its pages (:data:`PDF_PAGE_TOKENS` each), text as text, and
anything else (audio, video, an image whose header is not read) at one token per
:data:`FILE_BYTES_PER_TOKEN` bytes. A file given by URL counts :data:`URL_FILE_TOKENS` (its size is not
known here).

Thread safety: pure functions.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ._messages import FilePart, Message

__all__ = ["CHARS_PER_TOKEN", "FILE_BYTES_PER_TOKEN", "PDF_PAGE_TOKENS", "URL_FILE_TOKENS", "estimate_request_tokens",
           "estimate_tokens", "file_tokens", "files_tokens", "image_tokens", "message_texts", "text_tokens"]

CHARS_PER_TOKEN = 4
FILE_BYTES_PER_TOKEN = 256
"""Bytes of a file counted as one token when no provider rule applies (audio, video, an unread image)."""
PDF_PAGE_TOKENS = 4_600
"""Tokens one PDF page counts: Anthropic's documented 1,500 to 3,000 text tokens a page plus the page
as an image (about 1,600)."""
URL_FILE_TOKENS = 1_600
"""Tokens a file given by URL counts (an image at Anthropic's largest; the file is not fetched)."""
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")


def text_tokens(text: str) -> int:
    """Tokens of ``text`` by the estimate: ASCII characters at :data:`CHARS_PER_TOKEN` a token, every
    other character a token of its own (CJK text is about a token a character or more)."""
    return _units(text) // CHARS_PER_TOKEN


def _units(text: str) -> int:
    """Quarter tokens of ``text``: 1 an ASCII character, :data:`CHARS_PER_TOKEN` any other."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars + CHARS_PER_TOKEN * (len(text) - ascii_chars)


def image_tokens(width: int, height: int) -> int:
    """The most a ``width`` x ``height`` pixel image costs by the providers' documented rules: OpenAI
    (high detail: fit in 2048 x 2048, shortest side to 768, 170 a 512-pixel tile plus 85), Anthropic
    (long side to 1,568 and at most 1.15 megapixels, then pixels / 750) and Gemini (258 for an image
    within 384 x 384, else 258 a 768-pixel tile)."""
    w, h = float(max(1, width)), float(max(1, height))
    scale = min(1.0, 2048 / max(w, h))
    ow, oh = w * scale, h * scale
    scale = min(1.0, 768 / min(ow, oh))
    openai = 85 + 170 * math.ceil(ow * scale / 512) * math.ceil(oh * scale / 512)
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)))
    anthropic = math.ceil(w * scale * h * scale / 750)
    gemini = 258 if w <= 384 and h <= 384 else 258 * math.ceil(w / 768) * math.ceil(h / 768)
    return max(openai, anthropic, gemini)


def _image_size(data: bytes) -> tuple[int, int] | None:
    try:
        import imagesize
    except ImportError:  # counted by its bytes instead
        return None
    try:
        w, h = imagesize.get(io.BytesIO(data))
    except Exception:  # a header imagesize cannot read: counted by its bytes
        return None
    return (int(w), int(h)) if w > 0 and h > 0 else None


def file_tokens(part: FilePart) -> int:
    """Tokens a file counts in the estimate (see the module docstring), at least 1."""
    data = part.data
    kind = part.media_type.split(";", 1)[0].strip().lower()
    if data is None:
        return URL_FILE_TOKENS
    by_bytes = max(1, len(data) // FILE_BYTES_PER_TOKEN)
    if kind.startswith("image/"):
        size = _image_size(data)
        return image_tokens(*size) if size is not None else by_bytes
    if kind == "application/pdf":
        pages = len(_PAGE.findall(data))
        # Pages kept in compressed object streams are not found: the file's bytes bound it then.
        return pages * PDF_PAGE_TOKENS if pages else max(PDF_PAGE_TOKENS, by_bytes)
    if kind.startswith("text/") or kind in ("application/json", "application/xml"):
        return max(1, text_tokens(data.decode("utf-8", "replace")))
    return by_bytes


def message_texts(message: Message) -> Iterator[str]:
    """The texts of ``message`` a count covers: its text and reasoning, tool-call arguments and tool results."""
    for p in message.parts:
        text = getattr(p, "text", None)
        if text:
            yield text
        raw = getattr(p, "arguments_raw", None)
        if raw:
            yield raw
        output = getattr(p, "output", None)
        if output is not None:
            yield str(output)


def estimate_tokens(message: Message) -> int:
    """A rough token count of ``message``: :func:`text_tokens` of its text, tool arguments and results,
    plus :func:`file_tokens` of its files (tool results' files too), at least 1."""
    n = sum(_units(t) for t in message_texts(message)) // CHARS_PER_TOKEN
    return max(1, n + files_tokens(message))


def files_tokens(message: Message) -> int:
    """:func:`file_tokens` of every file of ``message`` (its file parts and its tool results' files)."""
    n = 0
    for p in message.parts:
        if isinstance(p, FilePart):
            n += file_tokens(p)
        for f in getattr(p, "files", None) or ():
            n += file_tokens(f)
    return n


def estimate_request_tokens(messages: Iterable[Message], tool_schemas: Iterable[Any] = ()) -> int:
    """A rough token count of a request: :func:`estimate_tokens` of each message plus the characters of
    the tools' JSON schemas (``{"name", "description", "parameters"}`` values) / 4."""
    n = sum(estimate_tokens(m) for m in messages)
    schemas = list(tool_schemas)
    if schemas:
        n += len(json.dumps(schemas, separators=(",", ":"))) // CHARS_PER_TOKEN  # ASCII: non-ASCII is escaped
    return n
