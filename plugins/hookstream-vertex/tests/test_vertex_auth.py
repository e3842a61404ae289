"""Credentials, project, location and URLs of the two Vertex AI providers, against real loopback servers
(the model endpoint, and Google's OAuth 2.0 token endpoint where a credentials file names one).

Nothing is patched: google-auth refreshes through ``google.auth.transport.requests`` against a loopback
token server, and a machine without credentials is a subprocess whose HOME, gcloud folder and
environment hold none."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import google.auth.exceptions
import google.oauth2.credentials
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hookstream import chat, get_model, get_registry
from hookstream.testing import LoopbackServer, Response
from hookstream_vertex import VertexAnthropicProvider, VertexProvider
from vertex_helpers import (
    TOKEN,
    CountingCredentials,
    anthropic_text,
    gemini_text,
    no_credentials_env,
)

GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4-5@20250929"
GOOGLE_ENV = ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION",
              "GOOGLE_APPLICATION_CREDENTIALS")


@pytest.fixture(autouse=True)
def _clean_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Project and location come only from what each test sets."""
    for name in GOOGLE_ENV:
        monkeypatch.delenv(name, raising=False)


def _auth(req: Any) -> str | None:
    return next((v for k, v in req.headers.items() if k.lower() == "authorization"), None)


# -- registration ------------------------------------------------------------------------------------


def test_both_providers_are_registered_by_the_distribution() -> None:
    reg = get_registry()
    assert reg.provider("vertex") is VertexProvider
    assert reg.provider("vertex-anthropic") is VertexAnthropicProvider
    assert VertexProvider.distribution == VertexAnthropicProvider.distribution == "hookstream-vertex"
    out = subprocess.run([sys.executable, "-m", "hookstream", "plugins"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "vertex  [hookstream-vertex 0.1.0]" in out
    assert "providers: vertex, vertex-anthropic" in out


# -- URLs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("location", "host"), [
    ("us-central1", "us-central1-aiplatform.googleapis.com"),
    ("europe-west4", "europe-west4-aiplatform.googleapis.com"),
    ("global", "aiplatform.googleapis.com"),
    ("us", "aiplatform.us.rep.googleapis.com"),
    ("eu", "aiplatform.eu.rep.googleapis.com"),
])
def test_host_follows_the_location(location: str, host: str) -> None:
    creds = google.oauth2.credentials.Credentials(token="t")
    gem = VertexProvider(GEMINI, project="p-1", location=location, credentials=creds)
    assert gem.model_url(GEMINI) == (
        f"https://{host}/v1/projects/p-1/locations/{location}/publishers/google/models/{GEMINI}"
        ":streamGenerateContent?alt=sse"
    )
    cla = VertexAnthropicProvider(CLAUDE, project="p-1", location=location, credentials=creds)
    assert cla.model_url(CLAUDE) == (
        f"https://{host}/v1/projects/p-1/locations/{location}/publishers/anthropic/models/{CLAUDE}:streamRawPredict"
    )


