"""Conformance of the ``anthropic`` provider on the shared recorded corpus (read in place).

Every ``anthropic__*`` and ``anthropic-compatible__*`` recording goes through a loopback server, whole
and split at random byte boundaries (several seeds), and must match ``expected/`` and the event grammar.
Further tests assert facts the expected ``extra`` section records (signatures, server tools, errors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookstream import ReasoningPart, SourcePart, TextPart
from hookstream.events import Custom, RunError, RunStarted, ToolCallEnd
from hookstream.testing.conformance import Recording, check_recording, find_corpus, recordings, require_corpus
from hookstream.testing.grammar import check_events
from hookstream.testing.recorded import replay_body

CORPUS = find_corpus(Path(__file__).resolve())
RECORDINGS = recordings(CORPUS, ("anthropic", "anthropic-compatible")) if CORPUS else []
SEEDS = (1, 7, 42)


def _need_corpus() -> Path:
    """The corpus, or skip (fail under $CI) saying where it was looked for."""
    return require_corpus(Path(__file__).resolve())


def _recording(name: str) -> Recording:
    _need_corpus()
    for rec in RECORDINGS:
        if rec.name == name:
            return rec
    pytest.fail(f"recording {name} missing from the corpus")


def _ids(rec: Any) -> str:
    return rec.name if rec is not None else "no-corpus"


@pytest.mark.parametrize("rec", RECORDINGS or [None], ids=_ids)
def test_anthropic_recording_whole(rec: Recording | None) -> None:
    _need_corpus()
    assert rec is not None
    assert check_recording("anthropic", rec) == []


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rec", RECORDINGS or [None], ids=_ids)
def test_anthropic_recording_fragmented(rec: Recording | None, seed: int) -> None:
    _need_corpus()
    assert rec is not None
    assert check_recording("anthropic", rec, fragment=(1, 97), seed=seed) == []


def test_anthropic_corpus_has_all_ten() -> None:
    _need_corpus()
    assert len(RECORDINGS) == 10


def _replay(name: str) -> tuple[list[Any], Any, dict[str, Any]]:
    rec = _recording(name)
    events, step = replay_body("anthropic", rec.body_path.read_bytes(), fragment=(1, 97), seed=3)
    check_events(events, form="call")
    return events, step, rec.expected.get("extra") or {}


@pytest.mark.parametrize("name", ["anthropic__thinking-signature", "anthropic__thinking-padded-thinking-tokens"])
def test_anthropic_signature_kept_on_reasoning_part(name: str) -> None:
    _, step, extra = _replay(name)
    parts = step.message.parts
    assert isinstance(parts[0], ReasoningPart) and isinstance(parts[1], TextPart)
    assert parts[0].text == step.reasoning
    assert parts[0].provider_metadata == {"anthropic": {"signature": extra["thinking_signatures"][0]}}


def test_anthropic_thinking_tokens_are_reasoning_tokens() -> None:
    _, step, extra = _replay("anthropic__thinking-padded-thinking-tokens")
    details = extra["usage_raw_message_delta"]["output_tokens_details"]
    assert step.usage.reasoning_tokens == details["thinking_tokens"]
    assert step.usage.cached_input_tokens == 0
    assert step.usage.total_tokens == step.usage.input_tokens + step.usage.output_tokens


def test_anthropic_server_tool_use_is_not_a_tool_call() -> None:
    events, step, extra = _replay("anthropic__web-search-citations")
    assert step.tool_calls == [] and step.finish_reason == "stop"
    customs = [e for e in events if isinstance(e, Custom)]
    server = [e.value for e in customs if e.name == "anthropic.server_tool_use"]
    assert [(s["id"], s["name"], s["input"]) for s in server] == [
        (u["id"], u["name"], u["arguments"]) for u in extra["server_tool_uses"]
    ]
    results = [e.value for e in customs if e.name == "anthropic.web_search_tool_result"]
    assert [r["type"] for r in results] == extra["other_block_types"]
    sources = [e.value for e in customs if e.name == "source"]
    assert len(sources) == extra["citations_count"]
    # The server blocks are parts of the answer (sent back next turn), before the text; the many text
    # blocks after them stay one text message.
    kinds = [type(p).__name__ for p in step.message.parts if not isinstance(p, SourcePart)]
    assert kinds == ["ReasoningPart", "ReasoningPart", "TextPart"]


def test_anthropic_in_stream_overloaded_error() -> None:
    events, step, extra = _replay("anthropic__error-overloaded")
    assert [type(e) for e in events] == [RunStarted, RunError]
    err = extra["errors"][0]
    assert (events[1].code, events[1].message) == (err["type"], err["message"])
    assert step.error == (err["type"], err["message"]) and step.finish_reason == "error"


def test_anthropic_max_tokens_mid_tool_use_is_incomplete() -> None:
    events, step, extra = _replay("anthropic__max-tokens-mid-tool-use")
    detail = extra["tool_call_details"][0]
    (call,) = step.tool_calls
    assert call.arguments is None and call.arguments_raw == detail["arguments_raw"]
    assert step.complete_tool_calls == []
    assert (step.finish_reason, step.raw_finish_reason) == ("length", "max_tokens")
    assert sum(isinstance(e, ToolCallEnd) for e in events) == 1  # closed for the grammar, still incomplete


def test_anthropic_compatible_input_tokens_from_message_delta() -> None:
    _, step, extra = _replay("anthropic-compatible__message-delta-input-tokens")
    assert extra["usage_raw_message_start"]["input_tokens"] != extra["usage_raw_message_delta"]["input_tokens"]
    assert step.usage.input_tokens == extra["usage_raw_message_delta"]["input_tokens"]


def test_anthropic_empty_input_json_delta_means_empty_object() -> None:
    _, step, _ = _replay("anthropic__tool-use-empty-input")
    assert [c.arguments for c in step.complete_tool_calls] == [{}]
    assert step.finish_reason == "tool_calls"
