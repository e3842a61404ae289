"""The provider contract suite (``hookstream.testing.ProviderContract``) over every real ConverseStream
recording in ``recordings/`` (expected results in hookstream's terms, ``bedrock_frames.hookstream_expected``),
with Bedrock's REST-JSON error body (``{"message"}``, the type in the ``x-amzn-ErrorType`` header) as
``test_bedrock_errors`` and ``test_bedrock_auth`` send it."""

from __future__ import annotations

from pathlib import Path

import pytest
from bedrock_frames import hookstream_expected
from hookstream.testing import CONTRACT_CHECKS, HTTPErrorCase, ProviderContract, recordings

HERE = Path(__file__).parent / "recordings"

ERRORS = [
    HTTPErrorCase(400, b'{"message": "The provided model identifier is invalid."}', "bad_request",
                  "The provided model identifier is invalid.",
                  {"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/"}),
    HTTPErrorCase(429, b'{"message": "Too many requests, please wait before trying again."}', "rate_limit",
                  "Too many requests, please wait before trying again.", {"Retry-After": "0"}),
]


@pytest.fixture(scope="module")
def contract() -> ProviderContract:
    found = [hookstream_expected(r) for r in recordings(HERE, ("bedrock",))]
    return ProviderContract("bedrock", found, errors=ERRORS)


@pytest.mark.parametrize("check", CONTRACT_CHECKS)
def test_bedrock_contract(contract: ProviderContract, check: str) -> None:
    assert contract.check(check) == []
