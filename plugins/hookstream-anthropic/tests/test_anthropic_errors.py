"""Errors and stream edges of the ``anthropic`` provider, over real loopback HTTP.

HTTP errors (401, 429 with ``retry-after``, 529 overloaded) end in ``RUN_ERROR`` with a typed code and
the provider's message, never the key; in-stream errors, cut streams and malformed chunks keep what
arrived; redacted and signature-only thinking survive as reasoning parts.
"""

from __future__ import annotations

import json
import logging

import pytest
from anthropic_sse_helpers import (
    KEY,
    block_start,
    block_stop,
    body,
    delta,
    frame,
    message_end,
    message_start,
    run_call,
    text_block,
    thinking_block,
    tool_block,
)
from hookstream import Message, ReasoningPart
from hookstream.errors import AuthenticationError, HTTPStatusError, RateLimitError, ServerError
from hookstream.events import ReasoningEncryptedValue, RunError, RunFinished, RunStarted, to_json
from hookstream.plugin import ModelRequest
from hookstream.testing import Response
from hookstream.testing.grammar import check_events
from hookstream_anthropic import STOP_REASONS, AnthropicProvider


def _error_body(etype: str, message: str) -> bytes:
    doc = {"type": "error", "error": {"type": etype, "message": message}, "request_id": "req_011"}
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("status", "etype", "message", "headers", "code", "exc_type"),
    [
        (401, "authentication_error", "invalid x-api-key", {}, "authentication_error", AuthenticationError),
        (429, "rate_limit_error", "Number of requests exceeded", {"retry-after": "7"}, "rate_limit", RateLimitError),
        (529, "overloaded_error", "Overloaded", {}, "server_error", ServerError),
    ],
)
def test_anthropic_http_errors(
    status: int, etype: str, message: str, headers: dict[str, str], code: str, exc_type: type,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    resp = Response(_error_body(etype, message), status=status, headers=headers, content_type="application/json")
    events, step, _, call = run_call(resp)
    assert [type(e) for e in events] == [RunStarted, RunError]
    err = events[-1]
    assert isinstance(err, RunError) and err.code == code
    assert message in err.message and "req_011" in err.message
    exc = call.exception
    assert isinstance(exc, HTTPStatusError) and isinstance(exc, exc_type)
    assert (exc.status, exc.error_type, exc.provider_message.startswith(message)) == (status, etype, True)
    if "retry-after" in headers:
        assert exc.retry_after == 7.0
    assert step.error == (code, err.message)
    everything = " ".join(to_json(e) for e in events) + repr(exc) + str(exc) + caplog.text
    assert KEY not in everything


def test_anthropic_error_after_text_and_tool_call_keeps_them() -> None:
    stream = body(
        [
            message_start(),
            *text_block(0, "Let me ", "look."),
            *tool_block(1, "toolu_a", "search", '{"q": ', '"x"}'),
            {"type": "error", "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"}},
        ]
    )
    events, step, _, _ = run_call(stream, fragment=(1, 13))
    check_events(events, form="call")
    assert isinstance(events[-1], RunError) and events[-1].code == "overloaded_error"
    assert step.text == "Let me look."
    assert [(c.id, c.arguments) for c in step.tool_calls] == [("toolu_a", {"q": "x"})]
    assert step.usage is not None and step.usage.input_tokens == 10


def test_anthropic_stream_cut_before_stop_reason_is_connection_closed() -> None:
    stream = body([message_start(), *text_block(0, "partial")])
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert isinstance(events[-1], RunError) and events[-1].code == "connection_closed"
    assert step.text == "partial"


def test_anthropic_stop_reason_without_message_stop_still_finishes() -> None:
    stream = body([message_start(), *text_block(0, "done"), *message_end("end_turn")[:1]])
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert isinstance(events[-1], RunFinished) and step.raw_finish_reason == "end_turn"


def test_anthropic_malformed_chunk_keeps_text() -> None:
    stream = body([message_start(), *text_block(0, "kept")]) + b"event: content_block_delta\ndata: {not json\n\n"
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert isinstance(events[-1], RunError) and events[-1].code == "malformed_chunk"
    assert step.text == "kept"


def test_anthropic_delta_for_unknown_block_is_malformed() -> None:
    stream = body([message_start(), delta(4, {"type": "text_delta", "text": "x"})])
    events, _, _, _ = run_call(stream)
    assert isinstance(events[-1], RunError) and events[-1].code == "malformed_chunk"
    assert "unknown content block 4" in events[-1].message


def test_anthropic_unclosed_tool_use_is_never_complete() -> None:
    stream = body([message_start(), *tool_block(0, "toolu_cut", "write", '{"text": "abc'), *message_end("max_tokens")])
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert step.tool_calls[0].arguments is None and step.complete_tool_calls == []
    assert step.finish_reason == "length"