def test_defaults_follow_the_official_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini: location ``global`` unless GOOGLE_CLOUD_LOCATION (google-genai). Claude: CLOUD_ML_REGION
    (anthropic.AnthropicVertex), then GOOGLE_CLOUD_LOCATION, no default; ANTHROPIC_VERTEX_PROJECT_ID
    before GOOGLE_CLOUD_PROJECT."""
    assert VertexProvider(GEMINI).location == "global"
    assert VertexAnthropicProvider(CLAUDE).location is None
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "asia-northeast1")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "from-google-env")
    assert VertexProvider(GEMINI).location == "asia-northeast1"
    assert VertexProvider(GEMINI).project == "from-google-env"
    assert VertexAnthropicProvider(CLAUDE).location == "asia-northeast1"
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "from-anthropic-env")
    p = VertexAnthropicProvider(CLAUDE)
    assert (p.project, p.location) == ("from-anthropic-env", "us-east5")
    assert p.base_url == "https://us-east5-aiplatform.googleapis.com"
    assert VertexProvider(GEMINI, project="kw", location="kw-loc").project == "kw"


def test_a_tuned_endpoint_resource_name_is_used_as_it_is() -> None:
    p = VertexProvider("projects/p-1/locations/us-central1/endpoints/123", project="p-1", location="us-central1",
                       credentials=google.oauth2.credentials.Credentials(token="t"))
    assert p.model_url(p.model) == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p-1/locations/us-central1/endpoints/123"
        ":streamGenerateContent?alt=sse"
    )


@pytest.mark.parametrize(("suffix", "path"), [
    ("", "/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash"),
    ("/proxy/vertex", "/proxy/vertex/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash"),
    ("/v1", "/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash"),
    ("/v1beta1/", "/v1beta1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash"),
])
def test_base_url_replaces_scheme_and_host_and_keeps_the_path(suffix: str, path: str) -> None:
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        model = get_model(f"vertex:{GEMINI}", base_url=srv.url + suffix, project="p-1", location="us-central1",
                          credentials=google.oauth2.credentials.Credentials(token="t"))
        assert chat(model, "hi").result().text == "ok"
        assert srv.requests[0].path == path + ":streamGenerateContent?alt=sse"


# -- token refresh -----------------------------------------------------------------------------------


@pytest.mark.parametrize("expires_in", [-30.0, 60.0], ids=["expired", "expires-in-a-minute"])
@pytest.mark.parametrize("name", ["vertex", "vertex-anthropic"])
def test_an_expiring_token_is_refreshed_once_for_all_threads(name: str, expires_in: float) -> None:
    """Eight threads share one provider whose credentials hold a token that has expired (or expires
    within the five-minute margin): the token is refreshed once, while the others wait, and every
    request carries the new token."""
    creds = CountingCredentials("stale-token", expires_in, delay=0.2)
    body = gemini_text("ok") if name == "vertex" else anthropic_text("ok")
    model_id = GEMINI if name == "vertex" else CLAUDE
    with LoopbackServer([Response(body, fragment=(1, 9))]) as srv:
        provider = get_model(f"{name}:{model_id}", base_url=srv.url, project="p-1", location="us-east5",
                             credentials=creds)
        texts: list[str] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                texts.append(chat(provider, "hi").result().text)
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors and texts == ["ok"] * 8
        assert creds.refreshes == 1
        assert provider.token_fetches == 1
        assert [_auth(r) for r in srv.requests] == ["Bearer fresh-1"] * 8


def test_a_valid_token_is_used_without_refresh_and_fetched_once() -> None:
    creds = CountingCredentials("still-good", 3600.0)
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        provider = get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", credentials=creds)
        for _ in range(3):
            assert chat(provider, "hi").result().text == "ok"
        assert creds.refreshes == 0 and provider.token_fetches == 1
        assert [_auth(r) for r in srv.requests] == ["Bearer still-good"] * 3


def test_a_token_is_refreshed_before_it_expires_not_per_request() -> None:
    """Tokens that live 2 minutes are always inside the 5-minute margin, so each call refreshes; tokens
    that live an hour are refreshed once over the same calls."""
    short = CountingCredentials(None, None, lifetime=120.0)
    long = CountingCredentials(None, None, lifetime=3600.0)
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        for creds in (short, long):
            provider = get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", credentials=creds)
            for _ in range(3):
                chat(provider, "hi").result()
    assert (short.refreshes, long.refreshes) == (3, 1)
    assert [_auth(r) for r in srv.requests] == [
        "Bearer fresh-1", "Bearer fresh-2", "Bearer fresh-3", "Bearer fresh-1", "Bearer fresh-1", "Bearer fresh-1"]


def test_the_quota_project_is_sent() -> None:
    creds = CountingCredentials("t", 3600.0, quota_project="billing-proj")
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        chat(get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", credentials=creds), "hi").result()
        assert srv.requests[0].headers.get("x-goog-user-project") == "billing-proj"


def _service_account_file(tmp_path: Path, token_uri: str) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info = {
        "type": "service_account", "project_id": "sa-project-7", "private_key_id": "kid-1",
        "private_key": pem, "client_email": "vertex-test@sa-project-7.iam.gserviceaccount.com",
        "client_id": "1234", "token_uri": token_uri,
    }
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path


TOKEN_RESPONSE = Response(json.dumps({"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}).encode(),
                          content_type="application/json")


@pytest.mark.parametrize("how", ["credentials_file", "GOOGLE_APPLICATION_CREDENTIALS"])
def test_a_service_account_file_gets_a_token_and_names_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A service-account key file (given, or found by Application Default Credentials through
    GOOGLE_APPLICATION_CREDENTIALS): google-auth signs a JWT and trades it at the file's ``token_uri``
    (a loopback server here) for an access token; the project in the URL is the file's ``project_id``."""
    with LoopbackServer([TOKEN_RESPONSE]) as oauth, LoopbackServer([Response(anthropic_text("ok"))]) as srv:
        sa = _service_account_file(tmp_path, oauth.url + "/token")
        kwargs: dict[str, Any] = {}
        if how == "credentials_file":
            kwargs["credentials_file"] = sa
        else:
            monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(sa))
        provider = get_model(f"vertex-anthropic:{CLAUDE}", base_url=srv.url, location="us-east5", **kwargs)
        for _ in range(2):
            assert chat(provider, "hi").result().text == "ok"
        assert len(oauth.requests) == 1  # one token for both calls
        assert "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" in oauth.requests[0].body.decode()
        assert [_auth(r) for r in srv.requests] == [f"Bearer {TOKEN}"] * 2
        assert srv.requests[0].path == (
            f"/v1/projects/sa-project-7/locations/us-east5/publishers/anthropic/models/{CLAUDE}:streamRawPredict"
        )


