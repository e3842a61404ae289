"""The AWS event-stream framing (``application/vnd.amazon.eventstream``), decoded by botocore.

Bedrock's ``ConverseStream`` answers with binary messages, not SSE (Bedrock API Reference,
"ConverseStream", Response Syntax; the framing itself: AWS SDK "Event stream encoding"). Each message::

    total length (uint32 BE, bytes, the whole message) | headers length (uint32 BE) | prelude CRC32
    headers (name, type, value)* | payload | message CRC32

:class:`EventStreamFraming` hands the socket's reads to :class:`botocore.eventstream.EventStreamBuffer`
as they arrive and yields each :class:`botocore.eventstream.EventStreamMessage` (``.headers``: a dict
such as ``{":message-type": "event", ":event-type": "contentBlockDelta", ":content-type":
"application/json"}``; ``.payload``: bytes, the JSON document) the moment its last byte is read.
Checksums, header decoding and message boundaries are botocore's; this module only bounds the size of
one message and maps botocore's errors to hookstream's.

Errors (raised after every complete message before the bad one was yielded):

* :class:`~hookstream.errors.CorruptFrameError` (``corrupt_frame``): a prelude or message CRC32 does
  not match (botocore's ``ChecksumMismatch``): the bytes were damaged.
* :class:`~hookstream.errors.MalformedChunkError` (``malformed_chunk``): any other botocore
  ``ParserError`` (header or payload length over the protocol limits, a duplicate header).
* :class:`~hookstream.errors.LineTooLongError` (``line_too_long``): a message whose total-length
  prelude says more than ``max_event_bytes`` bytes; raised as soon as those 4 bytes are read, so an
  oversized message is never buffered.

Thread safety: :data:`EVENT_STREAM` is a stateless singleton; each :meth:`EventStreamFraming.events`
generator keeps its own buffer and is iterated by one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from botocore.eventstream import (
    ChecksumMismatch,
    EventStreamBuffer,
    ParserError,
)
from hookstream.errors import CorruptFrameError, LineTooLongError, MalformedChunkError
from hookstream.plugin import Framing

__all__ = ["EVENT_STREAM", "MEDIA_TYPE", "EventStreamFraming"]

MEDIA_TYPE = "application/vnd.amazon.eventstream"
"""The response media type of every AWS event stream (Bedrock ``ConverseStream`` included)."""

_PRELUDE = 12  # total length, headers length, prelude CRC: 3 x uint32
_MIN_MESSAGE = 16  # a prelude and the message CRC, no headers, no payload


def _total_length(prelude: bytes) -> int:
    """The first field of a message prelude: the message's size in bytes, big-endian uint32."""
    return int.from_bytes(prelude[:4], "big")


class EventStreamFraming(Framing):
    """AWS event-stream messages through botocore's :class:`~botocore.eventstream.EventStreamBuffer`.

    Accepts a body labelled ``application/vnd.amazon.eventstream`` and, whatever its label (recorded
    cassettes and some proxies drop or rewrite it), a body whose first 12 bytes are a prelude whose
    CRC32 botocore verifies."""

    name = "aws-eventstream"
    content_types = (MEDIA_TYPE,)
    media_type = MEDIA_TYPE

    def accepts(self, content_type: str | None, head: bytes | None) -> bool:
        if super().accepts(content_type, head):
            return True
        if head is None or len(head) < _PRELUDE:
            return False
        buffer = EventStreamBuffer()
        buffer.add_data(head[:_PRELUDE])
        try:
            next(buffer)
        except StopIteration:
            return True  # botocore read a valid prelude and waits for the rest of the message
        except ParserError:
            return False
        return True

    def events(self, reads: Iterable[bytes], max_event_bytes: int) -> Iterator[Any]:
        """Each decoded message of ``reads`` (bytes split anywhere), in order; see the module
        docstring for the errors."""
        buffer = EventStreamBuffer()
        pending = 0  # bytes of the message still incomplete after the last read
        head = b""  # its first bytes (up to 4: the total length), to bound it before it is buffered
        for data in reads:
            if not data:
                continue
            buffer.add_data(data)
            pending += len(data)
            try:
                for message in buffer:
                    size = message.prelude.total_length
                    if size > max_event_bytes:
                        raise LineTooLongError(max_event_bytes)
                    pending -= size
                    yield message
            except ChecksumMismatch as exc:
                raise CorruptFrameError(f"AWS event-stream message failed its CRC32 check ({exc})",
                                        _excerpt(data)) from None
            except ParserError as exc:
                raise MalformedChunkError(f"AWS event-stream message cannot be decoded ({exc})",
                                          _excerpt(data)) from None
            if pending == 0:
                head = b""
            elif pending <= len(data):
                head = data[len(data) - pending:][:4]
            else:  # the open message started in an earlier read, whose bytes ``head`` holds
                head = (head + data)[:4]
            if len(head) == 4 and _total_length(head) > max_event_bytes:
                raise LineTooLongError(max_event_bytes)

    def split_events(self, body: bytes) -> list[bytes]:
        """``body`` cut after each message, by each prelude's total length (no CRC is checked here: a
        damaged body is cut the same way and fails when decoded)."""
        pieces: list[bytes] = []
        k = 0
        while len(body) - k >= _MIN_MESSAGE:
            size = _total_length(body[k:k + 4])
            if size < _MIN_MESSAGE:
                break
            pieces.append(body[k:k + size])
            k += size
        if k < len(body):
            pieces.append(body[k:])
        return pieces


def _excerpt(data: bytes) -> str:
    # A bounded, printable view of the read that held the bad bytes (MalformedChunkError keeps 200).
    return data[:200].decode("latin-1")


EVENT_STREAM = EventStreamFraming()
"""The AWS event-stream framing of the ``bedrock`` provider."""
