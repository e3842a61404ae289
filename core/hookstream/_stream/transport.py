"""HTTP transport: one streaming POST with requests; the body framed by the provider's framing.

The framing (:mod:`hookstream._stream.framing`: SSE through sseclient-py by default, NDJSON through ijson,
or a plugin's binary framing) decides whether a 2xx body is the stream and cuts it into events.
Bytes reach the framing as soon as the socket delivers them (``read1``, never a read that waits to
fill a buffer; at most 64 KiB per read), so each delta is surfaced the moment its chunk arrives. A
chunked body (as OpenAI, Anthropic and Gemini send it: one chunk per event) is parsed here, every
chunk a read completed passed on as one piece (:func:`_dechunked`, which reads urllib3's private
``HTTPResponse._fp``: docs/architecture.md says why); a compressed one, by urllib3.
Line endings ``\\n``, ``\\r\\n`` and ``\\r`` and a last event without a final blank line are
handled by sseclient-py.

Errors become typed exceptions (``hookstream.errors.HTTPStatusError``...): a non-2xx answer is an
:class:`~hookstream.errors.HTTPStatusError` subclass carrying the status and the provider's own error
message (never the request headers, so never the API key); a dropped connection is a
:class:`~hookstream.errors.ConnectionClosedError`; an event larger than ``max_event_bytes`` is a
:class:`~hookstream.errors.LineTooLongError`; a 2xx answer that is not an event stream (an HTML login
page from a proxy, a JSON body from a server that ignored ``stream: true``) is a
:class:`~hookstream.errors.NotEventStreamError` naming its content type and first bytes.

Thread safety: a :class:`Stream` is consumed by one thread; :meth:`Stream.abort` may be called from any
other thread and unblocks a pending read at once.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import attrs
import requests
import urllib3.exceptions

from .._errors import (
    ConnectError,
    ConnectionClosedError,
    HTTPStatusError,
    MalformedChunkError,
    NotEventStreamError,
    StreamTimeoutError,
    TransportError,
    error_for_status,
)
from .._secrets import SECRET_HEADERS
from .framing import SSE, Framing, bounded_reads

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DRAIN_MAX_BYTES",
    "DRAIN_TIMEOUT",
    "HTTPRequest",
    "SSEEvent",
    "Stream",
    "bounded_reads",
    "default_error_reader",
    "open_stream",
    "parse_retry_after",
]

log = logging.getLogger("hookstream.transport")

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Largest SSE event accepted, in bytes (16 MiB); a longer one ends the call with LineTooLongError."""

_READ_SIZE = 65536
_MAX_ERROR_BODY = 65536

DRAIN_MAX_BYTES = 65536
"""Most bytes :meth:`Stream.finish` reads after the provider's last event to reach the end of the body
(64 KiB; the last read may pass it by up to 64 KiB more); a longer rest closes the connection instead."""

DRAIN_TIMEOUT = 1.0
"""Longest wait of :meth:`Stream.finish` for one read of the body's rest, in seconds (the call's read
timeout when that is shorter): a server that holds back the end of its body after the last event
costs a new connection, not the caller's time."""

