"""The ``azure`` and ``azure-responses`` providers: real recorded Azure OpenAI streams (``recordings/``,
SOURCES.md) through a real loopback server, and the official ``openai`` SDK (``AzureOpenAI`` and the v1
``OpenAI(base_url=...)`` form Microsoft documents) as the oracle for the request each one sends."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hookstream import chat, get_model
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.conformance import Recording, check_recording, recordings
from hookstream.testing.recorded import replay_body

HERE = Path(__file__).resolve().parent
CHAT = recordings(HERE / "recordings", ("azure-openai-chat",))
RESPONSES = recordings(HERE / "recordings", ("azure-openai-responses",))
TEXT_BODY = (HERE / "recordings" / "azure-openai-chat__mirascope__v1-gpt5-mini-text-usage.sse").read_bytes()
CALLS_BODY = (HERE / "recordings" / "azure-openai-chat__mirascope__v1-gpt5-mini-parallel-tool-calls.sse").read_bytes()


def _ids(rec: Recording) -> str:
    return rec.name


def test_at_least_eight_recordings() -> None:
    assert len(CHAT) + len(RESPONSES) >= 8


@pytest.mark.parametrize("seed", (None, 1, 42))
@pytest.mark.parametrize("rec", CHAT, ids=_ids)
def test_chat_recording(rec: Recording, seed: int | None) -> None:
    fragment = (1, 41) if seed is not None else None
    assert check_recording("azure", rec, fragment=fragment, seed=seed or 0) == []


@pytest.mark.parametrize("seed", (None, 1, 42))
@pytest.mark.parametrize("rec", RESPONSES, ids=_ids)
def test_responses_recording(rec: Recording, seed: int | None) -> None:
    fragment = (1, 41) if seed is not None else None
    assert check_recording("azure-responses", rec, fragment=fragment, seed=seed or 0) == []


def test_filter_results_are_kept() -> None:
    rec = next((r for r in CHAT if "filter" in r.name), None) or (CHAT[0] if CHAT else None)
    if rec is None:
        pytest.skip("no Azure chat recording")
    events, _ = replay_body("azure", rec.body_path.read_bytes())
    azure = events[-1].metadata["azure"]  # type: ignore[attr-defined]
    assert "prompt_filter_results" in azure or "content_filter_results" in azure


def test_content_filtered_answer_is_content_filter() -> None:
    """A real Azure answer stopped by the content filter (Responses ``incomplete`` with reason
    ``content_filter``; no recorded Chat Completions one exists, see SOURCES.md) ends with finish reason
    ``content_filter``."""
    recs = [("azure-responses", r) for r in RESPONSES if "content-filter" in r.name]
    recs += [("azure", r) for r in CHAT if r.expected.get("finish_reason") == "content_filter"]
    assert recs
    for provider, rec in recs:
        _, step = replay_body(provider, rec.body_path.read_bytes())
        assert step.finish_reason == "content_filter"


# -- the request, against the openai SDK -------------------------------------------------------------


def _capture(send: Any) -> Any:
    with LoopbackServer([Response(TEXT_BODY)]) as srv:
        send(srv.url)
        return srv.requests[0]


MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of Denmark?"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a city up.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def _ours(url: str, model: str, **kw: Any) -> None:
    from hookstream import tool

    @tool
    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: x
        """
        return city

    with get_model(model, base_url=url, api_key="azure-key-1234", **kw) as provider:
        chat(provider, MESSAGES, tools=[lookup], max_steps=1, max_tokens=77).result()


def _same_body(theirs: dict[str, Any], ours: dict[str, Any]) -> None:
    # The SDK sends only what it is given; hookstream adds stream_options.include_usage (usage on the
    # last chunk, which Azure supports) and the tool schema's own keywords.
    assert ours["model"] == theirs["model"] and ours["stream"] is True
    assert ours["messages"] == theirs["messages"]
    assert [t["function"]["name"] for t in ours["tools"]] == [t["function"]["name"] for t in theirs["tools"]]
    assert ours.get("max_tokens", ours.get("max_completion_tokens")) == 77


def test_dated_api_version_request_matches_azure_openai() -> None:
    openai = pytest.importorskip("openai")

    def sdk(url: str) -> None:
        client = openai.AzureOpenAI(azure_endpoint=url, api_key="azure-key-1234", api_version="2024-10-21")
        for _ in client.chat.completions.create(model="gpt-4o-dep", messages=MESSAGES, tools=TOOLS, stream=True,
                                                max_tokens=77):
            pass

    theirs = _capture(sdk)
    ours = _capture(lambda url: _ours(url, "azure:gpt-4o-dep", api_version="2024-10-21"))
    assert ours.path == theirs.path == "/openai/deployments/gpt-4o-dep/chat/completions?api-version=2024-10-21"
    assert ours.headers["api-key"] == theirs.headers["api-key"] == "azure-key-1234"
    assert "authorization" not in {k.lower() for k in ours.headers}
    _same_body(theirs.json(), ours.json())


def test_v1_request_matches_the_documented_openai_client() -> None:
    """Microsoft's v1 form: ``OpenAI(base_url=ENDPOINT + "/openai/v1/")``. The SDK then sends the key as a
    bearer token; Azure takes either, hookstream sends ``api-key`` as for every Azure call."""
    openai = pytest.importorskip("openai")

    def sdk(url: str) -> None:
        client = openai.OpenAI(base_url=url + "/openai/v1/", api_key="azure-key-1234")
        for _ in client.chat.completions.create(model="gpt-4o-dep", messages=MESSAGES, tools=TOOLS, stream=True,
                                                max_tokens=77):
            pass

    theirs = _capture(sdk)
    ours = _capture(lambda url: _ours(url, "azure:gpt-4o-dep"))
    assert ours.path == theirs.path == "/openai/v1/chat/completions"
    _same_body(theirs.json(), ours.json())


