"""The provider contract suite (``hookstream.testing.ProviderContract``) for ``openai`` (Chat
Completions and the compatible servers the corpus maps to it) and ``openai-responses``, over every
real recording of the shared corpora, with OpenAI's error body (API reference, "Error codes":
``{"error": {"message", "type", "param", "code"}}``) as ``test_openai_requests`` sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, corpus_recordings


def _error(status: int, etype: str, code: str, **headers: str) -> HTTPErrorCase:
    message = f"Incorrect API key provided: sk-tes*****6789 (status {status})"
    body = {"error": {"message": message, "type": etype, "param": None, "code": None}}
    return HTTPErrorCase(status, json.dumps(body).encode(), code, message, headers)


ERRORS = [
    _error(401, "invalid_request_error", "authentication_error"),
    _error(404, "invalid_request_error", "not_found"),
    _error(429, "rate_limit_exceeded", "rate_limit", **{"Retry-After": "7"}),
    _error(500, "server_error", "server_error"),
]



@pytest.fixture(scope="module", params=["openai", "openai-responses"])
def contract(request: pytest.FixtureRequest) -> ProviderContract:
    return ProviderContract(request.param, corpus_recordings(request.param, Path(__file__)), errors=ERRORS)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_openai_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
