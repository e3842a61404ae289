"""The provider contract suite (``hookstream.testing.ProviderContract``) for ``vertex`` (Gemini) and
``vertex-anthropic`` (Claude) over every real Vertex AI recording in ``recordings/``, with Google's error
body (``[{"error": {"code", "status", "message"}}]``) as ``test_vertex_auth`` sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, recordings

HERE = Path(__file__).parent / "recordings"
PREFIX = {"vertex": "vertex-gemini", "vertex-anthropic": "vertex-anthropic"}


def _error(status: int, gstatus: str, code: str, message: str) -> HTTPErrorCase:
    body = [{"error": {"code": status, "status": gstatus, "message": message}}]
    return HTTPErrorCase(status, json.dumps(body).encode(), code, message)


ERRORS = [
    _error(403, "PERMISSION_DENIED", "authentication_error", "Permission denied on aiplatform.endpoints.predict"),
    _error(429, "RESOURCE_EXHAUSTED", "rate_limit", "Quota exceeded for aiplatform.googleapis.com"),
]


@pytest.fixture(scope="module", params=sorted(PREFIX))
def contract(request: pytest.FixtureRequest) -> ProviderContract:
    return ProviderContract(request.param, recordings(HERE, (PREFIX[request.param],)), errors=ERRORS)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_vertex_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
