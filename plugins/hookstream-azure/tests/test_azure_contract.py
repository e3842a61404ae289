"""The provider contract suite (``hookstream.testing.ProviderContract``) for ``azure`` and
``azure-responses`` over every real Azure OpenAI recording in ``recordings/``, with the OpenAI error body
Azure OpenAI sends (``{"error": {"message", "type", "param", "code"}}``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, recordings

HERE = Path(__file__).parent / "recordings"
PREFIX = {"azure": "azure-openai-chat", "azure-responses": "azure-openai-responses"}


def _error(status: int, etype: str, code: str, message: str) -> HTTPErrorCase:
    body = {"error": {"message": message, "type": etype, "param": None, "code": None}}
    return HTTPErrorCase(status, json.dumps(body).encode(), code, message)


ERRORS = [
    _error(401, "invalid_request_error", "authentication_error", "Access denied due to invalid subscription key."),
    _error(429, "rate_limit_exceeded", "rate_limit", "Requests to the deployment have exceeded the rate limit."),
    _error(500, "server_error", "server_error", "The server had an error while processing your request."),
]

# Responses ``incomplete`` for the content filter: the raw finish reason is the status, the adapter
# looks up ``incomplete:content_filter`` (incomplete_details.reason) first.
FILTERED = {"azure-openai-responses__mirascope__incomplete-content-filter": "content_filter"}


@pytest.fixture(scope="module", params=sorted(PREFIX))
def contract(request: pytest.FixtureRequest) -> ProviderContract:
    return ProviderContract(request.param, recordings(HERE, (PREFIX[request.param],)), errors=ERRORS,
                            expected_finish=FILTERED)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_azure_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
