"""A fault-injecting loopback server: serves a provider's stream and breaks it on purpose.

Plugin authors use it to prove their adapter keeps what arrived and ends in a typed error::

    from hookstream import chat, get_model
    from hookstream.testing import FaultServer

    with FaultServer("anthropic", "close_mid_args") as srv:
        model = get_model("anthropic:fault-model", base_url=srv.base_url, api_key="test")
        stream = chat(model, "hi", tools=[get_weather])
        events = list(stream)   # ends with RUN_ERROR code connection_closed; the text is in result()

The first request gets the faulted stream (by default :func:`~.provider_bodies.provider_stream`:
reasoning, text, one tool call); later requests get :func:`~.provider_bodies.final_stream` (after an
HTTP error fault: the clean stream first, so a retry succeeds). Each SSE event is sent as its own HTTP
chunk, as providers do; ``split`` frames the events of the script another way (see
:func:`~.server.split_body`): ``"bytes"`` one byte per chunk, ``"lines"`` one line per chunk (the
blank line ending an event alone, as a server flushing line by line sends it), ``"events"`` with
``per_read=n`` n events per chunk. The client reads at most one chunk per read. Faults (:data:`FAULTS`):

* ``close_mid_text`` / ``close_mid_args`` / ``close_mid_frame``: drop the TCP connection (FIN) without
  the terminating chunk after some text deltas / inside the tool arguments / halfway through an event.
  ``reset_mid_text``: a TCP RST after some text deltas (once the client has received them).
* ``stall_keepalive``: after the text, idle ``stall_seconds`` sending the provider's keepalive (SSE
  comment; Anthropic ``ping``) every ``keepalive_every`` seconds, then finish normally.
  ``stall_silent``: idle ``stall_seconds`` sending nothing.
* ``malformed_frame``: a chunk header that is not hex, then drop. ``invalid_json``: an event whose data
  is not JSON. ``unknown_event``: an event type no adapter knows, then the normal rest.
* ``huge_line``: one valid text event of ``huge_bytes`` bytes (default 10 MiB), sent in 64 KiB chunks.
* ``utf8_split``: the whole stream cut inside every multi-byte UTF-8 sequence, pieces ``split_pause``
  seconds apart (so they arrive in separate reads). ``utf8_truncated``: an event holding a truncated
  UTF-8 sequence.
* ``http_401``, ``http_404``, ``http_429``, ``http_500``, ``http_503`` (and ``..._retry_after``
  variants with a ``Retry-After: {retry_after}`` header): the status with the provider's error body.
* ``provider_error``: the provider's in-stream error event after the text.
* ``slow``: 1 byte every ``slow_delay`` seconds (10 ms) for the first ``slow_bytes`` bytes (all when
  ``None``), then the rest at once.

Thread safety: configure before :meth:`FaultServer.start`; the server runs on its own threads and
:attr:`FaultServer.requests` may be read once the client call returned. :meth:`FaultServer.stop` ends
pending stalls at once.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .provider_bodies import BASE_PATH, StreamScript, error_body, final_stream, provider_stream
from .server import SPLITS, CapturedRequest, LoopbackServer, Response, _reset, split_body

__all__ = ["FAULTS", "HTTP_FAULTS", "ChunkWriter", "FaultServer"]

HTTP_FAULTS: dict[str, tuple[int, bool]] = {
    "http_401": (401, False),
    "http_404": (404, False),
    "http_429": (429, False),
    "http_429_retry_after": (429, True),
    "http_500": (500, False),
    "http_503": (503, False),
    "http_503_retry_after": (503, True),
}
"""HTTP status faults: name -> (status, sends ``Retry-After``)."""

FAULTS: tuple[str, ...] = (
    "none",
    "close_mid_text",
    "close_mid_args",
    "close_mid_frame",
    "reset_mid_text",
    "stall_keepalive",
    "stall_silent",
    "malformed_frame",
    "invalid_json",
    "unknown_event",
    "huge_line",
    "utf8_split",
    "utf8_truncated",
    *HTTP_FAULTS,
    "provider_error",
    "slow",
)
"""Every fault :class:`FaultServer` can inject."""

_PIECE = 65536


class ChunkWriter:
    """Writes one chunked HTTP body for a fault script: whole chunks, raw bytes (to break the framing),
    pauses that end early when the server stops, and a connection drop (FIN or RST) without the final
    chunk. With ``split`` (one of :data:`~.server.SPLITS`), :meth:`chunks` re-frames what it is given
    into ``per_read`` bytes, lines or events per chunk; :meth:`chunk` always sends one chunk."""

    __slots__ = ("_per_read", "_sock", "_split", "_stopping", "_wfile")

    def __init__(
        self,
        wfile: Any,
        sock: socket.socket,
        stopping: threading.Event,
        split: str | None = None,
        per_read: int = 1,
    ) -> None:
        self._wfile = wfile
        self._sock = sock
        self._stopping = stopping
        self._split = split
        self._per_read = per_read

    def chunk(self, data: bytes) -> None:
        """One HTTP chunk holding ``data`` (nothing for empty data: an empty chunk ends the body)."""
        if data:
            self._wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            self._wfile.flush()

    def chunks(self, pieces: Sequence[bytes]) -> None:
        """``pieces`` one chunk each, or re-framed by ``split`` when the writer has one."""
        if self._split is not None:
            pieces = split_body(b"".join(pieces), self._split, self._per_read)
        for piece in pieces:
            self.chunk(piece)

    def raw(self, data: bytes) -> None:
        """``data`` as is, outside the chunk framing."""
        self._wfile.write(data)
        self._wfile.flush()

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds``; False when the server is stopping (the script should give up)."""
        return not self._stopping.wait(seconds)

    def end(self) -> None:
        """The terminating zero-length chunk: the body is complete."""
        self.raw(b"0\r\n\r\n")

    def drop(self) -> None:
        """Close the TCP connection now (FIN), without the terminating chunk."""
        self._wfile.flush()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def reset(self) -> None:
        """Abort the TCP connection with an RST, without the terminating chunk, once the client has
        acknowledged the bytes written so far (see :func:`~.server.Response` ``ending="rst"``)."""
        try:
            _reset(self._wfile, self._sock)
        except OSError:
            pass


