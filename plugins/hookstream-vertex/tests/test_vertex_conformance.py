"""Every real Vertex AI recording in ``recordings/`` through the installed adapters over loopback HTTP
(the conformance kit): whole, and split at random byte boundaries with several seeds.

File prefixes name the wire format: ``vertex-gemini__`` bodies go to the ``vertex`` provider,
``vertex-anthropic__`` bodies to ``vertex-anthropic``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookstream.testing import Recording, check_recording, recordings

FOLDER = Path(__file__).resolve().parent / "recordings"
PROVIDER_OF_PREFIX = {"vertex-gemini": "vertex", "vertex-anthropic": "vertex-anthropic"}
RECORDINGS = recordings(FOLDER, tuple(PROVIDER_OF_PREFIX)) if FOLDER.is_dir() else []


def _provider(recording: Recording) -> str:
    return PROVIDER_OF_PREFIX[recording.name.split("__", 1)[0]]


def test_there_are_recordings_of_both_providers() -> None:
    prefixes = {r.name.split("__", 1)[0] for r in RECORDINGS}
    assert prefixes == set(PROVIDER_OF_PREFIX), f"recordings found for {sorted(prefixes)} in {FOLDER}"


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recording_conforms_whole(recording: Recording) -> None:
    assert check_recording(_provider(recording), recording) == []


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("fragment", [(1, 8), (1, 64)])
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recording_conforms_fragmented(recording: Recording, fragment: tuple[int, int], seed: int) -> None:
    assert check_recording(_provider(recording), recording, fragment=fragment, seed=seed) == []
