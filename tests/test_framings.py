"""The transport's framings (NDJSON through ijson; SSE unchanged) and the provider contract's signing
and refreshing-credential hooks, through real loopback HTTP."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import pytest
import requests
from hookstream import chat, get_model
from hookstream.errors import CorruptFrameError, LineTooLongError, MalformedChunkError, MissingCredentialsError
from hookstream.events import BaseEvent
from hookstream.plugin import (
    NDJSON,
    SSE,
    CallContext,
    CallOptions,
    Framing,
    HTTPRequest,
    ModelCall,
    ModelRequest,
    Provider,
    RefreshingToken,
    StreamBuilder,
    media_type,
)
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.conformance import BODY_SUFFIXES

LINES = [{"n": i, "text": "ÄÖü 日本 🙂 \"q\" \\ " * (i % 5), "nested": {"list": [1, 2.5, None, True]}}
         for i in range(40)]
BODY = b"".join(json.dumps(v, ensure_ascii=False).encode() + b"\n" for v in LINES)


def _pieces(body: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(body):
        n = rng.randint(1, 13)
        out.append(body[i:i + n])
        i += n
    return out


@pytest.mark.parametrize("seed", range(8))
def test_ndjson_values_do_not_depend_on_where_reads_split(seed: int) -> None:
    assert list(NDJSON.events(_pieces(BODY, seed), 1 << 20)) == LINES


def test_ndjson_yields_each_value_as_soon_as_its_line_is_read() -> None:
    """Nothing reads ahead: the first value is out before the second line is read."""
    read: list[int] = []

    def reads() -> Iterator[bytes]:
        for i, line in enumerate(BODY.splitlines(keepends=True)[:3]):
            read.append(i)
            yield line

    it = NDJSON.events(reads(), 1 << 20)
    assert next(it) == LINES[0] and read == [0]
    assert next(it) == LINES[1] and read == [0, 1]


def test_ndjson_blank_lines_crlf_and_a_last_line_without_newline() -> None:
    body = b'\r\n{"a": 1}\r\n\r\n{"b": 2}\n  \n{"c": 3}'
    assert list(NDJSON.events([body], 1 << 20)) == [{"a": 1}, {"b": 2}, {"c": 3}]


def test_ndjson_numbers_are_floats_not_decimals() -> None:
    (value,) = NDJSON.events([b'{"x": 0.25, "n": 3}\n'], 100)
    assert value == {"x": 0.25, "n": 3} and type(value["x"]) is float and type(value["n"]) is int


def test_ndjson_invalid_line_keeps_the_values_before_it() -> None:
    got: list[Any] = []
    with pytest.raises(MalformedChunkError) as info:
        for v in NDJSON.events([b'{"a": 1}\n{"b": 2}\n{"c": nope}\n'], 1 << 20):
            got.append(v)
    assert got == [{"a": 1}, {"b": 2}]
    assert info.value.code == "malformed_chunk"


def test_ndjson_truncated_last_value_is_malformed() -> None:
    got: list[Any] = []
    with pytest.raises(MalformedChunkError, match="ends inside a value"):
        for v in NDJSON.events([b'{"a": 1}\n{"b": '], 1 << 20):
            got.append(v)
    assert got == [{"a": 1}]


@pytest.mark.parametrize("pieces", [[b'{"a": "' + b"x" * 200 + b'"}\n'], [b'{"a": "', b"x" * 100, b"x" * 100, b'"}\n'],
                                    [b'{"ok": 1}\n{"a": "' + b"x" * 150, b'"}\n']])
def test_ndjson_line_over_the_limit(pieces: list[bytes]) -> None:
    with pytest.raises(LineTooLongError):
        list(NDJSON.events(pieces, 100))


def test_ndjson_many_short_lines_in_one_read_are_not_over_the_limit() -> None:
    body = b'{"a": 1}\n' * 50  # 450 bytes in one read, every line 9 bytes
    assert len(list(NDJSON.events([body], 100))) == 50


def test_accepts_by_content_type_then_by_first_bytes() -> None:
    assert NDJSON.accepts("application/x-ndjson; charset=utf-8", None)
    assert not NDJSON.accepts("text/html", None)
    assert NDJSON.accepts("text/plain", b'  {"model": "x"}')
    assert not NDJSON.accepts("text/html", b"<html>")
    assert SSE.accepts("text/event-stream", None)
    assert not SSE.accepts(None, None) and SSE.accepts(None, b"data: {}\n\n")
    assert media_type("Application/X-NDJSON ; q=1") == "application/x-ndjson"


def test_split_events_gives_the_body_back() -> None:
    sse = b"data: 1\n\nevent: x\ndata: 2\r\n\r\ndata: 3"
    assert SSE.split_events(sse) == [b"data: 1\n\n", b"event: x\ndata: 2\r\n\r\n", b"data: 3"]
    assert b"".join(NDJSON.split_events(BODY)) == BODY and len(NDJSON.split_events(BODY)) == len(LINES)
    assert set(BODY_SUFFIXES) == {".sse", ".ndjson", ".eventstream"}


# -- a provider with its own framing, signing and refreshing token --------------------------------------


class _LengthPrefixed(Framing):
    """A toy binary framing (4-byte big-endian length, then JSON), to show a plugin's own framing."""

    name = "length-prefixed"
    content_types = ("application/x-test-frames",)
    media_type = "application/x-test-frames"

    def events(self, reads: Iterable[bytes], max_event_bytes: int) -> Iterator[Any]:
        buf = b""
        for data in reads:
            buf += data
            while len(buf) >= 4:
                n = int.from_bytes(buf[:4], "big")
                if n > max_event_bytes:
                    raise LineTooLongError(max_event_bytes)
                if n == 0:
                    raise CorruptFrameError("zero-length frame", buf[:20].hex())
                if len(buf) < 4 + n:
                    break
                yield json.loads(buf[4:4 + n])
                buf = buf[4 + n:]