Script = Callable[[ChunkWriter], None]


class FaultServer:
    """A :class:`~.server.LoopbackServer` playing ``provider``'s stream with ``fault`` injected.

    ``base_url`` is what to pass as ``get_model(..., base_url=...)``. ``script`` replaces the default stream,
    ``then`` the responses for later requests. ``split`` / ``per_read`` re-frame the scripted events
    (module docstring). Times are seconds, sizes bytes. Raises :class:`ValueError` for an unknown
    fault, provider or split, or ``per_read`` < 1.
    """

    def __init__(
        self,
        provider: str,
        fault: str = "none",
        *,
        script: StreamScript | None = None,
        then: Sequence[Response] | None = None,
        stall_seconds: float = 1.0,
        keepalive_every: float = 0.1,
        slow_delay: float = 0.01,
        slow_bytes: int | None = None,
        huge_bytes: int = 10 * 1024 * 1024,
        split_pause: float = 0.002,
        retry_after: str = "0",
        seed: int = 0,
        split: str | None = None,
        per_read: int = 1,
    ) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        if split is not None and split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        if per_read < 1:
            raise ValueError(f"per_read must be at least 1, not {per_read}")
        self.split = split
        self.per_read = per_read
        self.provider = provider
        self.fault = fault
        self.script = script or provider_stream(provider)
        self.stall_seconds = stall_seconds
        self.keepalive_every = keepalive_every
        self.slow_delay = slow_delay
        self.slow_bytes = slow_bytes
        self.huge_bytes = huge_bytes
        self.split_pause = split_pause
        self.retry_after = retry_after
        self._stopping = threading.Event()
        final = then if then is not None else [
            Response(b"", writer=self._writer(self._events(final_stream(provider).events)))
        ]
        self.server = LoopbackServer([*self._first(), *final], seed=seed)

    # -- public ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    @property
    def base_url(self) -> str:
        """The ``base_url`` for this provider (``{url}/v1`` for OpenAI, ``{url}`` otherwise)."""
        return self.server.url + BASE_PATH.get(self.provider, "")

    @property
    def requests(self) -> list[CapturedRequest]:
        return self.server.requests

    def start(self) -> FaultServer:
        self._stopping.clear()
        self.server.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.server.stop()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripts --------------------------------------------------------------------------------
    def _writer(self, script: Script) -> Callable[[Any, Any], None]:
        def write(wfile: Any, sock: Any) -> None:
            script(ChunkWriter(wfile, sock, self._stopping, self.split, self.per_read))

        return write

    @staticmethod
    def _events(events: Sequence[bytes]) -> Script:
        def run(w: ChunkWriter) -> None:
            w.chunks(events)
            w.end()

        return run

    def _first(self) -> list[Response]:
        s, fault = self.script, self.fault
        ev, marks = s.events, s.marks
        if fault in HTTP_FAULTS:
            status, with_retry = HTTP_FAULTS[fault]
            headers = {"Retry-After": self.retry_after} if with_retry else {}
            return [
                Response(error_body(self.provider, status), status=status, headers=headers,
                         content_type="application/json"),
                Response(b"", writer=self._writer(self._events(ev))),
            ]
        return [Response(b"", writer=self._writer(self._script_for(fault, s, ev, marks)))]

    def _script_for(self, fault: str, s: StreamScript, ev: list[bytes], marks: dict[str, int]) -> Script:
        build = _STREAM_FAULTS.get(fault)
        if build is None:
            raise AssertionError(fault)  # FAULTS and _STREAM_FAULTS are kept in step
        return build(self, s, ev, marks)

    def _stall(self, ev: list[bytes], at: int, keepalive: bytes | None) -> Script:
        def run(w: ChunkWriter) -> None:
            w.chunks(ev[:at])
            waited = 0.0
            step = self.keepalive_every if keepalive else self.stall_seconds
            while waited < self.stall_seconds:
                if not w.pause(step):
                    return
                waited += step
                if keepalive:
                    w.chunk(keepalive)
            w.chunks(ev[at:])
            w.end()

        return run

    def _huge(self, s: StreamScript, ev: list[bytes], at: int) -> Script:
        # A valid text event of the provider, just very long: the reasoning block is replayed so that
        # Anthropic's block index lines up with the stream it is inserted into.
        text = "x" * self.huge_bytes
        big = provider_stream(self.provider, text=text, reasoning=s.reasoning, tool_name=None, text_deltas=1)
        event = big.events[big.marks["mid_text"] - 1]
        if self.provider == "anthropic":
            # Insert it inside the open text block: before that block's stop event.
            at = at - 1

        def run(w: ChunkWriter) -> None:
            w.chunks(ev[:at])
            for k in range(0, len(event), _PIECE):
                w.chunk(event[k : k + _PIECE])
            w.chunks(ev[at:])
            w.end()

        return run

    def _utf8_split(self, body: bytes) -> Script:
        def run(w: ChunkWriter) -> None:
            start = 0
            for i, byte in enumerate(body):
                if byte >= 0xC0:  # first byte of a multi-byte sequence: cut right after it
                    w.chunk(body[start : i + 1])
                    start = i + 1
                    if not w.pause(self.split_pause):
                        return
            w.chunk(body[start:])
            w.end()

        return run

    def _slow(self, body: bytes) -> Script:
        n = len(body) if self.slow_bytes is None else min(self.slow_bytes, len(body))

        def run(w: ChunkWriter) -> None:
            for i in range(n):
                w.chunk(body[i : i + 1])
                if not w.pause(self.slow_delay):
                    return
            w.chunk(body[n:])
            w.end()

        return run


