"""Hypothesis properties of SSE framing + adapters, and of the incremental JSON parser.

Framing runs in-process through the same layers the transport uses (byte chunks through
``bounded_reads`` into sseclient-py, then the provider's parse_stream), so 100,000 inputs fit in CI
time; a few examples also go through real loopback HTTP. ``HOOKSTREAM_FUZZ_EXAMPLES`` sets the
example count (``tox -e fuzz``: 100,000).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import sseclient
from hookstream import HookstreamError, get_registry
from hookstream._stream.transport import bounded_reads
from hookstream.errors import LineTooLongError
from hookstream.plugin import DEFAULT_MAX_EVENT_BYTES, SSE, CallContext, StepAccumulator
from hookstream.testing import check_events, replay_body
from hookstream.testing.provider_bodies import PROVIDERS, provider_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz
EXAMPLES = int(os.environ.get("HOOKSTREAM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
INSTALLED = [p for p in PROVIDERS if p in get_registry().names("providers")]
BODIES = {p: provider_stream(p).body for p in INSTALLED}


def _run(provider: str, chunks: list[bytes]) -> tuple[Any, ...]:
    """(text, reasoning, tool calls, finish) of one call framed from ``chunks``; typed errors pass through."""
    prov = get_registry().provider(provider)("fuzz", base_url="http://127.0.0.1:9", api_key="k")
    sse = SSE.events(chunks, DEFAULT_MAX_EVENT_BYTES)
    events = list(prov.parse_stream(sse, CallContext("t", "r")))
    check_events(events, form="call") if events and events[-1].type in ("RUN_FINISHED", "RUN_ERROR") else None
    acc = StepAccumulator()
    for ev in events:
        acc.add(ev)
    step = acc.finish()
    return (step.text, step.reasoning, [(c.name, c.arguments) for c in step.tool_calls], step.finish_reason)


def _split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    out, k = [], 0
    for p in points:
        out.append(body[k:p])
        k = p
    out.append(body[k:])
    return [c for c in out if c]


_SSE_PIECES = [b"data:", b"data: ", b"event: ", b"id: 7", b"retry: 5", b": note", b"x", b"{}", b"\n", b"\n", b"\r",
               b"\r\n", b"\xc3\xa9"]


def _fields(events: Any) -> list[tuple[Any, ...]]:
    return [(e.event, e.data, e.id, e.retry) for e in events]


@FUZZ
@given(st.lists(st.sampled_from(_SSE_PIECES), max_size=60), st.lists(st.integers(min_value=0), max_size=20))
def test_the_sse_framing_gives_sseclient_pys_events_for_any_bytes_and_split(pieces: list[bytes],
                                                                            cuts: list[int]) -> None:
    # The framing's own chunker (a read without CR cut at LF LF by bytes.find) must hand sseclient-py's
    # parser exactly the chunks sseclient-py's line-by-line loop would.
    body = b"".join(pieces)
    chunks = _split(body, cuts)
    expected = _fields(sseclient.SSEClient(bounded_reads(iter(chunks), DEFAULT_MAX_EVENT_BYTES)).events())
    assert _fields(SSE.events(chunks, DEFAULT_MAX_EVENT_BYTES)) == expected


@pytest.mark.parametrize("provider", INSTALLED)
def test_any_split_gives_the_same_result(provider: str) -> None:
    body = BODIES[provider]
    expected = _run(provider, [body])

    @FUZZ
    @given(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=40))
    def prop(cuts: list[int]) -> None:
        assert _run(provider, _split(body, cuts)) == expected

    prop()


@pytest.mark.parametrize("provider", INSTALLED)
def test_any_bytes_give_a_result_or_a_typed_error(provider: str) -> None:
    body = BODIES[provider]

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        # Mutate a valid body (keeps inputs near the grammar) or use raw bytes.
        if data.draw(st.booleans()):
            raw = data.draw(st.binary(max_size=300))
        else:
            i = data.draw(st.integers(0, len(body)))
            j = data.draw(st.integers(i, min(len(body), i + 40)))
            raw = body[:i] + data.draw(st.binary(max_size=20)) + body[j:]
        cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=8))
        try:
            _run(provider, _split(raw, cuts))
        except (HookstreamError, UnicodeDecodeError):
            pass  # typed (the transport maps UnicodeDecodeError to TransportError)

    prop()


@pytest.mark.parametrize("provider", INSTALLED)
def test_split_over_real_http(provider: str) -> None:
    body = BODIES[provider]
    _, expected = replay_body(provider, body)

    @settings(max_examples=min(EXAMPLES, 20), deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.integers(1, 9), st.integers(0, 1000))
    def prop(hi: int, seed: int) -> None:
        events, step = replay_body(provider, body, fragment=(1, hi), seed=seed)
        check_events(events, form="call")
        assert (step.text, step.reasoning, [(c.name, c.arguments) for c in step.tool_calls]) == (
            expected.text, expected.reasoning, [(c.name, c.arguments) for c in expected.tool_calls])

    prop()


def _sse_events(chunks: list[bytes], limit: int) -> list[Any]:
    """(event, data, id) of each SSE event framed from ``chunks``, then "line_too_long" if it ended so."""
    out: list[Any] = []
    try:
        for e in sseclient.SSEClient(bounded_reads(chunks, limit)).events():
            out.append((e.event, e.data, e.id))
    except LineTooLongError:
        out.append("line_too_long")
    return out


# Pieces of SSE text with every line ending and blank-line form, so cuts fall inside CR LF and
# between the blank line's bytes; mixed endings included (CR CR LF, LF CR LF).
sse_pieces = st.sampled_from([b"data: ", b"x", b"yz", b"\xc3\xa9", b"event: e", b"id: 1", b":", b"\r", b"\n",
                              b"\r\n", b"\n\n", b"\r\n\r\n", b"\r\r"])


def test_event_size_limit_is_the_same_for_any_split() -> None:
    """Events, and where line_too_long ends them, do not depend on where reads are cut."""

    @FUZZ
    @given(st.lists(sse_pieces, max_size=40), st.integers(1, 200), st.lists(st.integers(0, 400), max_size=12))
    def prop(pieces: list[bytes], limit: int, cuts: list[int]) -> None:
        body = b"".join(pieces)
        whole = _sse_events([body], limit)
        assert _sse_events(_split(body, cuts), limit) == whole
        assert _sse_events([body[i : i + 1] for i in range(len(body))], limit) == whole

    prop()


def test_event_size_limit_delivers_every_event_before_the_oversized_one() -> None:
    @FUZZ
    @given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30), max_size=8),
           st.integers(1, 40), st.sampled_from(["\n", "\r\n", "\r"]))
    def prop(datas: list[str], limit: int, sep: str) -> None:
        events = [f"data: {d}{sep}{sep}".encode() for d in datas]
        got = _sse_events([b"".join(events)], limit)
        first_big = next((i for i, e in enumerate(events) if len(e) > limit), len(events))
        want: list[Any] = [("message", d, None) for d in datas[:first_big]]
        assert got == (want if first_big == len(events) else [*want, "line_too_long"])

    prop()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _parser() -> Any:
    from hookstream._processing import partial_json as _partial_json

    return _partial_json


def test_partial_json_any_split_equals_json_loads() -> None:
    mod = _parser()

    @FUZZ
    @given(json_values, st.lists(st.integers(0, 10_000), max_size=20), st.booleans())
    def prop(value: Any, cuts: list[int], ascii_only: bool) -> None:
        text = json.dumps(value, ensure_ascii=ascii_only)
        p = mod.PartialJSONParser()
        points = sorted({c % (len(text) + 1) for c in cuts})
        k = 0
        for q in [*points, len(text)]:
            p.feed(text[k:q])
            k = q
        assert p.close()
        assert p.value == json.loads(text)

    prop()


def test_partial_json_any_text_gives_value_or_typed_error() -> None:
    mod = _parser()

    @FUZZ
    @given(st.text(alphabet=st.sampled_from('{}[]":,\\ tfnrue0123456789.-+eEabu'), max_size=60) | st.text(max_size=40))
    def prop(text: str) -> None:
        p = mod.PartialJSONParser()
        try:
            p.feed(text)
            complete = p.close()
        except mod.PartialJSONError:
            return
        if complete:
            assert p.value == json.loads(text)

    prop()
