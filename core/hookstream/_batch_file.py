"""The files of a batch run: input lines checked one by one, and an append-only JSON Lines output
whose every line is whole or absent, even after a crash.

Output durability: each result line is written by one ``os.write`` of the whole line, newline
included, on a descriptor opened with ``O_APPEND``, so the kernel places it at the end of the file in
one piece (POSIX ``write``: with ``O_APPEND`` the offset and the write are one atomic step). A
process killed at any moment (even ``SIGKILL``) leaves every line it wrote in the page cache, and the
kernel writes them out. With ``fsync=True`` each line is also ``os.fsync``-ed before it counts as
written, so a power loss or a kernel crash cannot lose it either (slower: one disk flush per line);
without it such a crash may lose the last lines or leave the last one cut. A cut last line (no
newline, or not JSON) is what :class:`OutputFile` finds and truncates when it opens the file again,
so a re-run appends after the last whole line.

Thread safety: :meth:`OutputFile.write` may be called from many threads (one ``os.write`` each).
"""

from __future__ import annotations

import json
import os
from typing import Any

import attrs

from ._errors import HookstreamError

__all__ = ["BatchInput", "BatchInputError", "OutputFile", "parse_input", "read_inputs"]


class BatchInputError(HookstreamError, ValueError):
    """A batch input line (or output file line) that cannot be used: not JSON, no string ``id``,
    neither ``prompt`` nor ``messages``, or an ``id`` seen before. ``line`` is its 1-based number
    when it came from a file."""

    code = "invalid_batch_input"

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


@attrs.define(slots=True, frozen=True)
class BatchInput:
    """One chat of a batch: ``id`` (unique in the batch) and either ``prompt`` (a user message) or
    ``messages`` (``{"role", "content"}`` dicts, as :func:`hookstream.chat` takes them)."""

    id: str
    prompt: str | None = None
    messages: tuple[dict[str, Any], ...] | None = None

    @property
    def chat_input(self) -> str | list[dict[str, Any]]:
        return self.prompt if self.prompt is not None else list(self.messages or ())


def parse_input(doc: Any, line: int | None = None) -> BatchInput:
    """A :class:`BatchInput` from ``{"id": str, "prompt": str}`` or ``{"id": str, "messages": [...]}``
    (an existing :class:`BatchInput` is returned as is); raises :class:`BatchInputError`."""
    if isinstance(doc, BatchInput):
        return doc
    if not isinstance(doc, dict):
        raise BatchInputError(f"expected a JSON object, got {type(doc).__name__}", line)
    ident = doc.get("id")
    if not isinstance(ident, str) or not ident:
        raise BatchInputError('"id" must be a non-empty string', line)
    prompt, messages = doc.get("prompt"), doc.get("messages")
    if (prompt is None) == (messages is None):
        raise BatchInputError(f'id {ident!r}: give exactly one of "prompt" and "messages"', line)
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise BatchInputError(f'id {ident!r}: "prompt" must be a non-empty string', line)
        return BatchInput(ident, prompt=prompt)
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BatchInputError(f'id {ident!r}: "messages" must be a non-empty list of objects', line)
    return BatchInput(ident, messages=tuple(messages))


def read_inputs(path: str | os.PathLike[str]) -> list[BatchInput]:
    """Every input of a JSON Lines file (blank lines skipped), checked before any is run; raises
    :class:`BatchInputError` for the first bad line or a repeated id, :class:`OSError` if unreadable."""
    out: list[BatchInput] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise BatchInputError(f"not JSON: {exc.msg}", number) from None
            item = parse_input(doc, number)
            if item.id in seen:
                raise BatchInputError(f"id {item.id!r} appears twice", number)
            seen.add(item.id)
            out.append(item)
    return out


def _scan(data: bytes) -> tuple[set[str], int, list[tuple[int, int]]]:
    """The ids of the whole lines in ``data`` that hold a result (not an ``error``), the length of its
    whole-line prefix, and the ``(start, end)`` byte spans of the lines that hold an ``error``.

    Only the last line may be cut (a crash mid-write); a bad line before it is corruption and
    raises :class:`BatchInputError`."""
    done: set[str] = set()
    failed: list[tuple[int, int]] = []
    good = 0
    lines = data.split(b"\n")
    # After the last b"\n" comes either nothing (a whole file) or the cut tail.
    for number, raw in enumerate(lines[:-1], 1):
        if raw.strip():
            try:
                doc = json.loads(raw)
                ident = doc["id"]
            except (ValueError, TypeError, KeyError):
                if number == len(lines) - 1:
                    break  # the last newline-ended line is bad too: treat it as the cut one
                raise BatchInputError("output file line is not a result line; refusing to append", number) from None
            if isinstance(doc, dict) and doc.get("error") is not None:
                failed.append((good, good + len(raw) + 1))  # run again: the line goes, the id is not done
            elif isinstance(ident, str):
                done.add(ident)
        good += len(raw) + 1
    return done, good, failed


def _without(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    kept, at = [], 0
    for start, end in spans:
        kept.append(data[at:start])
        at = end
    kept.append(data[at:])
    return b"".join(kept)


class OutputFile:
    """The output JSON Lines file, opened for appending after recovering it.

    Opening reads the ids already written (:attr:`done`) and truncates a cut last line left by a
    crash (:attr:`truncated` holds how many bytes were dropped). A line holding an ``error`` is not
    done: opening removes it (the file is rewritten whole, then renamed over the old one) so its chat
    runs again and no id has two lines (:attr:`retried` counts them). ``fsync`` flushes each line to disk
    before :meth:`write` returns. Raises :class:`BatchInputError` when a line before the last is not a
    result line (the file is not this batch's output), :class:`OSError` when it cannot be opened.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            data = b""
            while chunk := os.read(self._fd, 1 << 20):
                data += chunk
            self.done, good, failed = _scan(data)
            self.truncated = len(data) - good
            self.retried = len(failed)
            if failed:
                self._rewrite(_without(data[:good], failed))
            elif self.truncated:
                os.ftruncate(self._fd, good)
                os.fsync(self._fd)
        except BaseException:
            self.close()
            raise

    def _rewrite(self, data: bytes) -> None:
        """Replace the file by ``data`` (a temporary file renamed over it: a crash leaves the old file or
        the new one, never half of one) and append to the new one."""
        tmp = f"{self.path}.rewrite-{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        os.close(self._fd)
        self._fd = -1
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)

    def write(self, doc: dict[str, Any]) -> None:
        """Append ``doc`` as one JSON line with a single ``os.write`` (and ``os.fsync`` if asked).
        Raises :class:`OSError` when the disk refuses it, or when the write was short (disk full)."""
        data = (json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        n = os.write(self._fd, data)
        if n != len(data):
            # A short write leaves a cut line; the next opening truncates it.
            raise OSError(f"short write to {self.path}: {n} of {len(data)} bytes (disk full?)")
        if self.fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

