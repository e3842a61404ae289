"""Provider conformance kit: run recorded bodies through an adapter and compare with expected results.

A corpus folder holds ``NAME.sse`` (or ``.ndjson``, ``.eventstream``) response bodies and
``expected/NAME.json`` results in the shape::

    {"text": str, "thinking": str | null, "tool_calls": [{"id", "name", "arguments"}],
     "finish_reason": str | null,           # the provider's RAW finish value
     "usage": {"input_tokens", "output_tokens"}}

:func:`check_recording` replays one body over loopback HTTP (whole, or split at random boundaries),
checks the event grammar and returns the list of mismatches (empty when it conforms). Plugin authors
call it from their own tests, one test per recording (see :func:`recordings`).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs

from .._agentloop.output import final_json
from .grammar import check_events
from .recorded import replay_body

__all__ = ["BODY_SUFFIXES", "CORPUS_ENV", "Recording", "check_recording", "compare", "corpus_providers",
           "corpus_recordings", "find_corpus", "recordings", "require_corpus", "shared_missing"]

CORPUS_ENV = "HOOKSTREAM_CORPUS"
BODY_SUFFIXES = (".sse", ".ndjson", ".eventstream")
"""File suffixes of recorded response bodies, one per framing (SSE, NDJSON, AWS event-stream)."""
_CORPUS_ENVS = {"provider-streams": CORPUS_ENV, "provider-streams-external": "HOOKSTREAM_CORPUS_EXTERNAL"}


@attrs.define(slots=True, frozen=True)
class Recording:
    name: str
    body_path: Path
    expected: dict[str, Any]


def _locate(start: Path | None, name: str) -> tuple[Path | None, str]:
    """(the corpus folder or ``None``, where it was looked for: the text of the skip or fail message)."""
    env_name = _CORPUS_ENVS.get(name)
    env = os.environ.get(env_name) if env_name else None
    if env:
        path = Path(env)
        return (path, "") if path.is_dir() else (None, f"${env_name}={env} is not a directory")
    here = (start or Path.cwd()).resolve()
    tried = []
    for parent in (here, *here.parents):
        if (parent / ".git").exists():
            candidate = parent.parent / "shared" / name
            if candidate.is_dir():
                return candidate, ""
            tried.append(str(candidate))
    if not tried:
        return None, f"shared corpus ../shared/{name} not found: {here} is not inside a git repository"
    hint = f" or set ${env_name}" if env_name else ""
    return None, f"shared corpus not found at {', '.join(tried)} (put it beside the repository{hint})"


def find_corpus(start: Path | None = None, name: str = "provider-streams") -> Path | None:
    """The shared corpus folder ``name`` (``provider-streams`` or ``provider-streams-external``):
    ``$HOOKSTREAM_CORPUS`` (``$HOOKSTREAM_CORPUS_EXTERNAL``), else ``../shared/NAME`` beside the git
    repository that contains ``start`` (default: the working directory). ``None`` if absent; tests
    call :func:`require_corpus` instead, which skips or fails with the reason."""
    return _locate(start, name)[0]


def shared_missing(message: str) -> NoReturn:
    """Stop a test that needs ``../shared``: ``pytest.fail`` when the environment variable ``CI`` is
    set (a CI run must not pass by skipping its corpus tests), ``pytest.skip`` otherwise; both with
    ``message``. Raises the pytest outcome exception; needs pytest."""
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set: a missing corpus fails the run instead of skipping)", pytrace=False)
    pytest.skip(message)


def require_corpus(start: Path | None = None, name: str = "provider-streams") -> Path:
    """The corpus folder like :func:`find_corpus`, or, when it is absent, :func:`shared_missing` with
    where it was looked for (fail under ``$CI``, skip otherwise). For use inside a test."""
    path, why = _locate(start, name)
    if path is None:
        shared_missing(why)
    return path


def recordings(corpus: Path, prefixes: tuple[str, ...]) -> list[Recording]:
    """Recordings in ``corpus`` whose file name starts with one of ``prefixes`` + ``"__"``, sorted: SSE
    bodies (``*.sse``), NDJSON bodies (``*.ndjson``) and binary AWS event-stream bodies
    (``*.eventstream``), each with ``expected/NAME.json``."""
    out = []
    paths = [p for ext in BODY_SUFFIXES for p in corpus.glob(f"*{ext}")]
    for path in sorted(paths):
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


def corpus_providers(corpus: Path) -> dict[str, str]:
    """Corpus file prefix (the name before ``__``) -> provider name, read in place from the corpus's own
    ``../tools/check-corpus`` (its ``PROVIDER`` table), so every test maps files the way the corpus does.
    Fails under ``CI`` (skips otherwise, see :func:`shared_missing`) when the tool or its table is absent."""
    tool = corpus.parent / "tools" / "check-corpus"
    if not tool.is_file():
        shared_missing(f"{tool} not found: it maps corpus file prefixes to providers")
    for node in ast.parse(tool.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PROVIDER" for t in node.targets):
            value: dict[str, str] = ast.literal_eval(node.value)
            return value
    shared_missing(f"{tool} has no PROVIDER table to map corpus file prefixes to providers")


def corpus_recordings(
    provider: str, start: Path | None = None, names: Sequence[str] = ("provider-streams", "provider-streams-external")
) -> list[Recording]:
    """Every recording of the shared corpora ``names`` (by default hookstream's and the external one)
    whose file prefix the corpus maps to ``provider`` (:func:`corpus_providers`: ``openai`` gets
    ``openai-chat``, ``deepseek``, ``groq``...), sorted by corpus then name. For use inside a test or
    fixture: when a corpus, its table or such recordings are absent it stops the test as
    :func:`require_corpus` does (fail under ``$CI``, skip otherwise)."""
    found: list[Recording] = []
    for name in names:
        corpus = require_corpus(start, name)
        prefixes = tuple(p for p, prov in corpus_providers(corpus).items() if prov == provider)
        found.extend(recordings(corpus, prefixes))
    if not found:
        shared_missing(f"the corpora {', '.join(names)} have no recordings of provider {provider!r}")
    return found
