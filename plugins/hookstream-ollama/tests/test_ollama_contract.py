"""The provider contract suite (``hookstream.testing.ProviderContract``) over every real Ollama
``/api/chat`` recording in ``recordings/``, with Ollama's error body (``{"error": str}``, API reference
"Errors") as ``test_ollama`` sends it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, recordings

HERE = Path(__file__).parent / "recordings"

ERRORS = [
    HTTPErrorCase(404, b'{"error":"model \\"nope\\" not found, try pulling it first"}', "not_found",
                  'model "nope" not found, try pulling it first'),
]


@pytest.fixture(scope="module")
def contract() -> ProviderContract:
    return ProviderContract("ollama", recordings(HERE, ("ollama",)), errors=ERRORS)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_ollama_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