def test_responses_request_paths() -> None:
    dated = _capture(lambda url: _ours(url, "azure-responses:o4-mini-dep", api_version="2025-04-01-preview"))
    v1 = _capture(lambda url: _ours(url, "azure-responses:o4-mini-dep"))
    assert dated.path == "/openai/responses?api-version=2025-04-01-preview"
    assert v1.path == "/openai/v1/responses"
    assert dated.json()["model"] == v1.json()["model"] == "o4-mini-dep"


def test_endpoint_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com/openai/v1/")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k" * 32)
    model = get_model("azure:dep")
    assert model.azure.endpoint == "https://res.openai.azure.com"  # type: ignore[attr-defined]
    assert "k" * 32 not in repr(model)


# -- Microsoft Entra ID ---------------------------------------------------------------------------


class _Token:
    def __init__(self, token: str, expires_on: int) -> None:
        self.token, self.expires_on = token, expires_on


class _Credential:
    """An ``azure.core`` TokenCredential stand-in: each token lives ``life`` seconds from ``now()``."""

    def __init__(self, life: float) -> None:
        self.life, self.calls, self.lock = life, 0, threading.Lock()

    def get_token(self, *scopes: str) -> _Token:
        import time

        assert scopes == ("https://cognitiveservices.azure.com/.default",)
        with self.lock:
            self.calls += 1
            return _Token(f"entra-token-{self.calls:04d}", int(time.time() + self.life))


def test_entra_token_fetched_once_for_many_threads() -> None:
    cred = _Credential(life=3600)
    n = 8
    barrier = threading.Barrier(n)
    with LoopbackServer([Response(TEXT_BODY)] * n) as srv:
        model = get_model("azure:dep", base_url=srv.url, credential=cred)

        def run() -> None:
            barrier.wait()
            assert chat(model, "hi", max_steps=1).result().error is None

        threads = [threading.Thread(target=run) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        auths = {r.headers["Authorization"] for r in srv.requests}
    assert cred.calls == 1
    assert auths == {"Bearer entra-token-0001"}


def test_entra_token_refreshed_before_expiry() -> None:
    cred = _Credential(life=120)  # inside the five-minute margin: every call needs a fresh token
    with LoopbackServer([Response(TEXT_BODY)] * 2) as srv:
        model = get_model("azure:dep", base_url=srv.url, credential=cred)
        chat(model, "hi", max_steps=1).result()
        chat(model, "hi", max_steps=1).result()
        assert [r.headers["Authorization"] for r in srv.requests] == ["Bearer entra-token-0001",
                                                                    "Bearer entra-token-0002"]


def test_token_provider_callable() -> None:
    with LoopbackServer([Response(TEXT_BODY)]) as srv:
        chat(get_model("azure:dep", base_url=srv.url, azure_ad_token_provider=lambda: "tp-token"), "hi",
             max_steps=1).result()
        assert srv.requests[0].headers["Authorization"] == "Bearer tp-token"


def test_wrong_credential_type_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="TokenCredential"):
        get_model("azure:dep", base_url="https://res.openai.azure.com", credential="not-a-credential")


def test_missing_credentials_is_a_clear_run_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)

    class Failing:
        def get_token(self, *scopes: str) -> Any:
            raise RuntimeError("secret-detail-xyz")

    result = chat(get_model("azure:dep", base_url="https://res.openai.azure.com", credential=Failing()), "hi").result()
    assert result.error is not None and result.error.code == "missing_credentials"
    assert "AZURE_OPENAI_API_KEY" in str(result.error) and "secret-detail-xyz" not in str(result.error)
    try:
        import azure.identity  # noqa: F401
    except ImportError:
        result = chat(get_model("azure:dep", base_url="https://res.openai.azure.com"), "hi").result()
        assert result.error is not None and result.error.code == "missing_credentials"


def test_missing_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    result = chat(get_model("azure:dep", api_key="k"), "hi").result()
    assert result.error is not None and result.error.code == "missing_credentials"
    assert "AZURE_OPENAI_ENDPOINT" in str(result.error)


def test_agent_loop_two_tool_calls_then_a_second_step() -> None:
    """Step 1 replays a recorded Azure answer with two parallel tool calls, step 2 a recorded Azure text
    answer; the engine runs both tools between and sends the paired history."""
    calls_body = CALLS_BODY
    from hookstream import Tool

    ran: list[str] = []
    lock = threading.Lock()

    def make(name: str) -> Tool:
        def fn(**kwargs: Any) -> str:
            with lock:
                ran.append(name)
            return "ok"

        return Tool(name, name, {"type": "object", "additionalProperties": True}, fn)

    _, first = replay_body("azure", calls_body)
    names = [c.name for c in first.tool_calls]
    with LoopbackServer([Response(calls_body, fragment=(1, 30)), Response(TEXT_BODY)]) as srv:
        stream = chat(get_model("azure:dep", base_url=srv.url, api_key="k1234"), "go",
                      tools=[make(n) for n in dict.fromkeys(names)])
        events = list(stream)
        second = srv.requests[1].json()
    check_events(events, form="run")
    assert stream.result().error is None
    assert len(names) >= 2 and sorted(ran) == sorted(names)
    assert [m["role"] for m in second["messages"]][-len(names) - 1:] == ["assistant"] + ["tool"] * len(names)
