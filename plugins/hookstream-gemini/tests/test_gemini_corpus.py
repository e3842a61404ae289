"""Every recorded Gemini / Vertex AI stream in the shared corpus through the real adapter over loopback
HTTP: whole, split at random byte boundaries, and with every CRLF split between ``\\r`` and ``\\n``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests
from hookstream import Message, StepResult, final_json
from hookstream.events import BaseEvent, ReasoningEncryptedValue, RunFinished
from hookstream.plugin import CallContext, ModelCall, ModelRequest, StepAccumulator
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.conformance import (
    Recording,
    check_recording,
    compare,
    find_corpus,
    recordings,
    require_corpus,
    shared_missing,
)
from hookstream_gemini import GeminiProvider

PREFIXES = ("gemini", "gemini-vertex")
# Found from this file, not the working directory, so running pytest from elsewhere still finds it.
CORPUS = find_corpus(Path(__file__).resolve())
RECORDINGS = recordings(CORPUS, PREFIXES) if CORPUS is not None else []
# Without the corpus one "no-corpus" case stands in, so the run reports why instead of an empty set.
CASES: list[Recording | None] = [*RECORDINGS] or [None]


def _corpus() -> Path:
    """The corpus, or skip (fail under $CI) saying where it was looked for."""
    return require_corpus(Path(__file__).resolve())


def _ids(rec: Recording | None) -> str:
    return rec.name if rec is not None else "no-corpus"


def _case(rec: Recording | None) -> Recording:
    _corpus()
    assert rec is not None
    return rec


def _by_name(name: str) -> Recording:
    _corpus()
    for rec in RECORDINGS:
        if rec.name == name:
            return rec
    shared_missing(f"recording {name} not in the corpus {CORPUS}")


def _run(pieces: list[bytes]) -> tuple[list[BaseEvent], StepResult]:
    with LoopbackServer([Response(pieces=pieces)]) as srv, requests.Session() as session:
        provider = GeminiProvider("gemini-2.5-flash", base_url=srv.url, api_key="corpus-key")
        request = ModelRequest(model="gemini-2.5-flash", messages=[Message.user("replay")])
        acc = StepAccumulator()
        events = []
        for event in ModelCall(provider, request, CallContext("thread", "run-1"), session):
            events.append(event)
            acc.add(event)
    return events, acc.finish()


def _finished(events: list[BaseEvent]) -> RunFinished:
    last = events[-1]
    assert isinstance(last, RunFinished), last
    return last


def test_gemini_corpus_present() -> None:
    _corpus()
    assert len(RECORDINGS) == 11


@pytest.mark.parametrize("rec", CASES, ids=_ids)
def test_gemini_corpus_whole(rec: Recording | None) -> None:
    assert check_recording("gemini", _case(rec)) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rec", CASES, ids=_ids)
def test_gemini_corpus_fragmented(rec: Recording | None, seed: int) -> None:
    assert check_recording("gemini", _case(rec), fragment=(1, 97), seed=seed) == []


@pytest.mark.parametrize("rec", CASES, ids=_ids)
def test_gemini_corpus_crlf_split_between_cr_and_lf(rec: Recording | None) -> None:
    rec = _case(rec)
    body = rec.body_path.read_bytes()
    # Cut right after every "\r" so each "\r\n" arrives in two reads.
    pieces = [p + b"\r" for p in body.split(b"\r")]
    pieces[-1] = pieces[-1][:-1]
    events, step = _run(pieces)
    check_events(events, form="call")
    assert compare(rec.expected, final_json(step)) == []


@pytest.mark.parametrize("rec", CASES, ids=_ids)
def test_gemini_corpus_extras(rec: Recording | None) -> None:
    rec = _case(rec)
    events, step = _run([rec.body_path.read_bytes()])
    extra = rec.expected.get("extra") or {}
    finished = _finished(events)
    gemini = (finished.metadata or {}).get("gemini", {})
    # Every part that carried a thoughtSignature keeps it as provider metadata on the message part.
    signed = [
        p for p in step.message.parts
        if (p.provider_metadata or {}).get("gemini", {}).get("thoughtSignature")
    ]
    assert len(signed) == extra.get("thought_signature_parts", 0)
    if "finish_message" in extra:
        assert gemini["finishMessage"] == extra["finish_message"]
    if "prompt_block_reason" in extra:
        assert gemini["promptFeedback"]["blockReason"] == extra["prompt_block_reason"]
        assert finished.finish_reason == "content_filter"
        assert finished.raw_finish_reason is None
    if "usage_raw" in extra:
        raw = extra["usage_raw"]
        assert gemini["usageMetadata"] == raw
        usage = finished.usage
        assert usage is not None
        assert usage.input_tokens == raw.get("promptTokenCount")
        assert usage.output_tokens == raw.get("candidatesTokenCount")
        assert usage.reasoning_tokens == raw.get("thoughtsTokenCount")
        assert usage.total_tokens == raw.get("totalTokenCount")
    else:
        assert finished.usage is None


def test_gemini_finish_reason_normalised() -> None:
    expected = {
        "gemini__text": "stop",
        "gemini__function-call": "tool_calls",
        "gemini-vertex__function-call-streamed-partial-args": "tool_calls",
        "gemini__finish-safety": "content_filter",
        "gemini__max-tokens-after-thought": "length",
        "gemini__malformed-function-call": "error",
        "gemini__prompt-blocked-safety": "content_filter",
    }
    for name, reason in expected.items():
        events, _ = _run([_by_name(name).body_path.read_bytes()])
        assert _finished(events).finish_reason == reason, name


def test_gemini_trailing_signature_joins_the_text_part() -> None:
    rec = _by_name("gemini__text-trailing-thought-signature")
    events, step = _run([rec.body_path.read_bytes()])
    parts = step.message.parts
    assert len(parts) == 1 and parts[0].kind == "text"
    assert parts[0].text == rec.expected["text"]
    assert parts[0].provider_metadata is not None
    assert parts[0].provider_metadata["gemini"]["thoughtSignature"]
    assert not any(isinstance(e, ReasoningEncryptedValue) for e in events)


def test_gemini_function_call_signature_and_ids() -> None:
    rec = _by_name("gemini__text-then-function-call-with-id")
    _, step = _run([rec.body_path.read_bytes()])
    (call,) = step.tool_calls
    assert call.id == "g1bmv6il"
    meta = call.provider_metadata or {}
    assert meta["gemini"]["functionCallId"] == "g1bmv6il"
    assert meta["gemini"]["thoughtSignature"]

    rec = _by_name("gemini-vertex__function-call-streamed-partial-args")
    _, step_a = _run([rec.body_path.read_bytes()])
    _, step_b = _run([rec.body_path.read_bytes()])
    ids = [c.id for c in step_a.tool_calls]
    # Generated ids: distinct, derived from the responseId and position, stable for the same bytes.
    assert len(set(ids)) == 2
    assert ids == [c.id for c in step_b.tool_calls]
    assert all(i.startswith("gemini-") for i in ids)
    assert "functionCallId" not in ((step_a.tool_calls[1].provider_metadata or {}).get("gemini") or {})


def test_gemini_thought_parts_are_reasoning() -> None:
    rec = _by_name("gemini__thought-parts")
    events, step = _run([rec.body_path.read_bytes()])
    types = [e.type for e in events]
    assert types.index("REASONING_START") < types.index("TEXT_MESSAGE_START")
    assert step.reasoning == rec.expected["thinking"]
    assert [p.kind for p in step.message.parts] == ["reasoning", "text"]


def _signature_parts(message: Message) -> list[dict[str, Any]]:
    return [p.provider_metadata["gemini"] for p in message.parts if p.provider_metadata]


def test_gemini_partial_args_events_are_whole_arguments() -> None:
    rec = _by_name("gemini-vertex__function-call-streamed-partial-args")
    events, step = _run([rec.body_path.read_bytes()])
    args = [e for e in events if e.type == "TOOL_CALL_ARGS"]
    assert len(args) == 2  # one ARGS delta per call, emitted when the call closes
    assert [c.arguments for c in step.tool_calls] == [c["arguments"] for c in rec.expected["tool_calls"]]
    assert len(_signature_parts(step.message)) == 1