def _frames(*values: Any) -> bytes:
    out = b""
    for v in values:
        data = json.dumps(v).encode()
        out += len(data).to_bytes(4, "big") + data
    return out


class _Signed(Provider):
    name: ClassVar[str] = "signed-test"
    default_base_url: ClassVar[str] = "http://127.0.0.1:9"
    framing: ClassVar[Framing] = _LengthPrefixed()
    signed: ClassVar[list[bytes]] = []

    def __init__(self, model: str, **kw: Any) -> None:
        self.token: RefreshingToken | None = kw.pop("token", None)
        super().__init__(model, **kw)

    def check_api_key(self) -> None:
        if self.token is None:
            raise MissingCredentialsError(self.name, "pass token=")

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        assert self.token is not None
        return HTTPRequest(self.base_url + "/go", {"model": request.model, "n": len(request.messages)},
                           {"Authorization": f"Bearer {self.token.get().reveal()}"})

    def sign(self, request: HTTPRequest, body: bytes) -> None:
        type(self).signed.append(body)
        request.headers["X-Body-Length"] = str(len(body))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context)
        yield from b.start()
        for ev in events:
            if "text" in ev:
                yield from b.text(ev["text"])
            if ev.get("done"):
                yield from b.finish("stop", "done", None)
                return

    def redact(self, text: str) -> str:
        return self.token.redact(super().redact(text)) if self.token else super().redact(text)


def _call(provider: Provider, session: requests.Session, retries: int = 0) -> ModelCall:
    return ModelCall(provider, ModelRequest(model="m", messages=[]), CallContext("t", "r"), session,
                     CallOptions(max_retries=retries))


def test_a_plugin_framing_signing_and_token() -> None:
    body = _frames({"text": "Hel"}, {"text": "lo"}, {"done": True})
    token = RefreshingToken(lambda: ("tok-abc123", None))
    with LoopbackServer([Response(body, content_type="application/x-test-frames", fragment=(1, 3))]) as srv, \
            requests.Session() as session:
        provider = _Signed("m", base_url=srv.url, token=token)
        events = list(_call(provider, session))
        req = srv.requests[0]
    assert [e.type for e in events][-1] == "RUN_FINISHED"
    assert "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT") == "Hello"
    assert req.headers["X-Body-Length"] == str(len(req.body)) and req.headers["Authorization"] == "Bearer tok-abc123"
    assert _Signed.signed[-1] == req.body  # the hook saw exactly the bytes sent