@attrs.define(slots=True, repr=False)
class HTTPRequest:
    """An HTTP request ready to send. ``json`` is the body; ``headers`` hold auth, so ``repr`` hides
    secret header values and :meth:`redacted_url` drops the query string (Gemini's ``key=``)."""

    url: str
    json: dict[str, Any]
    headers: dict[str, str] = attrs.Factory(dict)
    method: str = "POST"

    def body(self) -> bytes:
        """The JSON body as compact UTF-8 bytes (what is sent)."""
        return json.dumps(self.json, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def redacted_url(self) -> str:
        """The URL without its query string (which may hold a key), for logs, errors and recordings."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def redacted_headers(self) -> dict[str, str]:
        """The headers with secret values (:data:`~hookstream.plugin.SECRET_HEADERS`) replaced by ``***``."""
        return {k: ("***" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}

    def __repr__(self) -> str:
        return f"HTTPRequest({self.method} {self.redacted_url()}, headers={self.redacted_headers()!r})"


class SSEEvent(Protocol):
    """One SSE event as sseclient-py yields it: ``event`` (name, ``"message"`` when absent), ``data``
    (text, multi-line data joined with ``\\n``), ``id``."""

    event: str
    data: str
    id: str | None


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (RFC 9110 section 10.2.3: delay-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import time

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


ErrorReader = Callable[[int, bytes], tuple[str, str | None]]


def default_error_reader(status: int, body: bytes) -> tuple[str, str | None]:
    """(message, error type) from a JSON error body in the common ``{"error": {"message", "type"}}``
    shape (OpenAI, Anthropic, Gemini all use a variant); the raw text when it is not JSON."""
    text = body.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return (text[:500] or f"HTTP {status}", None)
    if isinstance(doc, list) and doc:
        doc = doc[0]
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    if isinstance(err, dict):
        message = err.get("message") or json.dumps(err)[:500]
        etype = err.get("type") or err.get("status") or err.get("code")
        return (str(message), str(etype) if etype is not None else None)
    return (str(err)[:500], None)


_MAX_CHUNK_LINE = 65536  # urllib3's bound on a chunk-size or trailer line
_LONG_SIZE_LINE = "Response chunk size line exceeded maximum allowed length"


def _unencoded_chunked_source(raw: Any) -> http.client.HTTPResponse | None:
    """The http.client response under urllib3's response ``raw`` when :func:`_dechunked` may read its
    body: ``raw`` is urllib3's own class (not a wrapper such as the recorder's, which must see the bytes
    through its methods), its body is not content-encoded (urllib3 decodes that), and the http.client
    response holds the buffered reader of the socket (``fp``) with ``read1``. None otherwise: the
    caller then reads with urllib3's public ``read_chunked``, slower but the same bytes.

    This reads urllib3's private ``HTTPResponse._fp``: urllib3 has no public way to the bytes one
    socket read completed (docs/architecture.md, "Decisions that differ": the transport's chunk
    parser). tests/test_transport_chunked.py fails when a urllib3 release moves it."""
    if type(raw) is not urllib3.HTTPResponse or \
            raw.headers.get("content-encoding", "").strip().lower() not in ("", "identity"):
        return None
    original = getattr(raw, "_fp", None)  # urllib3 private: the http.client response it wraps
    if not isinstance(original, http.client.HTTPResponse) or not callable(getattr(original.fp, "read1", None)):
        return None
    return original


def _dechunked(raw: urllib3.HTTPResponse, original: http.client.HTTPResponse) -> Iterator[bytes]:
    """The body of a chunked response (RFC 9112 section 7.1), each piece everything that one read of
    the socket completed, then the connection back to the pool as urllib3's ``read_chunked`` leaves it.
    ``original`` is the http.client response under ``raw`` (:func:`_unencoded_chunked_source`).

    Providers send one HTTP chunk per event; a client slower than the server finds dozens queued per
    read. urllib3 parses them one at a time (a line read, an ``int``, two buffered reads: about 1.5 µs
    per event) and sseclient-py and :func:`bounded_reads` then take one pass each per chunk; here one
    read of up to 64 KiB is parsed in a loop of slices (:func:`_cut_chunks`) and passed on as one byte
    string. Errors are urllib3's, raised after the bytes before them were passed on:
    :class:`urllib3.exceptions.ProtocolError` for a bad size line or a body cut short; socket errors
    and timeouts pass through."""
    read1 = original.fp.read1
    head = b""  # an incomplete chunk-size line at the end of the last read
    left = 0  # bytes of the current chunk still to come, its closing CRLF included
    while True:
        data = read1(_READ_SIZE)
        if not data:
            raise urllib3.exceptions.ProtocolError("Response ended prematurely")
        if head:
            data = head + data
        pieces: list[bytes] = []
        pos, left, outcome = _cut_chunks(data, left, pieces)
        if pieces:
            yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if outcome is None:
            head = data[pos:]
        elif outcome:
            raise urllib3.exceptions.ProtocolError(outcome)
        else:
            _end_of_body(raw, original, read1, data[pos:])
            return


def _cut_chunks(data: bytes, left: int, pieces: list[bytes]) -> tuple[int, int, str | None]:
    """Append to ``pieces`` the chunk data in ``data``, whose first ``left`` bytes end the chunk of
    the last read (its closing CRLF included). Returns (where parsing stopped, bytes of the open chunk
    still to come, outcome): outcome None when the body goes on (``data[pos:]`` is an incomplete size
    line), ``""`` after the last chunk's size line (``data[pos:]`` starts the trailer), else the
    error's message (a bad size line).

    One pass of this loop per chunk, i.e. per event: a size line is parsed whole by ``int`` first
    and split at ``;`` (a chunk extension) only when that fails, which saves a split and a list per
    event (0.47 -> 0.39 µs per Anthropic text event in a 64 KiB read, measured for issue 39)."""
    n = len(data)
    pos = 0
    if left:
        if left > n:  # the chunk goes on in the next read
            stop = min(left - 2, n)
            if stop > 0:
                pieces.append(data[:stop])
            return n, left - n, None
        if left > 2:
            pieces.append(data[:left - 2])
        pos = left
    append = pieces.append
    find = data.find
    while True:
        nl = find(b"\n", pos)
        if nl < 0 or nl - pos > _MAX_CHUNK_LINE:
            too_long = (n if nl < 0 else nl) - pos > _MAX_CHUNK_LINE
            return pos, 0, _LONG_SIZE_LINE if too_long else None
        try:
            size = int(data[pos:nl], 16)  # as urllib3: whitespace around it, the CR included, is allowed
        except ValueError:
            size = -1
        if size <= 0:
            if size < 0:  # a chunk extension after ";", or no hex number at all
                size, problem = _extended_size(data[pos:nl])
                if problem is not None:
                    return pos, 0, problem
            if size == 0:
                return nl + 1, 0, ""
        pos = nl + 1
        end = pos + size + 2  # the chunk's data and its closing CRLF
        if end > n:  # the chunk goes on in the next read
            stop = min(end - 2, n)
            if stop > pos:
                append(data[pos:stop])
            return n, end - n, None
        append(data[pos:end - 2])
        pos = end


def _extended_size(line: bytes) -> tuple[int, str | None]:
    """(size, None) of a size line that ``int`` refused whole (a chunk extension after ``;``), or
    (-1, the error's message) when it holds no valid size."""
    line = line.split(b";", 1)[0]
    try:
        size = int(line, 16)
    except ValueError:
        size = -1
    return (size, None) if size >= 0 else (-1, f"Invalid chunk length: {line[:20]!r}")


def _end_of_body(raw: urllib3.HTTPResponse, original: http.client.HTTPResponse,
                 read1: Callable[[int], bytes], rest: bytes) -> None:
    """After the last chunk: skip the trailer fields up to their empty line, then close the response
    and release its connection to the pool, as urllib3's ``read_chunked`` does at the end of a body."""
    while True:
        nl = rest.find(b"\n")
        if nl < 0:
            if len(rest) > _MAX_CHUNK_LINE:
                raise urllib3.exceptions.ProtocolError("Response chunk trailer line exceeded maximum allowed length")
            more = read1(_READ_SIZE)
            if not more:
                break  # as urllib3: some servers do not end with CRLF
            rest += more
            continue
        line, rest = rest[:nl + 1], rest[nl + 1:]
        if line == b"\r\n":
            break
    original.close()
    if rest:
        raw.close()  # bytes past the body: the connection cannot serve another request
    else:
        raw.release_conn()


class Stream:
    """An open streaming response: iterate :meth:`events` for SSE events, :meth:`close` when done."""

    def __init__(
        self,
        response: requests.Response,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        read_timeout: float | None = None,
        head: bytes = b"",
        framing: Framing = SSE,
    ) -> None:
        self.response = response
        self.framing = framing
        self.max_event_bytes = max_event_bytes
        self.read_timeout = read_timeout
        self._head = head  # bytes open_stream already read to look at the body; served first
        self._aborted = threading.Event()
        self._reader: Iterator[bytes] | None = None  # the one _chunks generator, so finish() reads on from it
        self._released = False  # finish() read the body to its end: the pool may have lent the connection out

    def _chunks(self) -> Iterator[bytes]:
        raw = self.response.raw
        try:
            data, self._head = self._head, b""
            if data:
                yield data
            elif getattr(raw, "chunked", False) and raw.supports_chunked_reads():
                # Not after ``head``: that read went through http.client's chunk parser, whose position in
                # the body neither urllib3's nor ours knows.
                original = _unencoded_chunked_source(raw)
                if original is not None:
                    yield from _dechunked(raw, original)
                else:
                    # Compressed, or a wrapped response (the recorder's tee sees the bytes through its
                    # own methods): urllib3's parser, one HTTP chunk at a time. urllib3 decodes the body
                    # when asked to: requests opens every response with decode_content=False.
                    yield from raw.read_chunked(_READ_SIZE, decode_content=True)
                return
            while data := raw.read1(_READ_SIZE):
                yield data
        except (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError, OSError) as exc:
            if self._aborted.is_set():
                return
            if isinstance(exc, TimeoutError):  # the socket's own, from a read of _dechunked
                raise StreamTimeoutError("idle", self.read_timeout or 0.0) from None
            raise ConnectionClosedError(f"connection closed mid-stream ({type(exc).__name__})") from None
        except urllib3.exceptions.ReadTimeoutError:
            raise StreamTimeoutError("idle", self.read_timeout or 0.0) from None

    def events(self) -> Iterator[Any]:
        """The provider's events in arrival order, framed by :attr:`framing` (SSE by default, whose
        comments, i.e. keepalives, sseclient-py skips).

        Raises :class:`ConnectionClosedError`, :class:`StreamTimeoutError`, :class:`LineTooLongError`
        or the framing's :class:`~hookstream.errors.MalformedChunkError`. After :meth:`abort` it simply ends.
        """
        return self.framing.events(self.reads(), self.max_event_bytes)

    def reads(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (one HTTP chunk or socket read each), unframed."""
        self._reader = self._chunks()
        return self._reader

    def abort(self) -> None:
        """Unblock a pending read and close the connection; safe from any thread. Does nothing after
        :meth:`finish` gave the connection back to the pool."""
        if self._released:
            return
        self._aborted.set()
        raw = self.response.raw
        try:
            # urllib3 keeps its own handle on the socket even after http.client dropped it
            # (a "Connection: close" answer sets HTTPConnection.sock to None).
            raw.shutdown()
            return
        except (OSError, ValueError, RuntimeError, AttributeError):
            pass
        try:
            connection = raw.connection  # urllib3 before 2.3 has no shutdown()
            sock = connection.sock if connection is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def close(self) -> None:
        """Close the response and its connection (the rest of the body unread: the connection cannot
        serve another request). For an early stop: the user broke off, a failure, a cancel."""
        self.response.close()

    def finish(self, max_bytes: int | None = None, timeout: float | None = None) -> bool:
        """After the provider's last event (``[DONE]``, ``message_stop``, the final chunk...): read the
        rest of the body, at most ``max_bytes`` bytes, each read waiting at most ``timeout`` seconds (or
        the read timeout when shorter; None: :data:`DRAIN_MAX_BYTES` and :data:`DRAIN_TIMEOUT` as they
        are when called, 0 bytes: no read, the connection closed), so the connection goes back to the
        session's pool for the next call instead of a new TCP (and TLS) handshake; then close the
        response. True when the body was read to its end. A longer rest, a slow one, a failed read or
        an :meth:`abort` closes the connection as :meth:`close` does; never raises (the stream before
        it was good).

        Thread safety: called by the thread that consumed the stream, which no longer shares it (a
        connection back in the pool must not be shut down by a late :meth:`abort`)."""
        ended = False
        reader, self._reader = self._reader, None
        left = DRAIN_MAX_BYTES if max_bytes is None else max_bytes
        wait = DRAIN_TIMEOUT if timeout is None else timeout
        try:
            if reader is not None and left > 0 and not self._aborted.is_set():
                _shorten_timeout(self.response.raw, min(wait, self.read_timeout or wait))
                for piece in reader:
                    left -= len(piece)
                    if left < 0:
                        break
                else:
                    ended = True
        except Exception as exc:  # the events before were good: a failed rest costs the connection only
            log.debug("closing the connection: reading the end of the body failed (%s)", type(exc).__name__)
        finally:
            self._released = ended
            self.response.close()  # after a body read to its end, the pool already holds its connection
        return ended


def _shorten_timeout(raw: Any, timeout: float) -> None:
    """Set the timeout of the socket under urllib3's response ``raw`` to ``timeout`` seconds (urllib3
    sets it again before the next response on that connection is read)."""
    connection = getattr(raw, "connection", None)
    sock = getattr(connection, "sock", None) if connection is not None else None
    if sock is not None:
        try:
            sock.settimeout(timeout)
        except OSError:
            pass


# What Session.request reads from the environment for every request (proxies, CA bundle): Python's
# getproxies() walks all of os.environ twice per call, 80-100 us per request here and more in a container
# with hundreds of variables. The result is kept per session and host, and read again when any variable it
# depends on or the session's own proxies/verify/cert change. (Proxies from the macOS or Windows system
# settings, used when the environment names none, are read once per session and host.)
_ENV_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
             "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUEST_METHOD")
_env_settings: weakref.WeakKeyDictionary[requests.Session, dict[Any, dict[str, Any]]] = weakref.WeakKeyDictionary()
_env_lock = threading.Lock()


def _environment_settings(session: requests.Session, url: str) -> dict[str, Any]:
    """``session.merge_environment_settings`` for a streamed request to ``url``, cached (see above)."""
    parts = urlsplit(url)
    key = (parts.scheme, parts.netloc, session.trust_env, repr(session.proxies), repr(session.verify),
           repr(session.cert), tuple(map(os.environ.get, _ENV_VARS)) if session.trust_env else ())
    with _env_lock:
        by_key = _env_settings.get(session)
        if by_key is None:
            by_key = _env_settings[session] = {}
        cached = by_key.get(key)
    if cached is not None:
        return cached  # read only: the caller unpacks it into send's keyword arguments
    fresh: dict[str, Any] = dict(session.merge_environment_settings(url, {}, True, None, None))
    with _env_lock:
        if len(by_key) > 64:  # hosts come and go: keep it bounded
            by_key.clear()
        by_key[key] = fresh
    return fresh


def open_stream(
    session: requests.Session,
    request: HTTPRequest,
    *,
    connect_timeout: float | None = 10.0,
    read_timeout: float | None = 300.0,
    error_reader: ErrorReader = default_error_reader,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    framing: Framing = SSE,
    body: bytes | None = None,
) -> Stream:
    """POST ``request`` with ``stream=True`` and return the open :class:`Stream`.

    ``connect_timeout`` and ``read_timeout`` are seconds (``read_timeout`` bounds each socket read, so
    it is an idle limit on bytes, keepalives included). Raises :class:`ConnectError`,
    :class:`StreamTimeoutError` (``connect``) or an :class:`HTTPStatusError` subclass for non-2xx, and
    :class:`NotEventStreamError` for a 2xx body that is neither labelled ``text/event-stream`` nor
    starts like one: :meth:`Framing.accepts` of ``framing`` decides, from the content type and
    then the first bytes. ``body`` is the request body as already serialised (and signed, see
    :meth:`~hookstream.plugin.Provider.sign`); ``None`` serialises ``request.json``. Every error path
    closes the response before raising.
    """
    resp = _send(session, request, body, connect_timeout, read_timeout, error_reader)
    content_type = resp.headers.get("content-type")
    head = b""
    if not framing.accepts(content_type, None):
        # Some OpenAI-compatible servers label a real event stream text/plain or send no type at all,
        # so the first bytes decide: SSE starts with a field name or a comment line.
        try:
            head = _first_bytes(resp, read_timeout)
        except BaseException:
            resp.close()
            raise
        if not framing.accepts(content_type, head):
            not_sse = _not_event_stream(resp, request, content_type, head)
            # As for status errors: the traceback keeps this frame, and so the response, alive.
            del resp
            raise not_sse
    return Stream(resp, max_event_bytes, read_timeout, head, framing)


def _send(
    session: requests.Session, request: HTTPRequest, body: bytes | None, connect_timeout: float | None,
    read_timeout: float | None, error_reader: ErrorReader,
) -> requests.Response:
    """Send ``request`` (``stream=True``) and return its 2xx response; the typed errors of :func:`open_stream`."""
    try:
        prepared = session.prepare_request(requests.Request(
            request.method, request.url, headers=request.headers, data=request.body() if body is None else body))
        resp = session.send(prepared, timeout=(connect_timeout, read_timeout), allow_redirects=True,
                            **_environment_settings(session, prepared.url or request.url))
    except requests.exceptions.ConnectTimeout:
        raise StreamTimeoutError("connect", connect_timeout or 0.0) from None
    except requests.exceptions.ReadTimeout:
        raise StreamTimeoutError("first_byte", read_timeout or 0.0) from None
    except requests.exceptions.ConnectionError as exc:
        raise ConnectError(f"cannot connect to {request.redacted_url()}: {_reason(exc)}") from None
    except requests.exceptions.RequestException as exc:
        raise TransportError(f"request to {request.redacted_url()} failed: {type(exc).__name__}") from None
    if resp.status_code >= 300:
        error = _status_error(resp, request, error_reader)
        # The traceback keeps this frame alive as long as the error lives (it is kept in the run's
        # result): drop the response here so its socket is released now.
        del resp
        raise error
    return resp


def post_json(
    session: requests.Session,
    request: HTTPRequest,
    *,
    connect_timeout: float | None = 10.0,
    read_timeout: float | None = 60.0,
    error_reader: ErrorReader = default_error_reader,
    body: bytes | None = None,
    max_bytes: int = 1 << 20,
) -> Any:
    """Send ``request`` (a non-streaming call, e.g. a token-count endpoint) and return its JSON answer.

    The same errors as :func:`open_stream` (:class:`ConnectError`, :class:`StreamTimeoutError`, an
    :class:`HTTPStatusError` subclass for non-2xx, read by ``error_reader``); a body that is not JSON or
    longer than ``max_bytes`` raises :class:`MalformedChunkError`. ``body`` is the serialised (and signed)
    request body, ``None`` serialises ``request.json``."""
    resp = _send(session, request, body, connect_timeout, read_timeout, error_reader)
    try:
        data = resp.raw.read(max_bytes + 1, decode_content=True) or b""
    except urllib3.exceptions.ReadTimeoutError:
        raise StreamTimeoutError("idle", read_timeout or 0.0) from None
    except (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError, OSError) as exc:
        raise ConnectionClosedError(f"connection closed while reading the answer ({type(exc).__name__})") from None
    finally:
        resp.close()
    if len(data) > max_bytes:
        raise MalformedChunkError(f"answer from {request.redacted_url()} larger than {max_bytes} bytes")
    try:
        return json.loads(data)
    except ValueError:
        raise MalformedChunkError(f"answer from {request.redacted_url()} is not JSON",
                                  data.decode("utf-8", "replace")) from None


def _first_bytes(resp: requests.Response, read_timeout: float | None) -> bytes:
    """The first bytes the server sent (one read, up to 64 KiB; ``b""`` for an empty body)."""
    try:
        return resp.raw.read1(_READ_SIZE) or b""
    except urllib3.exceptions.ReadTimeoutError:
        raise StreamTimeoutError("first_byte", read_timeout or 0.0) from None
    except (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError, OSError) as exc:
        raise ConnectionClosedError(f"connection closed before the first event ({type(exc).__name__})") from None


def _not_event_stream(
    resp: requests.Response, request: HTTPRequest, content_type: str | None, head: bytes
) -> NotEventStreamError:
    resp.close()  # nothing of this body is wanted: release the socket now, not when the error dies
    text = " ".join(head[:400].decode("utf-8", "replace").split())[:200]
    log.debug("HTTP %s with %r from %s is not an event stream", resp.status_code, content_type, request.redacted_url())
    return NotEventStreamError(resp.status_code, content_type, text)


def _reason(exc: BaseException) -> str:
    # requests nests urllib3 errors whose text repeats the URL; keep the innermost reason only.
    inner: Any = exc.args[0] if exc.args else exc
    reason = getattr(inner, "reason", inner)
    return type(reason).__name__ if not isinstance(reason, str) else reason


def _status_error(resp: requests.Response, request: HTTPRequest, reader: ErrorReader) -> HTTPStatusError:
    try:
        body = resp.raw.read(_MAX_ERROR_BODY, decode_content=True) or b""
    except Exception:  # the body is best effort: the status alone is still a typed error
        body = b""
    finally:
        resp.close()
    message, etype = reader(resp.status_code, body)
    retry_after = parse_retry_after(resp.headers.get("retry-after"))
    log.debug("HTTP %s from %s: %s", resp.status_code, request.redacted_url(), message)
    return error_for_status(
        resp.status_code, message, error_type=etype, retry_after=retry_after, url=request.redacted_url()
    )
