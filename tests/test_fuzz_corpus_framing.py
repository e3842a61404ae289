"""Every recorded provider stream, split into reads every way, gives the result of the unsplit stream.

For each ``.sse`` file in ``../shared/provider-streams`` and ``../shared/provider-streams-external``
(found like the conformance kit does: :func:`hookstream.testing.conformance.find_corpus`), the body is
served over real loopback HTTP and read by the real transport and adapter (``replay_body``) with
different read boundaries: one line per read (the blank line ending each event alone), one event per
read, three events per read, random cut points (hypothesis), and one byte per read. The final result
(``final_json``: text, thinking, tool calls, finish reason, usage, error) and the sequence of event
types must equal those of the unsplit body. The split bodies are read with ``max_event_bytes`` set to
the file's largest event: the limit is per event, so it must never fire however the reads fall.

One byte per read over real HTTP costs one HTTP chunk per byte, so it runs on the first
``BYTES_CAP`` bytes of each file only (cut after the last complete event in them; both that prefix
and the byte-split prefix are replayed). Random cuts: ``max(2, HOOKSTREAM_FUZZ_EXAMPLES // 20)``
examples per file (at most 200), so the default run stays near half a minute on 2 cores.

Skips when the corpus is absent; fails instead when the ``CI`` environment variable is set.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest
from hookstream import final_json, get_registry
from hookstream.plugin import CallOptions
from hookstream.testing import replay_body
from hookstream.testing.conformance import corpus_providers, find_corpus, shared_missing
from hookstream.testing.server import split_body
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = max(2, min(int(os.environ.get("HOOKSTREAM_FUZZ_EXAMPLES", "60")) // 20, 200))
BYTES_CAP = 4096



def _folders() -> list[Path]:
    corpus = find_corpus(ROOT)
    if corpus is None:
        return []
    external = corpus.parent / "provider-streams-external"
    return [corpus, external] if external.is_dir() else [corpus]


FILES = sorted((p for folder in _folders() for p in folder.glob("*.sse")), key=lambda p: (p.parent.name, p.name))
SPLITS: dict[str, dict[str, Any]] = {
    "line-per-read": {"split": "lines"},
    "event-per-read": {"split": "events"},
    "3-events-per-read": {"split": "events", "per_read": 3},
}


@functools.cache
def _providers(corpus: Path) -> dict[str, str]:
    return corpus_providers(corpus)


def _provider(path: Path) -> str:
    prefix = path.name.split("__", 1)[0]
    providers = _providers(path.parent.parent / "provider-streams")
    assert prefix in providers, f"corpus file {path.name}: no provider known for prefix {prefix!r}"
    provider = providers[prefix]
    if provider not in get_registry().names("providers"):
        shared_missing(f"provider plugin {provider!r} is not installed")
    return provider


@functools.cache
def _body(path: Path) -> bytes:
    return path.read_bytes()


def _result(provider: str, body: bytes, *, tight: bool = False, **framing: Any) -> tuple[Any, ...]:
    options = CallOptions(max_event_bytes=_largest_event(body)) if tight else None
    events, step = replay_body(provider, body, options=options, **framing)
    return final_json(step), [e.type for e in events]


def _largest_event(body: bytes) -> int:
    return max(map(len, split_body(body, "events")), default=1)


@functools.cache
def _whole(provider: str, path: Path) -> tuple[Any, ...]:
    return _result(provider, _body(path))


def _file_id(path: Path) -> str:
    return f"{'ext/' if path.parent.name.endswith('-external') else ''}{path.stem}"


def test_corpus_folders_are_present() -> None:
    folders = _folders()
    if not folders:
        shared_missing("shared corpus ../shared/provider-streams not found")
    if len(folders) < 2:
        shared_missing("shared corpus ../shared/provider-streams-external not found")
    assert all(any(folder.glob("*.sse")) for folder in folders)


@pytest.mark.parametrize("mode", list(SPLITS))
@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_split_by_lines_or_events_gives_the_same_result(path: Path, mode: str) -> None:
    provider = _provider(path)
    assert _result(provider, _body(path), tight=True, **SPLITS[mode]) == _whole(provider, path)


@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_random_cut_points_give_the_same_result(path: Path) -> None:
    provider = _provider(path)
    body = _body(path)
    expected = _whole(provider, path)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=min(200, len(body))))
    def prop(cuts: list[int]) -> None:
        assert _result(provider, body, tight=True, cuts=cuts) == expected

    prop()


@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_one_byte_per_read_gives_the_same_result(path: Path) -> None:
    provider = _provider(path)
    body = _body(path)
    if len(body) > BYTES_CAP:
        # The complete events within the first BYTES_CAP bytes (at least the first event).
        prefix = b""
        for event in split_body(body, "events"):
            if prefix and len(prefix) + len(event) > BYTES_CAP:
                break
            prefix += event
        body = prefix
    assert _result(provider, body, tight=True, split="bytes") == _result(provider, body)