def test_a_retried_request_is_signed_again() -> None:
    _Signed.signed.clear()
    body = _frames({"text": "ok"}, {"done": True})
    with LoopbackServer([Response(b'{"error": "busy"}', status=503, content_type="application/json",
                                  headers={"Retry-After": "0"}),
                         Response(body, content_type="application/x-test-frames")]) as srv, requests.Session() as s:
        events = list(_call(_Signed("m", base_url=srv.url, token=RefreshingToken(lambda: ("t", None))), s, retries=1))
    assert events[-1].type == "RUN_FINISHED"
    assert len(_Signed.signed) == 2


def test_a_corrupt_frame_is_a_typed_run_error_after_what_arrived() -> None:
    body = _frames({"text": "kept"}) + b"\x00\x00\x00\x00garbage"
    with LoopbackServer([Response(body, content_type="application/x-test-frames")]) as srv, requests.Session() as s:
        events = list(_call(_Signed("m", base_url=srv.url, token=RefreshingToken(lambda: ("t", None))), s))
    assert [e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT"] == ["kept"]
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "corrupt_frame"


def test_a_body_of_another_type_is_not_event_stream() -> None:
    with LoopbackServer([Response(b"<html>login</html>", content_type="text/html")]) as srv, requests.Session() as s:
        events = list(_call(_Signed("m", base_url=srv.url, token=RefreshingToken(lambda: ("t", None))), s))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "not_event_stream"


def test_missing_credentials_is_a_run_error_naming_what_to_set() -> None:
    with requests.Session() as s:
        events = list(_call(_Signed("m"), s))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "missing_credentials"
    assert "pass token=" in events[-1].message


def test_a_token_leaked_by_the_server_is_masked() -> None:
    token = RefreshingToken(lambda: ("tok-very-secret-1", None))
    err = b'{"error": {"message": "bad token tok-very-secret-1", "type": "auth"}}'
    with LoopbackServer([Response(err, status=401, content_type="application/json")]) as srv, requests.Session() as s:
        events = list(_call(_Signed("m", base_url=srv.url, token=token), s))
    assert "tok-very-secret-1" not in events[-1].message and "***" in events[-1].message


# -- RefreshingToken -----------------------------------------------------------------------------------


def test_refreshing_token_is_fetched_once_by_many_threads_and_refreshed_near_expiry() -> None:
    now = [1000.0]
    calls: list[int] = []
    gate = threading.Barrier(16)

    def fetch() -> tuple[str, float | None]:
        calls.append(1)
        return f"t{len(calls)}", now[0] + 3600

    token = RefreshingToken(fetch, refresh_margin=300, clock=lambda: now[0])
    seen: list[str] = []

    def use() -> None:
        gate.wait()
        seen.append(token.get().reveal())

    threads = [threading.Thread(target=use) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["t1"] * 16 and token.fetches == 1
    now[0] += 3600 - 301
    assert token.get().reveal() == "t1"
    now[0] += 2  # inside the margin
    assert token.get().reveal() == "t2" and token.fetches == 2
    assert "t2" not in repr(token)


def test_refreshing_token_refuses_wrong_types_and_passes_fetch_errors() -> None:
    with pytest.raises(TypeError):
        RefreshingToken("not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RefreshingToken(lambda: ("t", None), refresh_margin="5")  # type: ignore[arg-type]

    def boom() -> tuple[str, float | None]:
        raise OSError("no network")

    token = RefreshingToken(boom)
    with pytest.raises(OSError):
        token.get()
    assert token.fetches == 0


def test_get_model_passes_provider_options_and_refuses_unknown_ones() -> None:
    with pytest.raises(TypeError):
        get_model("openai:gpt-4o-mini", no_such_option=1)
    assert chat  # the public face is unchanged
