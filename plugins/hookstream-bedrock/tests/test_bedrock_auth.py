"""Authorisation: SigV4 signatures recomputed independently with botocore from what the loopback
server captured, bearer API keys, missing credentials, and secrets kept out of every message."""

from __future__ import annotations

from pathlib import Path

import pytest
from bedrock_frames import (
    ACCESS_KEY,
    MEDIA_TYPE,
    MODEL,
    SECRET_KEY,
    SESSION_TOKEN,
    message_start,
    set_credentials,
    stop,
    text,
)
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.server import CapturedRequest

HELLO = message_start() + text(0, "Hello", " there") + stop("end_turn")


def expected_signature(req: CapturedRequest, url: str, region: str, token: str | None) -> str:
    """The SigV4 signature of the captured request, recomputed by botocore from its method, URL, the
    headers it says it signed, its body and the timestamp it carries."""
    auth_header = req.headers["Authorization"]
    fields = dict(part.strip().split("=", 1) for part in auth_header.split(" ", 1)[1].split(","))
    signed = fields["SignedHeaders"].split(";")
    lower = {k.lower(): v for k, v in req.headers.items()}
    headers = {name: lower[name] for name in signed if name != "host"}
    aws = AWSRequest(method=req.method, url=url + req.path, data=req.body, headers=headers)
    aws.context["timestamp"] = lower["x-amz-date"]
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, token), "bedrock", region)
    assert signer.signed_headers(signer.headers_to_sign(aws)) == fields["SignedHeaders"]
    assert fields["Credential"] == f"{ACCESS_KEY}/{lower['x-amz-date'][:8]}/{region}/bedrock/aws4_request"
    return str(signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws))


@pytest.mark.parametrize("token", [False, True])
def test_sigv4_signature_matches_botocore(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, token: bool) -> None:
    set_credentials(monkeypatch, tmp_path, token=token)
    with LoopbackServer([Response(HELLO, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, region="eu-west-3")
        assert chat(model, "hello").result().text == "Hello there"
        req, url = srv.requests[0], srv.url
    assert req.path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    got = req.headers["Authorization"].rsplit("Signature=", 1)[1]
    assert got == expected_signature(req, url, "eu-west-3", SESSION_TOKEN if token else None)
    assert req.headers.get("X-Amz-Security-Token") == (SESSION_TOKEN if token else None)
    assert "x-amz-date" in req.headers["Authorization"]


def test_every_attempt_is_signed_anew(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path)
    throttled = Response(b'{"message": "Too many requests, please wait before trying again."}', status=429,
                         content_type="application/json", headers={"Retry-After": "0"})
    with LoopbackServer([throttled, Response(HELLO, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, region="us-east-1")
        assert chat(model, "hello").result().text == "Hello there"
        first, second = srv.requests
        url = srv.url
    for req in (first, second):
        assert req.headers["Authorization"].count("Signature=") == 1
        signature = req.headers["Authorization"].rsplit("Signature=", 1)[1]
        assert signature == expected_signature(req, url, "us-east-1", None)


def test_region_from_the_environment_and_the_default_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    provider = get_model(f"bedrock:{MODEL}")
    assert provider.region == "ap-south-1"
    assert provider.base_url == "https://bedrock-runtime.ap-south-1.amazonaws.com"
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert get_model(f"bedrock:{MODEL}").region == "us-west-2"
    assert get_model(f"bedrock:{MODEL}", region="eu-central-1").base_url.endswith("eu-central-1.amazonaws.com")


def test_region_and_credentials_from_a_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, keys=False)
    config = tmp_path / "config"
    config.write_text("[profile work]\nregion = sa-east-1\n")
    creds = tmp_path / "credentials"
    creds.write_text(f"[work]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    with LoopbackServer([Response(HELLO, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, profile="work")
        assert chat(model, "hello").result().text == "Hello there"
        req, url = srv.requests[0], srv.url
    assert model.region == "sa-east-1"
    assert req.headers["Authorization"].rsplit("Signature=", 1)[1] == expected_signature(req, url, "sa-east-1", None)


def test_an_api_key_is_a_bearer_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, keys=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-bedrock-api-key-0123")
    with LoopbackServer([Response(HELLO, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, region="us-east-1")
        assert chat(model, "hello").result().text == "Hello there"
        req = srv.requests[0]
    assert req.headers["authorization"] == "Bearer ABSK-bedrock-api-key-0123"
    assert "X-Amz-Date" not in req.headers


def test_no_credentials_is_missing_credentials_before_any_request(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, keys=False)
    with LoopbackServer([Response(HELLO, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, region="us-east-1")
        events = list(chat(model, "hello"))
        assert srv.requests == []
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
    assert "AWS_ACCESS_KEY_ID" in last.message and "AWS_SECRET_ACCESS_KEY" in last.message
    assert "AWS_PROFILE" in last.message


def test_no_region_is_an_invalid_request(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path)
    events = list(chat(get_model(f"bedrock:{MODEL}"), "hello"))
    assert events[-1].type == "RUN_ERROR"
    assert "region" in events[-1].message


def test_secrets_never_reach_an_error_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    set_credentials(monkeypatch, tmp_path, token=True)
    echo = f'{{"message": "The request signature we calculated does not match: {SECRET_KEY} {SESSION_TOKEN}"}}'
    with LoopbackServer([Response(echo.encode(), status=403, content_type="application/json")]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, region="us-east-1")
        events = list(chat(model, "hello"))
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "authentication_error"
    assert "signature we calculated" in last.message
    assert SECRET_KEY not in last.message and SESSION_TOKEN not in last.message
    assert SECRET_KEY not in repr(model) and SECRET_KEY not in model.redact(f"x {SECRET_KEY} y")


def test_count_tokens_is_signed_like_a_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # CountTokens (Bedrock API reference): POST /model/{modelId}/count-tokens, {"input": {"converse": ...}},
    # answered {"inputTokens": N}; SigV4-signed over the exact body like every call.
    from hookstream import count_tokens

    set_credentials(monkeypatch, tmp_path)
    answer = Response(b'{"inputTokens": 12}', content_type="application/json")
    with LoopbackServer([answer]) as srv:
        count = count_tokens(f"bedrock:{MODEL}", "hello", system="Be brief.", base_url=srv.url, region="eu-west-3")
        req, url = srv.requests[0], srv.url
    assert (count.input_tokens, count.source) == (12, "provider")
    assert req.path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/count-tokens"
    converse = req.json()["input"]["converse"]
    assert converse["messages"][0]["content"][0]["text"] == "hello"
    assert converse["system"] == [{"text": "Be brief."}]
    assert "inferenceConfig" not in converse
    got = req.headers["Authorization"].rsplit("Signature=", 1)[1]
    assert got == expected_signature(req, url, "eu-west-3", None)
