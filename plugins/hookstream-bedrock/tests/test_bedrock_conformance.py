"""The conformance kit on every real ConverseStream recording in ``recordings/``, whole and split at
random byte boundaries with several seeds.

Two documented differences between the expected files (derived from botocore's raw parse, see
``recordings/SOURCES.md``) and hookstream's results are applied, from each file's own ``extra``, by
``bedrock_frames.hookstream_expected`` (shared with the contract suite's test):

* ``usage.input_tokens``: the expected file holds Bedrock's raw ``inputTokens``, which leaves prompt-
  cache reads and writes out; hookstream counts every input token (``Usage`` docs), so the cache
  counts are added.
* A ``server_tool_use`` block (a tool Bedrock ran itself) is not a tool call for the agent loop: the
  expected ``tool_calls`` lists it, hookstream reports it as ``CUSTOM bedrock.server_tool_use`` (checked
  in ``test_a_server_tool_is_not_a_client_tool_call``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bedrock_frames import hookstream_expected
from hookstream.testing import Recording, check_recording, recordings, replay_body

HERE = Path(__file__).parent / "recordings"
RECORDINGS = recordings(HERE, ("bedrock",)) if HERE.is_dir() else []
needs_recordings = pytest.mark.skipif(not RECORDINGS, reason="tests/recordings holds no bedrock__*.eventstream yet")


@needs_recordings
def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 10


@needs_recordings
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recording_conforms_whole(recording: Recording) -> None:
    assert check_recording("bedrock", hookstream_expected(recording)) == []


@needs_recordings
@pytest.mark.parametrize("fragment", [(1, 3), (1, 16), (7, 300)])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recording_conforms_fragmented(recording: Recording, fragment: tuple[int, int], seed: int) -> None:
    assert check_recording("bedrock", hookstream_expected(recording), fragment=fragment, seed=seed) == []


@needs_recordings
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recording_one_message_per_read(recording: Recording) -> None:
    events, step = replay_body("bedrock", recording.body_path.read_bytes(), split="events")
    expected = hookstream_expected(recording).expected
    assert step.text == (expected["text"] or "")
    assert step.raw_finish_reason == expected["finish_reason"]
    assert events[-1].type == "RUN_FINISHED"


@needs_recordings
def test_a_server_tool_is_not_a_client_tool_call() -> None:
    recording = next(r for r in RECORDINGS if "server_tool" in r.name)
    events, step = replay_body("bedrock", recording.body_path.read_bytes())
    server = [e for e in events if e.type == "CUSTOM" and e.name == "bedrock.server_tool_use"]
    assert [e.value["name"] for e in server] == ["nova_code_interpreter"]
    assert server[0].value["input"] == {"snippet": "1234 * 5678"}
    results = [e for e in events if e.type == "CUSTOM" and e.name == "bedrock.tool_result"]
    assert results[0].value["content"][0]["json"]["stdOut"] == "7006652"
    assert [c.name for c in step.tool_calls] == ["final_result"]
    # Both server blocks stay in the assistant message, to go back to Bedrock in place.
    blocks = [p.provider_metadata["bedrock"]["server_block"] for p in step.message.parts
              if getattr(p, "provider_metadata", None) and "server_block" in p.provider_metadata.get("bedrock", {})]
    assert [next(iter(b)) for b in blocks] == ["toolUse", "toolResult"]


@needs_recordings
def test_usage_cache_counts_and_guardrail_trace_are_kept() -> None:
    cached = next(r for r in RECORDINGS if "cache_read" in r.name)
    events, step = replay_body("bedrock", cached.body_path.read_bytes())
    u = step.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens, u.cached_input_tokens, u.cache_write_tokens) == \
        (12 + 1028, 250, 1290, 1028, 0)
    guarded = next(r for r in RECORDINGS if "guardrail_grounding" in r.name)
    events, step = replay_body("bedrock", guarded.body_path.read_bytes())
    finished = events[-1]
    assert finished.type == "RUN_FINISHED" and finished.finish_reason == "content_filter"
    assert finished.metadata["bedrock"]["trace"] == guarded.expected["extra"]["guardrail_trace"]
    assert finished.metadata["bedrock"]["latencyMs"] == 821


@needs_recordings
def test_reasoning_signature_and_redacted_content_are_kept_for_the_next_turn() -> None:
    signed = next(r for r in RECORDINGS if "reasoning_signature" in r.name)
    _, step = replay_body("bedrock", signed.body_path.read_bytes())
    meta = [p.provider_metadata for p in step.message.parts if p.kind == "reasoning"]
    assert meta == [{"bedrock": {"signature": signed.expected["extra"]["reasoning_signature"]}}]
    redacted = next(r for r in RECORDINGS if "reasoning_redacted" in r.name)
    _, step = replay_body("bedrock", redacted.body_path.read_bytes())
    parts = [p for p in step.message.parts if p.kind == "reasoning"]
    assert len(parts) == redacted.expected["extra"]["reasoning_redacted_blocks"] == 2
    assert all(p.provider_metadata["bedrock"]["redacted_content"] for p in parts)


@needs_recordings
def test_citations_become_document_sources() -> None:
    cited = next(r for r in RECORDINGS if "citations" in r.name)
    _, step = replay_body("bedrock", cited.body_path.read_bytes())
    assert [(s.source_type, s.document_index, s.title) for s in step.sources] == [("document", 0, "company_policy")] * 2
    first = step.sources[0]
    assert step.text[first.start_index:first.end_index] == "employees get 20 days annual leave."
    assert first.cited_text.startswith("Company leave policy")
