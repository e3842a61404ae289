"""Every OpenAI Chat / Azure / OpenAI-compatible recording through the ``openai`` provider over loopback
HTTP, whole and split at random byte boundaries, checked against expected/ and the event grammar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookstream import StepResult
from hookstream.testing.conformance import Recording, check_recording, find_corpus, recordings, require_corpus
from hookstream.testing.recorded import replay_body

PREFIXES = ("openai-chat", "azure-openai-chat", "deepseek", "groq", "mistral", "openai-compatible",
            "qwen-dashscope", "xai")
CORPUS = find_corpus(Path(__file__).resolve())
RECORDINGS = recordings(CORPUS, PREFIXES) if CORPUS else []


def _skip_without_corpus() -> Path:
    """The corpus, or skip (fail under $CI) saying where it was looked for."""
    return require_corpus(Path(__file__).resolve())


def _ids(rec: Recording | None) -> str:
    return rec.name if rec is not None else "no-corpus"


def test_corpus_has_every_chat_file() -> None:
    _skip_without_corpus()
    assert len(RECORDINGS) == 18


# Without the corpus one "no-corpus" case stands in, so the run reports why instead of an empty set.
@pytest.mark.parametrize("rec", RECORDINGS or [None], ids=_ids)
@pytest.mark.parametrize("mode", ["whole", "frag-1", "frag-2", "frag-3"])
def test_recording_conforms(rec: Recording | None, mode: str) -> None:
    _skip_without_corpus()
    assert rec is not None
    if mode == "whole":
        problems = check_recording("openai", rec)
    else:
        problems = check_recording("openai", rec, fragment=(1, 97), seed=int(mode[-1]))
    assert problems == []


def _replay(name: str) -> tuple[list[Any], StepResult]:
    corpus = _skip_without_corpus()
    return replay_body("openai", (corpus / f"{name}.sse").read_bytes())


def test_refusal_is_not_text_but_a_custom_event() -> None:
    events, step = _replay("openai-chat__refusal")
    custom = [e for e in events if e.type == "CUSTOM"]
    assert [c.name for c in custom] == ["refusal"]
    assert custom[0].value == {"text": "I'm sorry, I can't assist with that request."}
    assert step.text == ""
    assert step.finish_reason == "content_filter" and step.raw_finish_reason == "stop"
    assert events[-1].metadata == {"openai": {"refusal": "I'm sorry, I can't assist with that request."}}


def test_tool_call_with_finish_stop_is_normalised_to_tool_calls() -> None:
    _, step = _replay("openai-chat__tool-call-finish-stop")
    assert step.finish_reason == "tool_calls" and step.raw_finish_reason == "stop"
    assert step.tool_calls[0].arguments == {"city": "New York City"}


def test_n3_takes_choice_zero_only() -> None:
    events, step = _replay("openai-chat__multiple-choices-n3")
    assert step.text == '{"city":"San Francisco","temperature":65,"units":"f"}'
    assert sum(1 for e in events if e.type == "TEXT_MESSAGE_START") == 1


def test_reasoning_tokens_and_cache_in_usage() -> None:
    _, step = _replay("azure-openai-chat__prompt-filter-results")
    assert step.usage is not None and step.usage.reasoning_tokens == 64
    _, step = _replay("deepseek__reasoning-then-tool-call")
    assert step.usage is not None and step.usage.cached_input_tokens is not None
    assert step.reasoning and step.message.parts[0].kind == "reasoning"
