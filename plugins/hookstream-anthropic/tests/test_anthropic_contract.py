"""The provider contract suite (``hookstream.testing.ProviderContract``) over every real Anthropic
recording of the shared corpora, with the Messages API's error body ("Errors": ``{"type": "error",
"error": {"type", "message"}, "request_id"}``) as ``test_anthropic_errors`` sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, corpus_recordings


def _error(status: int, etype: str, message: str, code: str, **headers: str) -> HTTPErrorCase:
    body = {"type": "error", "error": {"type": etype, "message": message}, "request_id": "req_011"}
    return HTTPErrorCase(status, json.dumps(body).encode(), code, message, headers)


ERRORS = [
    _error(401, "authentication_error", "invalid x-api-key", "authentication_error"),
    _error(429, "rate_limit_error", "Number of requests exceeded", "rate_limit", **{"retry-after": "7"}),
    _error(529, "overloaded_error", "Overloaded", "server_error"),
]



@pytest.fixture(scope="module")
def contract() -> ProviderContract:
    return ProviderContract("anthropic", corpus_recordings("anthropic", Path(__file__)), errors=ERRORS)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_anthropic_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