def test_anthropic_redacted_and_signature_only_thinking_round_trip() -> None:
    stream = body(
        [
            message_start(),
            block_start(0, {"type": "redacted_thinking", "data": "ENCRYPTED=="}),
            block_stop(0),
            *thinking_block(1, "sig-only"),
            *tool_block(2, "toolu_t", "calc", '{"x": 1}'),
            *message_end("tool_use"),
        ]
    )
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert sum(isinstance(e, ReasoningEncryptedValue) for e in events) == 2
    reasoning = [p for p in step.message.parts if isinstance(p, ReasoningPart)]
    assert [p.provider_metadata for p in reasoning] == [
        {"anthropic": {"redacted_data": "ENCRYPTED=="}},
        {"anthropic": {"signature": "sig-only"}},
    ]
    provider = AnthropicProvider("m", api_key="k")
    sent = provider.build_request(ModelRequest(model="m", messages=[Message.user("q"), step.message])).json
    assert sent["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "ENCRYPTED=="},
        {"type": "thinking", "thinking": "", "signature": "sig-only"},
        {"type": "tool_use", "id": "toolu_t", "name": "calc", "input": {"x": 1}},
    ]


def test_anthropic_tool_input_given_at_block_start_is_kept() -> None:
    stream = body(
        [
            message_start(),
            block_start(0, {"type": "tool_use", "id": "toolu_s", "name": "f", "input": {"k": [1, 2]}}),
            block_stop(0),
            *message_end("tool_use"),
        ]
    )
    events, step, _, _ = run_call(stream)
    assert [c.arguments for c in step.complete_tool_calls] == [{"k": [1, 2]}]
    # An AG-UI client reads the arguments from TOOL_CALL_ARGS only: the whole input is sent as one.
    wire = [json.loads(to_json(e)) for e in events]
    assert [(w["toolCallId"], w["delta"]) for w in wire if w["type"] == "TOOL_CALL_ARGS"] == [
        ("toolu_s", '{"k":[1,2]}')]
    assert [w.get("input") for w in wire if w["type"] == "TOOL_CALL_END"] == [{"k": [1, 2]}]


@pytest.mark.parametrize("fragments", [(), ("",)], ids=["no-delta", "empty-delta"])
def test_anthropic_tool_use_without_input_deltas_still_sends_args(fragments: tuple[str, ...]) -> None:
    stream = body([message_start(), *tool_block(0, "toolu_e", "now", *fragments), *message_end("tool_use")])
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    wire = [json.loads(to_json(e)) for e in events]
    assert [w["type"] for w in wire[1:-1]] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert wire[2]["delta"] == "{}" and wire[3]["input"] == {}
    assert [c.arguments for c in step.complete_tool_calls] == [{}]


def test_anthropic_streamed_input_is_not_sent_twice() -> None:
    stream = body([message_start(), *tool_block(0, "toolu_d", "f", '{"a":', "1}"), *message_end("tool_use")])
    events, step, _, _ = run_call(stream)
    assert [e.delta for e in events if e.type == "TOOL_CALL_ARGS"] == ['{"a":', "1}"]
    assert [c.arguments for c in step.complete_tool_calls] == [{"a": 1}]


@pytest.mark.parametrize("raw", sorted(STOP_REASONS))
def test_anthropic_stop_reason_mapping(raw: str) -> None:
    stream = body([message_start(), *text_block(0, "x"), *message_end(raw)])
    _, step, _, _ = run_call(stream)
    assert (step.finish_reason, step.raw_finish_reason) == (STOP_REASONS[raw], raw)


def test_anthropic_usage_fields() -> None:
    stream = body(
        [
            message_start(100, cache_read_input_tokens=40, cache_creation_input_tokens=5),
            *text_block(0, "x"),
            *message_end("end_turn", 30, input_tokens=120, output_tokens_details={"thinking_tokens": 12}),
        ]
    )
    _, step, _, _ = run_call(stream)
    u = step.usage
    assert u is not None
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens, u.total_tokens) == (
        165, 40, 30, 12, 195
    )


def test_anthropic_padded_ping_and_crlf_framing() -> None:
    events = [message_start(), {"type": "ping"}, *text_block(0, "a", "b"), *message_end("end_turn")]
    stream = b"".join(frame(e, pad=9, newline="\r\n") for e in events).rstrip(b"\r\n")
    _, step, _, _ = run_call(stream, fragment=(1, 5))
    assert (step.text, step.raw_finish_reason) == ("ab", "end_turn")


def test_anthropic_odd_text_deltas_are_skipped_and_blank_payloads_ignored() -> None:
    # The adapter's loop handles text deltas itself (issue 39); these are what it must leave as before.
    odd = [delta(0, {"type": "text_delta", "text": ""}), delta(0, {"type": "text_delta", "text": 5}),
           delta(0, {"type": "text_delta"})]
    stream = body([message_start(), block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta",
                   "text": "a"}), *odd]) + b"event: ping\ndata:  \t\n\n" + body([delta(0, {"type": "text_delta",
                   "text": "b"}), block_stop(0), *message_end("end_turn")])
    events, step, _, _ = run_call(stream)
    check_events(events, form="call")
    assert isinstance(events[-1], RunFinished) and step.text == "ab"


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({"index": 0.0, "delta": {"type": "text_delta", "text": "x"}}, "without an integer index"),
        ({"index": True, "delta": {"type": "text_delta", "text": "x"}}, "unknown content block True"),
        ({"index": 0, "delta": ["text_delta", "x"]}, "without a delta object"),
    ],
)
def test_anthropic_text_delta_malformed_keeps_text(d: dict[str, object], message: str) -> None:
    stream = body([message_start(), *text_block(0, "kept")[:-1], {"type": "content_block_delta", **d}])
    events, step, _, _ = run_call(stream)
    assert isinstance(events[-1], RunError) and events[-1].code == "malformed_chunk"
    assert message in events[-1].message and step.text == "kept"