# -- the stream faults' scripts: (server, stream script, its events, its marks) -> Script ----------------


_FaultScript = Callable[[FaultServer, StreamScript, list[bytes], dict[str, int]], Script]


def _cut(ev: list[bytes], n: int, partial: int = 0, rst: bool = False) -> Script:
    """Send ``ev[:n]`` and ``partial`` bytes of ``ev[n]``, then drop or reset the connection."""
    def run(w: ChunkWriter) -> None:
        w.chunks(ev[:n])
        if partial:
            w.chunk(ev[n][:partial])
        if rst:
            w.reset()
        else:
            w.drop()

    return run


def _close_mid_args(server: FaultServer, s: StreamScript, ev: list[bytes], marks: dict[str, int]) -> Script:
    after_text, mid_args = marks["after_text"], marks["mid_args"]
    # Gemini sends a call whole: the arguments can only be cut inside that event's frame.
    whole = not any(b"arguments" in e or b"partial_json" in e for e in ev[after_text:mid_args + 1])
    return _cut(ev, mid_args, len(ev[mid_args]) * 2 // 3) if whole else _cut(ev, mid_args)


def _malformed_frame(server: FaultServer, s: StreamScript, ev: list[bytes], marks: dict[str, int]) -> Script:
    def malformed(w: ChunkWriter) -> None:
        w.chunks(ev[:marks["after_text"]])
        w.raw(b"zz\r\nthis is not a chunk\r\n")
        w.drop()

    return malformed


def _insert(mark: str, event: Callable[[StreamScript], bytes]) -> _FaultScript:
    """A fault that inserts one event before the one at ``mark``."""
    def build(server: FaultServer, s: StreamScript, ev: list[bytes], marks: dict[str, int]) -> Script:
        at = marks[mark]
        return server._events([*ev[:at], event(s), *ev[at:]])

    return build


_UTF8_TRUNCATED = b"data: " + b'{"truncated": "caf\xc3"}\n\n'

_STREAM_FAULTS: dict[str, _FaultScript] = {
    "none": lambda server, s, ev, marks: server._events(ev),
    "close_mid_text": lambda server, s, ev, marks: _cut(ev, marks["mid_text"]),
    "close_mid_args": _close_mid_args,
    "close_mid_frame": lambda server, s, ev, marks: _cut(ev, marks["mid_text"], len(ev[marks["mid_text"]]) // 2),
    "reset_mid_text": lambda server, s, ev, marks: _cut(ev, marks["mid_text"], rst=True),
    "stall_keepalive": lambda server, s, ev, marks: server._stall(ev, marks["after_text"], s.keepalive),
    "stall_silent": lambda server, s, ev, marks: server._stall(ev, marks["after_text"], None),
    "malformed_frame": _malformed_frame,
    "invalid_json": _insert("after_text", lambda s: s.invalid_json),
    "unknown_event": _insert("mid_text", lambda s: s.unknown),
    "huge_line": lambda server, s, ev, marks: server._huge(s, ev, marks["after_text"]),
    "utf8_split": lambda server, s, ev, marks: server._utf8_split(b"".join(ev)),
    "utf8_truncated": _insert("after_text", lambda s: _UTF8_TRUNCATED),
    "provider_error": lambda server, s, ev, marks: server._events([*ev[:marks["after_text"]], s.error]),
    "slow": lambda server, s, ev, marks: server._slow(b"".join(ev)),
}
