"""Every OpenAI Responses recording through the ``openai-responses`` provider over loopback HTTP, whole
and fragmented; plus the provider metadata that must survive a round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookstream import Message, ReasoningPart, StepResult
from hookstream.testing.conformance import Recording, check_recording, find_corpus, recordings, require_corpus
from hookstream.testing.recorded import replay_body
from hookstream_openai.responses import responses_input

CORPUS = find_corpus(Path(__file__).resolve())
RECORDINGS = recordings(CORPUS, ("openai-responses",)) if CORPUS else []


def _corpus() -> Path:
    """The corpus, or skip (fail under $CI) saying where it was looked for."""
    return require_corpus(Path(__file__).resolve())


def _ids(rec: Recording | None) -> str:
    return rec.name if rec is not None else "no-corpus"


def _replay(name: str) -> tuple[list[Any], StepResult]:
    return replay_body("openai-responses", (_corpus() / f"{name}.sse").read_bytes())


def test_corpus_has_every_responses_file() -> None:
    _corpus()
    assert len(RECORDINGS) == 4


# Without the corpus one "no-corpus" case stands in, so the run reports why instead of an empty set.
@pytest.mark.parametrize("rec", RECORDINGS or [None], ids=_ids)
@pytest.mark.parametrize("mode", ["whole", "frag-1", "frag-2", "frag-3"])
def test_recording_conforms(rec: Recording | None, mode: str) -> None:
    _corpus()
    assert rec is not None
    if mode == "whole":
        problems = check_recording("openai-responses", rec)
    else:
        problems = check_recording("openai-responses", rec, fragment=(1, 97), seed=int(mode[-1]))
    assert problems == []


def test_failed_stream_is_run_error_with_provider_type() -> None:
    events, step = _replay("openai-responses__failed-error-event")
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "insufficient_quota"
    assert last.raw_finish_reason == "failed"
    assert step.error is not None and step.error[0] == "insufficient_quota"
    assert "exceeded your current quota" in step.error[1]
    assert step.finish_reason == "error" and step.raw_finish_reason == "failed"


def test_function_call_uses_call_id_and_keeps_item_id() -> None:
    _, step = _replay("openai-responses__function-call")
    (call,) = step.tool_calls
    assert call.id.startswith("call_")
    assert (call.provider_metadata or {})["openai-responses"]["item_id"].startswith("fc_")
    assert step.finish_reason == "tool_calls" and step.raw_finish_reason == "completed"


def test_encrypted_reasoning_round_trips() -> None:
    _, step = _replay("openai-responses__function-call")
    reasoning = [p for p in step.message.parts if isinstance(p, ReasoningPart)]
    assert len(reasoning) == 1 and reasoning[0].text == ""
    meta = (reasoning[0].provider_metadata or {})["openai-responses"]
    assert meta["item_id"].startswith("rs_") and meta["encrypted_content"].startswith("gAAAA")
    # Sent back to the Responses API in stream order: reasoning item, then the function call.
    _, items = responses_input([Message.user("q"), step.message])
    assert [i["type"] for i in items] == ["message", "reasoning", "function_call"]
    assert items[1]["id"] == meta["item_id"] and items[1]["encrypted_content"] == meta["encrypted_content"]
    assert items[2]["id"].startswith("fc_") and items[2]["call_id"] == step.tool_calls[0].id


def test_summary_reasoning_carries_item_metadata() -> None:
    _, step = _replay("openai-responses__reasoning-summary-function-call")
    (reasoning,) = [p for p in step.message.parts if isinstance(p, ReasoningPart)]
    assert reasoning.text.startswith("**Calculating")
    assert (reasoning.provider_metadata or {})["openai-responses"]["item_id"].startswith("rs_")
    _, items = responses_input([Message.user("q"), step.message])
    assert items[1]["summary"] == [{"type": "summary_text", "text": reasoning.text}]
