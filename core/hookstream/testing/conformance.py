"""Provider conformance kit: run recorded bodies through an adapter and compare with expected results.

A corpus folder holds ``NAME.sse`` response bodies and ``expected/NAME.json`` results in the shape::

    {"text": str, "thinking": str | null, "tool_calls": [{"id", "name", "arguments"}],
     "finish_reason": str | null,           # the provider's RAW finish value
     "usage": {"input_tokens", "output_tokens"}}

:func:`check_recording` replays one body over loopback HTTP (whole, or split at random boundaries),
checks the event grammar and returns the list of mismatches (empty when it conforms). Plugin authors
call it from their own tests, one test per recording (see :func:`recordings`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs

from .._output import final_json
from .grammar import check_events
from .recorded import replay_body

__all__ = ["Recording", "check_recording", "compare", "find_corpus", "recordings"]

CORPUS_ENV = "HOOKSTREAM_CORPUS"


@attrs.define(slots=True, frozen=True)
class Recording:
    name: str
    body_path: Path
    expected: dict[str, Any]


def find_corpus(start: Path | None = None) -> Path | None:
    """The shared provider-stream corpus: ``$HOOKSTREAM_CORPUS``, else ``../shared/provider-streams``
    beside the repository that contains ``start`` (default: the working directory). ``None`` if absent."""
    env = os.environ.get(CORPUS_ENV)
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    here = (start or Path.cwd()).resolve()
    for parent in (here, *here.parents):
        candidate = parent.parent / "shared" / "provider-streams"
        if (parent / ".git").exists() and candidate.is_dir():
            return candidate
    return None


def recordings(corpus: Path, prefixes: tuple[str, ...]) -> list[Recording]:
    """Recordings in ``corpus`` whose file name starts with one of ``prefixes`` + ``"__"``, sorted."""
    out = []
    for path in sorted(corpus.glob("*.sse")):
        prefix = path.name.split("__", 1)[0]
        if prefix in prefixes:
            expected = json.loads((corpus / "expected" / (path.stem + ".json")).read_text("utf-8"))
            out.append(Recording(path.stem, path, expected))
    return out


def compare(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """Mismatches between an expected result and a ``final-json`` object (empty list: equal).

    Compares text, thinking, tool calls (name, parsed arguments, id where expected has one), the raw
    finish reason and the usage counts the expected result has."""
    bad = []
    if (got.get("text") or "") != (expected.get("text") or ""):
        bad.append(f"text {got.get('text')!r} != {expected.get('text')!r}")
    if (got.get("thinking") or None) != (expected.get("thinking") or None):
        bad.append("thinking differs")
    exp_calls, got_calls = expected.get("tool_calls") or [], got.get("tool_calls") or []
    if len(exp_calls) != len(got_calls):
        bad.append(f"tool_calls count {len(got_calls)} != {len(exp_calls)}")
    else:
        for e, g in zip(exp_calls, got_calls, strict=True):
            if e["name"] != g["name"] or e.get("arguments") != g.get("arguments"):
                bad.append(f"tool_call {e['name']}: {g!r} != {e!r}")
            elif e.get("id") is not None and e["id"] != g.get("id"):
                bad.append(f"tool_call id {g.get('id')!r} != {e['id']!r}")
    if got.get("raw_finish_reason") != expected.get("finish_reason"):
        bad.append(f"raw_finish_reason {got.get('raw_finish_reason')!r} != {expected.get('finish_reason')!r}")
    eu, gu = expected.get("usage") or {}, got.get("usage") or {}
    for key in ("input_tokens", "output_tokens"):
        if eu.get(key) is not None and gu.get(key) != eu.get(key):
            bad.append(f"usage.{key} {gu.get(key)} != {eu.get(key)}")
    return bad


def check_recording(
    provider: str, recording: Recording, *, fragment: tuple[int, int] | None = None, seed: int = 0
) -> list[str]:
    """Replay ``recording`` through ``provider`` and return its mismatches; grammar violations are
    reported as a mismatch too."""
    events, step = replay_body(provider, recording.body_path.read_bytes(), fragment=fragment, seed=seed)
    problems = []
    try:
        check_events(events, form="call")
    except AssertionError as exc:
        problems.append(f"grammar: {exc}")
    problems.extend(compare(recording.expected, final_json(step)))
    return problems
