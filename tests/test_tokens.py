"""Token counting before sending (issue 33): ``hookstream tokens`` and ``count_tokens`` against real
loopback servers answering the providers' count endpoints with the JSON their API references document,
and the ``budget`` run plugin ending a tool loop before a request that would pass its limit."""

from __future__ import annotations

import json
from collections.abc import Iterator

import hookstream
import pytest
from hookstream import Message, count_tokens
from hookstream.errors import BudgetExceededError, NotFoundError, UnknownModelError
from hookstream.testing import LoopbackServer, Response, run_cli
from hookstream.testing.provider_bodies import final_stream, provider_stream

# The answers the API references show: Anthropic "Count tokens in a Message" -> {"input_tokens": N};
# Gemini models.countTokens -> {"totalTokens": N, ...}. Written from the docs, not recorded.
ANTHROPIC_ANSWER = json.dumps({"input_tokens": 2095}).encode()
GEMINI_ANSWER = json.dumps({"totalTokens": 31,
                            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}]}).encode()


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status=status, content_type="application/json")


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[LoopbackServer]:
    with LoopbackServer([_json(ANTHROPIC_ANSWER)]) as srv:
        yield srv


@pytest.fixture(scope="module")
def gemini_server() -> Iterator[LoopbackServer]:
    with LoopbackServer([_json(GEMINI_ANSWER)]) as srv:
        yield srv


