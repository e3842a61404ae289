"""Framings: how a streamed response body is cut into provider events.

A provider's wire stream is bytes; its adapter wants events. A :class:`Framing` sits between the two:
it receives the body as the socket delivered it (byte strings split anywhere) and yields the
provider's events, one at a time, as soon as each is complete. Three ship:

* :data:`SSE` (the default of every provider): server-sent events, framed by sseclient-py
  (WHATWG HTML section 9.2, "Server-sent events"); yields objects with ``event``, ``data``, ``id``.
* :data:`NDJSON`: one JSON value per line (``application/x-ndjson``, Ollama's native API; also JSON
  Lines), parsed incrementally by ijson's push interface (``items_coro`` with ``multiple_values``);
  yields the parsed values (``dict`` for JSON objects, ``float`` for non-integral numbers).
* Binary framings live with the provider that needs them (``hookstream-bedrock`` decodes the AWS
  ``application/vnd.amazon.eventstream`` with botocore's parser) and subclass :class:`Framing`.

A framing also says which responses it accepts (:meth:`Framing.accepts`, from the ``Content-Type``
and the first bytes), so a 2xx body that is not the provider's stream (an HTML login page from a
proxy) is a :class:`~hookstream.errors.NotEventStreamError` before any parsing, and how a recorded body is
served on loopback (:attr:`Framing.media_type`, :meth:`Framing.split_events`).

Errors: an event larger than ``max_event_bytes`` raises :class:`~hookstream.errors.LineTooLongError` after
every event before it was yielded; an undecodable frame raises
:class:`~hookstream.errors.MalformedChunkError` (a subclass for a failed checksum), keeping a bounded excerpt
of the bytes; both become ``RUN_ERROR`` after what arrived (``hookstream._stream.call``).

Thread safety: framings are stateless singletons, shared freely; each call to :meth:`Framing.events`
keeps its state in its own generator, which one thread iterates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import sseclient

from .._errors import LineTooLongError, MalformedChunkError, TransportError

__all__ = ["NDJSON", "SSE", "Framing", "NDJSONFraming", "SSEFraming", "bounded_reads", "media_type"]


class Framing:
    """How one provider's response body becomes events. Subclass and implement :meth:`events`.

    :attr:`content_types` are the media types (lower case, no parameters) accepted as the stream;
    :attr:`media_type` labels a recorded body served on loopback (``hookstream replay``, the testing
    kit's ``replay_body``); :attr:`name` names the framing in errors and docs.
    """

    name: ClassVar[str] = ""
    content_types: ClassVar[tuple[str, ...]] = ()
    media_type: ClassVar[str] = "application/octet-stream"

    def accepts(self, content_type: str | None, head: bytes | None) -> bool:
        """Whether a 2xx response is this framing's stream. ``head`` is ``None`` when the content type
        alone should decide: return ``True`` to accept, ``False`` to have the transport read the first
        bytes (up to 64 KiB) and ask again with them. The default accepts :attr:`content_types` and,
        with ``head``, nothing else."""
        if content_type is not None and media_type(content_type) in self.content_types:
            return True
        return False

    def events(self, reads: Iterable[bytes], max_event_bytes: int) -> Iterator[Any]:
        """The provider events in ``reads`` (the body's bytes in arrival order, split anywhere).

        Raises :class:`~hookstream.errors.LineTooLongError` for an event over ``max_event_bytes`` (bytes),
        :class:`~hookstream.errors.MalformedChunkError` for bytes that cannot be framed; transport errors
        raised by ``reads`` pass through."""
        raise NotImplementedError

    def split_events(self, body: bytes) -> list[bytes]:
        """``body`` cut after each event, for serving a recording one event per read (the testing
        kit's ``split="events"``). The default cuts nothing."""
        return [body] if body else []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def media_type(content_type: str) -> str:
    """``text/event-stream; charset=utf-8`` -> ``text/event-stream`` (RFC 9110 section 8.3.1)."""
    return content_type.split(";", 1)[0].strip().lower()


# -- SSE --------------------------------------------------------------------------------------------

# The blank lines that end an event for sseclient-py: LF LF, CR LF CR LF, CR CR.
_ENDS = ((b"\n\n", 2), (b"\r\n\r\n", 4), (b"\r\r", 2))
_END_RE = re.compile(b"\n\n|\r\n\r\n|\r\r")
_CR = ord("\r")


def bounded_reads(reads: Iterable[bytes], max_event_bytes: int) -> Iterator[bytes]:
    """Pass socket reads on to sseclient-py, bounding the size of one SSE event.

    ``reads`` are byte strings as the socket delivered them, split anywhere. The output is the same
    bytes in the same order, cut into pieces such that sseclient-py's events do not depend on where the
    reads were split. An event (its lines and the blank line ending it, in bytes) longer than
    ``max_event_bytes`` raises :class:`~hookstream.errors.LineTooLongError` after every event before
    it was passed on, so those are still delivered; events after it are not read.

    Event ends follow sseclient-py: LF LF, CR LF CR LF and CR CR (the blank line of the SSE spec,
    WHATWG HTML section 9.2.6). CR CR LF is always cut after CR CR: sseclient-py checks for an event
    end after each line, so without the cut it would end the event there only when a read happened to
    end between CR and LF.

    Cost is linear in stream length: each read is searched a constant number of times (a read without
    CR: once for CR, then a check of its last two bytes, or once backwards for LF LF when it does not
    end an event), never the bytes of earlier reads; only once an event
    may exceed the limit (the open event plus the read is longer than ``max_event_bytes``) are the
    event ends inside the read walked one by one.
    """
    pending = 0  # bytes of the event still open at the end of the last read
    tail = b""  # the stream's last 3 bytes, to see an event end split across two reads
    for data in reads:
        if not data:
            continue
        # Most streams are LF only: skip the CR searches. An int operand makes the test one memchr; a
        # bytes operand first fails a conversion to int, an exception costing ten times the search.
        has_cr = _CR in data
        if not has_cr and data.endswith(b"\n\n") and pending + len(data) <= max_event_bytes:
            # The usual read: one HTTP chunk of whole LF-only events. It ends with an event end, so no
            # event is left open and nothing needs cutting: only the tail is kept.
            pending = 0
            tail = data[-3:] if len(data) >= 3 else (tail + data)[-3:]
            yield data
            continue
        # An event end split across reads holds the last byte of the previous read.
        split_end = tail[-1:] in (b"\n", b"\r")
        fail = -1  # where in ``data`` an oversized event starts
        if pending + len(data) <= max_event_bytes:
            # No event can exceed the limit in this read: only the last event end matters.
            i = data.rfind(b"\n\n")
            last = i + 2 if i >= 0 else 0
            if has_cr:
                i = data.rfind(b"\r\n\r\n")
                if i >= 0 and i + 4 > last:
                    last = i + 4
                i = data.rfind(b"\r\r")
                if i >= 0 and i + 2 > last:
                    last = i + 2
            if last < 3 and split_end:  # an end split across reads ends at offset 1 to 3
                last = max([last, *_joint_ends(tail, data)])
            pending = len(data) - last if last else pending + len(data)
        else:
            start = -pending  # where the open event started, relative to ``data``
            for end in _all_ends(data, _joint_ends(tail, data) if split_end else []):
                if end - start > max_event_bytes:
                    fail = max(start, 0)
                    break
                start = end
            else:
                pending = len(data) - start
                if pending > max_event_bytes:
                    fail = max(start, 0)
        before, tail = tail, (tail + data)[-3:] if len(data) < 3 else data[-3:]
        if fail >= 0:
            yield from _cut_cr_cr_lf(before, data[:fail])
            raise LineTooLongError(max_event_bytes)
        if has_cr:
            yield from _cut_cr_cr_lf(before, data)
        else:
            yield data


def _joint_ends(tail: bytes, data: bytes) -> list[int]:
    """Ends (offsets into ``data``) of the event ends that start in ``tail`` and end in ``data``."""
    joint = tail + data[:3]
    out = []
    for pat, n in _ENDS:
        i = joint.find(pat)
        while 0 <= i < len(tail):
            if i + n > len(tail):
                out.append(i + n - len(tail))
            i = joint.find(pat, i + 1)
    return out


def _all_ends(data: bytes, joint: list[int]) -> list[int]:
    """Every event end in ``data`` (overlapping ones included, so the result does not depend on
    where the search started), with ``joint``, ascending."""
    ends = set(joint)
    pos = 0
    while (m := _END_RE.search(data, pos)) is not None:
        ends.add(m.end())
        pos = m.start() + 1
    return sorted(ends)


def _cut_cr_cr_lf(before: bytes, data: bytes) -> Iterator[bytes]:
    """``data`` in pieces, cut between CR CR and a following LF (``before``: the bytes before it)."""
    k = 0
    if before.endswith(b"\r") and data.startswith(b"\r\n"):
        yield data[:1]
        k = 1
    i = data.find(b"\r\r\n")
    while i >= 0:
        yield data[k : i + 2]
        k = i + 2
        i = data.find(b"\r\r\n", i + 1)
    if k == 0:
        if data:
            yield data
    elif k < len(data):
        yield data[k:]


_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":", b"data\n", b"data\r")
_SSE_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class SSEFraming(Framing):
    """Server-sent events through sseclient-py, each event bounded by ``max_event_bytes``
    (:func:`bounded_reads`). A body labelled otherwise (some OpenAI-compatible
    servers say ``text/plain`` or nothing) is accepted when its first bytes start like SSE: a field
    name or a comment line."""

    name = "sse"
    content_types = ("text/event-stream",)
    media_type = "text/event-stream"

    def accepts(self, content_type: str | None, head: bytes | None) -> bool:
        if super().accepts(content_type, head):
            return True
        return head is not None and head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_SSE_STARTS)

    def events(self, reads: Iterable[bytes], max_event_bytes: int) -> Iterator[Any]:
        # sseclient-py through its public API only; the size bound is its own step on the bytes fed to
        # it, as sseclient-py would otherwise buffer an endless line.
        client = sseclient.SSEClient(bounded_reads(reads, max_event_bytes), char_enc="utf-8")
        try:
            yield from client.events()
        except UnicodeDecodeError as exc:
            raise TransportError(f"stream is not valid UTF-8 ({exc.reason})") from None

    def split_events(self, body: bytes) -> list[bytes]:
        pieces, start = [], 0
        for m in _SSE_END.finditer(body):
            pieces.append(body[start:m.end()])
            start = m.end()
        if start < len(body):
            pieces.append(body[start:])
        return pieces


# -- NDJSON -----------------------------------------------------------------------------------------


class NDJSONFraming(Framing):
    """Newline-delimited JSON (one value per line; blank lines skipped), parsed by ijson's push
    interface as the bytes arrive: ``ijson.items_coro(target, "", multiple_values=True,
    use_float=True)``, so a value is yielded the moment its last byte is read and no line is
    re-scanned. A JSON body sent whole (a server that ignored ``stream: true``) is one value.

    ``max_event_bytes`` bounds one line; ijson's syntax errors (a truncated or invalid line) become
    :class:`~hookstream.errors.MalformedChunkError` with the line's first bytes."""

    name = "ndjson"
    content_types = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/json",
                     "application/x-jsonlines")
    media_type = "application/x-ndjson"

    def accepts(self, content_type: str | None, head: bytes | None) -> bool:
        if super().accepts(content_type, head):
            return True
        return head is not None and head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"

    def events(self, reads: Iterable[bytes], max_event_bytes: int) -> Iterator[Any]:
        import ijson  # only NDJSON providers pay for it

        values: list[Any] = []
        coro = ijson.items_coro(_Sink(values), "", multiple_values=True, use_float=True)
        line_bytes = 0  # bytes of the line still open at the end of the last read, to bound it
        send = coro.send
        for data in reads:
            if not data:
                continue
            n = len(data)
            if line_bytes + n <= max_event_bytes:
                # The usual read: no line can be over the limit; only the open tail is counted.
                line_bytes = 0 if data[-1] == 10 else line_bytes + n if (nl := data.rfind(b"\n")) < 0 else n - nl - 1
            else:
                # Lines that start and end inside one read are bounded by the read size (64 KiB).
                first = data.find(b"\n")
                if first < 0 or line_bytes + first > max_event_bytes:
                    raise LineTooLongError(max_event_bytes)
                line_bytes = n - data.rfind(b"\n") - 1
                if line_bytes > max_event_bytes:
                    raise LineTooLongError(max_event_bytes)
            try:
                send(data)
            except ijson.JSONError as exc:
                yield from values
                raise MalformedChunkError(f"NDJSON line is not JSON ({exc})", data.decode("utf-8", "replace")) from None
            if values:
                yield from values
                values.clear()
        try:
            coro.close()
        except ijson.JSONError as exc:
            yield from values
            raise MalformedChunkError(f"NDJSON stream ends inside a value ({exc})") from None
        yield from values

    def split_events(self, body: bytes) -> list[bytes]:
        return body.splitlines(keepends=True)


class _Sink:
    """ijson's push target: ``send(value)`` appends to a list the framing drains after each read."""

    __slots__ = ("append",)

    def __init__(self, values: list[Any]) -> None:
        self.append = values.append

    def send(self, value: Any) -> None:
        self.append(value)


SSE = SSEFraming()
"""The server-sent events framing (every provider's default)."""

NDJSON = NDJSONFraming()
"""The newline-delimited JSON framing (Ollama's native API)."""