# -- errors: missing credentials, project, location; refresh failures; redaction ------------------------


def test_missing_project_names_what_to_set() -> None:
    creds = google.oauth2.credentials.Credentials(token="t")
    for model, names in ((f"vertex:{GEMINI}", ["GOOGLE_CLOUD_PROJECT"]),
                         (f"vertex-anthropic:{CLAUDE}", ["GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"])):
        events = list(chat(get_model(model, credentials=creds, location="us-east5"), "hi"))
        last = events[-1]
        assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
        assert all(n in last.message for n in names) and "project=" in last.message


def test_missing_location_of_claude_names_what_to_set() -> None:
    events = list(chat(get_model(f"vertex-anthropic:{CLAUDE}", project="p-1",
                                 credentials=google.oauth2.credentials.Credentials(token="t")), "hi"))
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
    assert "CLOUD_ML_REGION" in last.message and "GOOGLE_CLOUD_LOCATION" in last.message
    assert "location=" in last.message


NO_CREDENTIALS_SCRIPT = textwrap.dedent("""
    import json, sys, time
    from hookstream import chat, get_model
    from hookstream.testing import LoopbackServer, Response
    out = {}
    t0 = time.monotonic()
    for name, model in (("vertex", "gemini-2.5-flash"), ("vertex-anthropic", "claude-sonnet-4-5@20250929")):
        last = list(chat(get_model(f"{name}:{model}", project="p-1", location="us-east5"), "hi"))[-1]
        out[name] = {"type": last.type, "code": last.code, "message": last.message}
    out["seconds"] = time.monotonic() - t0
    body = sys.argv[1].encode()
    with LoopbackServer([Response(body)]) as srv:
        result = chat(get_model("vertex:gemini-2.5-flash", base_url=srv.url, project="p-1"), "hi").result()
        out["loopback"] = {"text": result.text,
                           "authorization": [k for k in srv.requests[0].headers if k.lower() == "authorization"]}
    print(json.dumps(out))
""")