def test_cli_prints_anthropic_count_endpoint_answer(anthropic_server: LoopbackServer) -> None:
    before = len(anthropic_server.requests)
    result = run_cli(["tokens", "Hello, Claude", "--model", "anthropic:claude-sonnet-4-5",
                      "--base-url", anthropic_server.url, "--json"], env={"ANTHROPIC_API_KEY": "sk-test"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"input_tokens": 2095, "source": "provider",
                                         "model": "anthropic:claude-sonnet-4-5"}
    sent = anthropic_server.requests[before]
    assert sent.path == "/v1/messages/count_tokens"
    body = sent.json()
    # The Messages body less what the count endpoint does not take.
    assert body == {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Hello, Claude"}]}]} or body["messages"][0]["role"] == "user"
    assert "stream" not in body and "max_tokens" not in body
    assert sent.headers.get("x-api-key") == "sk-test"


def test_count_tokens_sends_system_and_tools_to_anthropic(anthropic_server: LoopbackServer) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    before = len(anthropic_server.requests)
    count = count_tokens("anthropic:claude-sonnet-4-5", [Message.user("Weather in Paris?")], tools=[get_weather],
                         system="Be brief.", base_url=anthropic_server.url, api_key="sk-test")
    assert count == hookstream.TokenCount(2095, "provider", "anthropic:claude-sonnet-4-5")
    body = anthropic_server.requests[before].json()
    assert body["system"] == "Be brief."
    assert [t["name"] for t in body["tools"]] == ["get_weather"]


def test_cli_prints_gemini_count_tokens_answer(gemini_server: LoopbackServer) -> None:
    before = len(gemini_server.requests)
    result = run_cli(["tokens", "-", "--model", "gemini:gemini-2.5-flash", "--base-url", gemini_server.url,
                      "--json"], input="The quick brown fox jumps over the lazy dog.",
                     env={"GEMINI_API_KEY": "g-test"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["input_tokens"] == 31
    assert json.loads(result.output)["source"] == "provider"
    sent = gemini_server.requests[before]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:countTokens"
    request = sent.json()["generateContentRequest"]
    assert request["model"] == "models/gemini-2.5-flash"
    assert request["contents"][0]["parts"][0]["text"].startswith("The quick brown fox")


def test_openai_compatible_server_without_endpoint_gives_an_estimate() -> None:
    # The Chat Completions provider has no count endpoint: nothing is sent, the count says it is local.
    with LoopbackServer([_json(b"{}", status=500)]) as srv:
        result = run_cli(["tokens", "x" * 400, "--model", "openai:local-llama", "--base-url", srv.url + "/v1",
                          "--json"])
        assert srv.requests == []
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"input_tokens": 100, "source": "estimate", "model": "openai:local-llama"}


def test_responses_server_answering_404_is_counted_locally() -> None:
    # An OpenAI-compatible Responses server without /responses/input_tokens: documented fallback.
    with LoopbackServer([_json(b'{"error": {"message": "no such route", "type": "not_found"}}', 404)]) as srv:
        count = count_tokens("openai-responses:local-llama", "x" * 40, base_url=srv.url + "/v1", api_key="k")
        assert [r.path for r in srv.requests] == ["/v1/responses/input_tokens"]
    assert (count.input_tokens, count.source) == (10, "estimate")


def test_provider_http_error_is_typed() -> None:
    with LoopbackServer([_json(b'{"type": "error", "error": {"type": "permission_error", "message": "nope"}}',
                               403)]) as srv:
        with pytest.raises(hookstream.errors.AuthenticationError):
            count_tokens("anthropic:claude-sonnet-4-5", "hi", base_url=srv.url, api_key="k")
    assert not issubclass(hookstream.errors.AuthenticationError, NotFoundError)


def test_unknown_model_and_provider_are_typed() -> None:
    with pytest.raises(UnknownModelError) as info:
        count_tokens("no-such-model-or-alias", "hi")
    assert info.value.code == "unknown_model"
    with pytest.raises(hookstream.errors.UnknownPluginError):
        count_tokens("nosuchprovider:m", "hi")


# -- budgets before sending -------------------------------------------------------------------------


def test_budget_ends_tool_loop_before_the_request_that_passes_max_input_tokens() -> None:
    first = provider_stream("openai", text="", reasoning="", tool_name="fetch", tool_args={"page": "1"})
    with LoopbackServer([Response(b"".join(first.events)), Response(b"".join(final_stream("openai").events))]) as srv:
        def fetch(page: str) -> str:
            """A long page."""
            return "lorem ipsum " * 500  # 6000 characters: about 1500 tokens by the estimate

        model = hookstream.get_model("openai:local-llama", base_url=srv.url + "/v1", api_key="k")
        stream = hookstream.chat(model, "Read page 1", tools=[fetch],
                                 plugins=[("budget", {"max_input_tokens": 500})])
        events = list(stream)
        result = stream.result()
        assert len(srv.requests) == 1  # the second request was never sent
    assert isinstance(result.error, BudgetExceededError)
    assert (result.error.code, result.error.limit, result.error.value, result.error.step) == (
        "budget_exceeded", "max_input_tokens", 500, 2)
    assert result.error.count > 500
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "budget_exceeded"
    # The messages are kept whole: the call and its result, ready to resume with a larger budget.
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert result.messages[-1].tool_results[0].output.startswith("lorem ipsum")


def test_budget_without_limits_changes_nothing() -> None:
    with LoopbackServer([Response(b"".join(final_stream("openai").events))]) as srv:
        model = hookstream.get_model("openai:local-llama", base_url=srv.url + "/v1", api_key="k")
        result = hookstream.chat(model, "hi", plugins=["budget"]).result()
    assert result.error is None and result.text


def test_budget_refuses_bad_limits() -> None:
    with pytest.raises(TypeError):
        hookstream.chat("openai:m", "hi", plugins=[("budget", {"max_input_tokens": -1})])


def test_budget_ends_run_before_the_request_that_passes_max_cost_usd() -> None:
    # Step 1 is priced from its usage (genai-prices); step 2's request would carry ~1500 input tokens of
    # gpt-4o at its list price on top: more than the budget, so it is never sent.
    first = provider_stream("openai", text="", reasoning="", tool_name="fetch", tool_args={"page": "1"})
    with LoopbackServer([Response(b"".join(first.events)), Response(b"".join(final_stream("openai").events))]) as srv:
        def fetch(page: str) -> str:
            """A long page."""
            return "lorem ipsum " * 500

        model = hookstream.get_model("openai:gpt-4o", base_url=srv.url + "/v1", api_key="k")
        result = hookstream.chat(model, "Read page 1", tools=[fetch],
                                 plugins=[("budget", {"max_cost_usd": 0.001})]).result()
        assert len(srv.requests) == 1
    assert result.steps[0].usage is not None and result.steps[0].usage.cost is not None
    assert isinstance(result.error, BudgetExceededError)
    assert (result.error.limit, result.error.value, result.error.step) == ("max_cost_usd", 0.001, 2)
    assert result.error.count > 0.001
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]


def test_tiktoken_counts_openai_models_or_says_it_could_not() -> None:
    # With hookstream[tokens] installed, OpenAI models are counted by tiktoken; where its BPE file cannot be
    # downloaded (offline, as on this project's test machines), the count is the estimate and says so.
    tiktoken = pytest.importorskip("tiktoken")
    count = count_tokens("openai:gpt-4o", "hello world", base_url="http://127.0.0.1:9/v1")
    if count.source == "tokenizer":
        enc = tiktoken.encoding_for_model("gpt-4o")
        assert count.input_tokens == 3 + 3 + len(enc.encode("user")) + len(enc.encode("hello world"))
    else:
        assert (count.source, count.input_tokens) == ("estimate", 2)


def test_chat_command_takes_the_budget_limits() -> None:
    with LoopbackServer([Response(b"".join(final_stream("openai").events))]) as srv:
        result = run_cli(["chat", "Summarise the report in three words", "--model", "openai:local-llama",
                          "--base-url", srv.url + "/v1", "--max-input-tokens", "2"], env={"OPENAI_API_KEY": "k"})
        assert srv.requests == []
    assert result.exit_code != 0
    assert "budget_exceeded" in result.output and "max_input_tokens" in result.output


def test_budget_may_count_with_the_provider_endpoint() -> None:
    # count="provider": the count endpoint answers first; over the limit, the Messages call is never made.
    with LoopbackServer([_json(json.dumps({"input_tokens": 9000}).encode())]) as srv:
        model = hookstream.get_model("anthropic:claude-sonnet-4-5", base_url=srv.url, api_key="k")
        result = hookstream.chat(model, "hi", plugins=[("budget", {"max_input_tokens": 8000,
                                                                   "count": "provider"})]).result()
        assert [r.path for r in srv.requests] == ["/v1/messages/count_tokens"]
    assert isinstance(result.error, BudgetExceededError) and result.error.count == 9000
    assert [m.role for m in result.messages] == ["user"]


def test_cli_prints_text_and_typed_errors(anthropic_server: LoopbackServer) -> None:
    ok = run_cli(["tokens", "hi", "--model", "anthropic:claude-sonnet-4-5", "--base-url", anthropic_server.url],
                 env={"ANTHROPIC_API_KEY": "sk-test"})
    assert (ok.exit_code, ok.output) == (0, "2095 tokens (provider)\n")
    refused = _json(b'{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}',
                    401)
    with LoopbackServer([refused]) as srv:
        bad = run_cli(["tokens", "hi", "--model", "anthropic:claude-sonnet-4-5", "--base-url", srv.url],
                      env={"ANTHROPIC_API_KEY": "sk-secret-value-123"})
    assert bad.exit_code == 1
    assert "HTTP 401: invalid x-api-key" in bad.output and "Error (authentication_error): " in bad.output
    unknown = run_cli(["tokens", "hi", "--model", "gpt-4o-typo"])
    assert unknown.exit_code == 1 and "Error (unknown_model): " in unknown.output
