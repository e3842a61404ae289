"""Damaged frames, exception frames, HTTP errors and the framing's bounds, through the real
transport on loopback (and the framing directly, for its size bound and boundaries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bedrock_frames import (
    MEDIA_TYPE,
    MODEL,
    encode,
    event,
    exception,
    message_start,
    stop,
    text,
)
from hookstream import chat, get_model
from hookstream.errors import CorruptFrameError, LineTooLongError, MalformedChunkError
from hookstream.testing import LoopbackServer, Response, check_events, recordings, replay_body
from hookstream_bedrock import EVENT_STREAM

HERE = Path(__file__).parent / "recordings"
RECORDINGS = recordings(HERE, ("bedrock",)) if HERE.is_dir() else []


def run(*responses: Response, **kwargs: object) -> tuple[list[object], LoopbackServer]:
    with LoopbackServer(list(responses)) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, api_key="bedrock-api-key-test", region="us-east-1")
        stream = chat(model, "hello", **kwargs)  # type: ignore[arg-type]
        events = list(stream)
    check_events(events, form="run")
    return events, srv


@pytest.mark.skipif(not RECORDINGS, reason="no recordings")
@pytest.mark.parametrize("where", ["payload", "prelude"])
def test_a_corrupted_byte_is_corrupt_frame_after_the_text_before_it(where: str) -> None:
    recording = next(r for r in RECORDINGS if "text_nova_micro" in r.name)
    body = bytearray(recording.body_path.read_bytes())
    pieces = EVENT_STREAM.split_events(bytes(body))
    # Damage the 10th message; the text of the messages before it must be kept.
    offset = sum(len(p) for p in pieces[:9])
    body[offset + (30 if where == "payload" else 5)] ^= 0x20
    events, step = replay_body("bedrock", bytes(body), fragment=(1, 40), seed=4)
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "corrupt_frame"
    _, before = replay_body("bedrock", b"".join(pieces[:9]))
    assert step.text == before.text
    assert step.text and recording.expected["text"].startswith(step.text)


def test_an_exception_frame_is_run_error_with_its_type_and_keeps_what_arrived() -> None:
    body = (message_start() + text(0, "Partial ")
            + exception("modelStreamErrorException", "The model stopped unexpectedly."))
    events, _ = run(Response(body, content_type=MEDIA_TYPE, fragment=(1, 7)))
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "modelStreamErrorException"
    assert last.message == "The model stopped unexpectedly."
    assert "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT") == "Partial "


def test_an_exception_in_the_middle_of_a_tool_call_does_not_complete_it() -> None:
    body = (message_start()
            + event("contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "add"}}})
            + event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1'}}})
            + exception("validationException", "bad input"))
    events, _ = run(Response(body, content_type=MEDIA_TYPE))
    assert events[-1].code == "validationException"
    assert not [e for e in events if e.type == "TOOL_CALL_END"]
    assert [e.delta for e in events if e.type == "TOOL_CALL_ARGS"] == ['{"a": 1']


@pytest.mark.parametrize("kind", ["throttlingException", "serviceUnavailableException"])
def test_throttling_in_the_stream_before_content_is_retried(kind: str) -> None:
    throttled = message_start() + exception(kind, "Too many tokens, please wait.")
    ok = message_start() + text(0, "fine") + stop("end_turn")
    events, srv = run(Response(throttled, content_type=MEDIA_TYPE), Response(ok, content_type=MEDIA_TYPE))
    assert events[-1].type == "RUN_FINISHED"
    assert len(srv.requests) == 2


def test_throttling_after_content_is_not_retried() -> None:
    body = message_start() + text(0, "half") + exception("throttlingException", "Too many tokens")
    events, srv = run(Response(body, content_type=MEDIA_TYPE))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "throttlingException"
    assert len(srv.requests) == 1


def test_an_http_error_body_gives_the_message() -> None:
    body = b'{"message": "The provided model identifier is invalid."}'
    events, _ = run(Response(body, status=400, content_type="application/json",
                             headers={"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/"}))
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "bad_request"
    assert last.message.endswith("The provided model identifier is invalid.") or \
        "The provided model identifier is invalid." in last.message


def test_read_error_shapes() -> None:
    provider = get_model(f"bedrock:{MODEL}", api_key="k", region="us-east-1")
    assert provider.read_error(400, b'{"message": "bad"}') == ("bad", None)
    assert provider.read_error(429, b'{"__type": "com.amazon.coral#ThrottlingException", "message": "slow"}') == \
        ("slow", "ThrottlingException")
    assert provider.read_error(500, b'{"Message": "oops"}') == ("oops", None)
    assert provider.read_error(502, b"<html>bad gateway</html>") == ("<html>bad gateway</html>", None)


@pytest.mark.parametrize("cut", [-20, -200])
def test_a_stream_cut_before_metadata_is_connection_closed_and_keeps_the_text(cut: int) -> None:
    body = message_start() + text(0, "Hel", "lo") + stop("end_turn")
    events, _ = run(Response(body[:cut], content_type=MEDIA_TYPE))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "connection_closed"
    assert "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT").startswith("Hel")


def test_message_stop_without_metadata_is_not_a_finished_call() -> None:
    # metadata is the last event (usage, metrics); a call without it was cut short.
    body = message_start() + text(0, "Hi") + event("messageStop", {"stopReason": "end_turn"})
    events, _ = run(Response(body, content_type=MEDIA_TYPE))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "connection_closed"


def test_an_unlabelled_event_stream_is_accepted_but_html_is_not() -> None:
    body = message_start() + text(0, "Hi") + stop("end_turn")
    events, _ = run(Response(body, content_type="application/octet-stream"))
    assert events[-1].type == "RUN_FINISHED"
    events, _ = run(Response(b"<html>login</html>" * 3, content_type="text/html"))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "not_event_stream"


def test_a_non_json_payload_is_malformed_chunk() -> None:
    bad = encode({":event-type": "contentBlockDelta", ":message-type": "event"}, b"{not json")
    events, _ = run(Response(message_start() + text(0, "ok") + bad, content_type=MEDIA_TYPE))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "malformed_chunk"


# -- the framing directly ---------------------------------------------------------------------------
def test_framing_bounds_a_message_by_its_prelude() -> None:
    small = message_start()
    big = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 5000}})
    got = []
    with pytest.raises(LineTooLongError):
        # The big message's first 4 bytes arrive alone: the bound fires before the rest is read.
        for message in EVENT_STREAM.events(iter([small + big[:4], big[4:]]), max_event_bytes=1000):
            got.append(message)
    assert [m.headers[":event-type"] for m in got] == ["messageStart"]
    with pytest.raises(LineTooLongError):
        list(EVENT_STREAM.events(iter([small + big]), max_event_bytes=1000))
    assert len(list(EVENT_STREAM.events(iter([small + big]), max_event_bytes=len(big)))) == 2


def test_framing_errors_come_after_the_messages_before_them() -> None:
    good = message_start() + text(0, "a")
    damaged = bytearray(text(1, "b"))
    damaged[-1] ^= 1  # the message CRC
    got = []
    with pytest.raises(CorruptFrameError):
        for message in EVENT_STREAM.events(iter([good + bytes(damaged)]), max_event_bytes=1 << 20):
            got.append(message)
    assert [m.headers[":event-type"] for m in got] == ["messageStart", "contentBlockDelta", "contentBlockStop",
                                                      "contentBlockDelta"]
    too_long_headers = bytearray(encode({":event-type": "x"}, b"{}"))
    # A headers length over botocore's limit, prelude CRC fixed up: a ParserError other than a checksum.
    import binascii
    import struct

    total = struct.unpack("!I", too_long_headers[:4])[0]
    prelude = struct.pack("!II", total, 200_000)
    bad = prelude + struct.pack("!I", binascii.crc32(prelude)) + bytes(too_long_headers[12:])
    with pytest.raises(MalformedChunkError) as info:
        list(EVENT_STREAM.events(iter([bad]), max_event_bytes=1 << 20))
    assert not isinstance(info.value, CorruptFrameError)


def test_split_events_cuts_at_message_boundaries() -> None:
    frames = [message_start(), event("messageStop", {"stopReason": "end_turn"}), b"\x00\x00"]
    assert EVENT_STREAM.split_events(b"".join(frames)) == frames