def test_no_credentials_anywhere_is_a_run_error_naming_what_to_set(tmp_path: Path) -> None:
    """A machine without Google credentials (empty HOME and gcloud folder, no
    GOOGLE_APPLICATION_CREDENTIALS, no metadata server): each provider's run ends with RUN_ERROR
    ``missing_credentials`` saying what to set, before any request; a loopback ``base_url`` is still
    called, without authorisation (replays need none)."""
    proc = subprocess.run([sys.executable, "-c", NO_CREDENTIALS_SCRIPT, gemini_text("replayed").decode()],
                          env=no_credentials_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    for name in ("vertex", "vertex-anthropic"):
        ev = out[name]
        assert (ev["type"], ev["code"]) == ("RUN_ERROR", "missing_credentials"), ev
        assert ev["message"] == (
            f"no credentials for the {name} provider: set GOOGLE_APPLICATION_CREDENTIALS to a service-account "
            "file, run `gcloud auth application-default login`, or pass credentials="
        )
    assert out["seconds"] < 10
    assert out["loopback"] == {"text": "replayed", "authorization": []}


class _RevokedCredentials(CountingCredentials):
    def refresh(self, request: Any) -> None:
        self.refreshes += 1
        raise google.auth.exceptions.RefreshError(
            "Reauthentication is needed. Please run `gcloud auth application-default login` to reauthenticate.")


def test_a_refused_refresh_is_a_run_error_and_nothing_is_sent() -> None:
    creds = _RevokedCredentials("old", -5.0)
    with LoopbackServer([Response(gemini_text("never"))]) as srv:
        events = list(chat(get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", credentials=creds), "hi"))
        assert srv.requests == []
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
    assert "Reauthentication is needed" in last.message and "gcloud auth application-default login" in last.message


@pytest.mark.parametrize("name", ["vertex", "vertex-anthropic"])
def test_an_error_echoing_the_token_is_masked(name: str) -> None:
    """Vertex AI refuses the call (Google's error shape) and the body echoes the bearer token: the
    run's error carries Google's status and message, with the token masked."""
    body = json.dumps([{"error": {"code": 403, "status": "PERMISSION_DENIED",
                                  "message": f"Permission denied for token {TOKEN} on aiplatform.endpoints.predict"}}])
    creds = CountingCredentials(TOKEN, 3600.0)
    model_id = GEMINI if name == "vertex" else CLAUDE
    with LoopbackServer([Response(body.encode(), status=403, content_type="application/json")]) as srv:
        stream = chat(get_model(f"{name}:{model_id}", base_url=srv.url, project="p-1", location="us-east5",
                                credentials=creds), "hi")
        events = list(stream)
    last = events[-1]
    assert last.type == "RUN_ERROR"
    assert last.code == "authentication_error"  # the core classes a 403 by its status
    assert TOKEN not in last.message and "***" in last.message
    assert "Permission denied" in last.message, last.message
    provider = get_model(f"{name}:{model_id}", project="p-1", location="us-east5", credentials=creds)
    assert provider.read_error(403, body.encode())[1] == "PERMISSION_DENIED"
    assert TOKEN not in repr(stream.result()) and TOKEN not in str(getattr(stream.result(), "error", ""))


def test_the_token_never_shows_in_a_repr() -> None:
    creds = CountingCredentials(TOKEN, 3600.0)
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        provider = get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", credentials=creds)
        chat(provider, "hi").result()
    assert TOKEN not in repr(provider)
    assert provider.redact(f"x {TOKEN} y") == "x *** y"


def test_bad_arguments_fail_at_construction() -> None:
    with pytest.raises(TypeError, match=r"google\.auth\.credentials\.Credentials"):
        get_model(f"vertex:{GEMINI}", credentials="not-credentials")
    with pytest.raises(TypeError, match="not both"):
        get_model(f"vertex:{GEMINI}", credentials=google.oauth2.credentials.Credentials(token="t"),
                  credentials_file="/nonexistent.json")


def test_an_unreadable_credentials_file_is_a_run_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    last = list(chat(get_model(f"vertex:{GEMINI}", project="p-1", credentials_file=missing), "hi"))[-1]
    assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
    assert "could not be loaded" in last.message and "nope.json" in last.message


def test_given_credentials_never_look_up_application_default_credentials(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given credentials never trigger Application Default Credentials lookups (no metadata probe, which
    costs seconds off Google Cloud): with no credentials file and an empty gcloud folder, a lookup
    would ask the metadata server, here a loopback server that counts what it is asked."""
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    with LoopbackServer(Response(b"{}", status=404, content_type="application/json")) as metadata, \
            LoopbackServer([Response(gemini_text("ok"))]) as srv:
        host = metadata.url.removeprefix("http://")
        monkeypatch.setenv("GCE_METADATA_HOST", host)
        monkeypatch.setenv("GCE_METADATA_IP", host)
        result = chat(get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p",
                                credentials=google.oauth2.credentials.Credentials(token="t")), "hi").result()
        probed = len(metadata.requests)
    assert result.outcome == "success" and result.text == "ok"
    assert probed == 0


def test_an_authorized_user_file_is_loaded_as_user_credentials(tmp_path: Path) -> None:
    """The file ``gcloud auth application-default login`` writes. google-auth always refreshes such
    credentials at Google's own token endpoint (it ignores a ``token_uri`` in the file), so this test
    stops before the refresh: the credentials are resolved, typed and scoped as Vertex AI needs."""
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({"type": "authorized_user", "client_id": "cid", "client_secret": "csecret",
                                "refresh_token": "rtok", "quota_project_id": "billing-2"}))
    provider = get_model(f"vertex:{GEMINI}", project="p-1", credentials_file=path)
    provider.check_api_key()
    creds = provider._auth.credentials  # white-box: the refresh itself would call Google
    assert isinstance(creds, google.oauth2.credentials.Credentials)
    assert (creds.refresh_token, creds.quota_project_id) == ("rtok", "billing-2")
    assert creds.scopes == ["https://www.googleapis.com/auth/cloud-platform"]
    assert provider.token_fetches == 0  # nothing fetched before the first request


def test_a_credentials_file_of_another_type_says_to_use_adc(tmp_path: Path) -> None:
    path = tmp_path / "wif.json"
    path.write_text(json.dumps({"type": "external_account", "audience": "//iam.googleapis.com/x"}))
    last = list(chat(get_model(f"vertex:{GEMINI}", project="p-1", credentials_file=path), "hi"))[-1]
    assert last.type == "RUN_ERROR" and last.code == "missing_credentials"
    assert "'external_account'" in last.message and "GOOGLE_APPLICATION_CREDENTIALS" in last.message


def test_an_api_key_with_a_project_addresses_the_project() -> None:
    """``api_key`` plus ``project=`` (a key bound to a service account): the project's URL with
    ``x-goog-api-key``; a project only in the environment leaves express mode in charge."""
    with LoopbackServer([Response(gemini_text("ok"))]) as srv:
        chat(get_model(f"vertex:{GEMINI}", base_url=srv.url, api_key="AIza-vertex-bound-key", project="p-9",
                       location="us-central1"), "hi").result()
        req = srv.requests[0]
        assert req.path.startswith("/v1/projects/p-9/locations/us-central1/publishers/google/models/")
        assert req.headers.get("x-goog-api-key") == "AIza-vertex-bound-key" and _auth(req) is None


def test_express_mode_ignores_an_environment_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    p = VertexProvider(GEMINI, api_key="AIza-vertex-express-key")
    assert p.model_url(GEMINI) == (
        f"https://aiplatform.googleapis.com/v1/publishers/google/models/{GEMINI}:streamGenerateContent?alt=sse")


def test_gemini_count_tokens_on_vertex_is_flat_and_signed() -> None:
    # Vertex AI publishers.models.countTokens takes contents/systemInstruction/tools/generationConfig at the
    # top level (no generateContentRequest) and answers {"totalTokens", "totalBillableCharacters"}.
    from hookstream import count_tokens

    creds = CountingCredentials("still-good", 3600.0)
    answer = Response(b'{"totalTokens": 7, "totalBillableCharacters": 20}', content_type="application/json")
    with LoopbackServer([answer]) as srv:
        provider = get_model(f"vertex:{GEMINI}", base_url=srv.url, project="p-1", location="us-central1",
                             credentials=creds)
        count = count_tokens(provider, "hi there", system="Be brief.")
        sent = srv.requests[0]
    assert (count.input_tokens, count.source) == (7, "provider")
    assert sent.path == f"/v1/projects/p-1/locations/us-central1/publishers/google/models/{GEMINI}:countTokens"
    assert set(sent.json()) == {"contents", "systemInstruction"}
    assert _auth(sent) == "Bearer still-good"


def test_claude_on_vertex_counts_locally() -> None:
    from hookstream import count_tokens

    provider = get_model(f"vertex-anthropic:{CLAUDE}", project="p-1", location="us-east5",
                         credentials=CountingCredentials("t", 3600.0))
    assert count_tokens(provider, "x" * 40).source == "estimate"
