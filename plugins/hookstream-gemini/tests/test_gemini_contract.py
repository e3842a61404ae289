"""The provider contract suite (``hookstream.testing.ProviderContract``) over every real Gemini
recording of the shared corpora, with Google's error body (``{"error": {"code", "message", "status"}}``,
bare or in a one-element list as ``streamGenerateContent`` sends it) as ``test_gemini_errors`` sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, corpus_recordings


def _error(status: int, gstatus: str, code: str, *, wrap: bool, **headers: str) -> HTTPErrorCase:
    message = f"Gemini says {gstatus.lower()}"
    err = {"error": {"code": status, "message": message, "status": gstatus}}
    return HTTPErrorCase(status, json.dumps([err] if wrap else err).encode(), code, message, headers)


ERRORS = [
    _error(400, "INVALID_ARGUMENT", "bad_request", wrap=True),
    _error(403, "PERMISSION_DENIED", "authentication_error", wrap=False),
    _error(429, "RESOURCE_EXHAUSTED", "rate_limit", wrap=True, **{"Retry-After": "7"}),
    _error(500, "INTERNAL", "server_error", wrap=False),
]

# A prompt blocked before any candidate has no finishReason (promptFeedback.blockReason says why).
BLOCKED = {"gemini__prompt-blocked-safety": "content_filter"}



@pytest.fixture(scope="module")
def contract() -> ProviderContract:
    return ProviderContract("gemini", corpus_recordings("gemini", Path(__file__)), errors=ERRORS,
                            expected_finish=BLOCKED)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_gemini_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
