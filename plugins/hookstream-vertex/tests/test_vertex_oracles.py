"""Request shape against the official clients (test-only oracles): ``google.genai.Client(vertexai=True)``
and ``anthropic.AnthropicVertex`` send a call to a loopback server that records it; hookstream sends the
same call (same messages, tool, output limit, temperature) to another; the two requests must match in
URL path and query, ``Content-Type``, ``Authorization`` and the JSON body.

Differences that are legitimate, and normalised away below (each asserted, so a change shows up):

* google-genai puts ``"role": "user"`` into ``systemInstruction``; the field is a ``Content`` whose
  role Vertex AI ignores ("systemInstruction ... role is ignored"), and hookstream sends none.
* google-genai 3.6 writes a function declaration's ``parameters_json_schema`` in snake case; proto3
  JSON parsing (which Vertex AI's REST surface uses) accepts a field's proto name and its lowerCamelCase
  JSON name alike, and hookstream sends the documented ``parametersJsonSchema``.
* google-genai's default API version is ``v1beta1``; hookstream's is ``v1`` (Vertex AI's GA surface),
  so the oracle is asked for ``v1`` and, in a second case, hookstream for ``v1beta1``.
* ``anthropic_version``: hookstream sends ``vertex-2023-10-16``, the value Anthropic's Vertex AI
  documentation gives; the installed anthropic SDK sends its own constant (2.14.0: ``2026-10-21``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hookstream import Message, ToolCallPart, ToolResultPart, chat, get_model
from hookstream.testing import CapturedRequest, LoopbackServer, Response
from vertex_helpers import anthropic_text, gemini_text

genai = pytest.importorskip("google.genai")
genai_types = pytest.importorskip("google.genai.types")
anthropic = pytest.importorskip("anthropic")
oauth2 = pytest.importorskip("google.oauth2.credentials")

PROJECT, TOKEN = "proj-oracle-1", "tok-oracle"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOL = {"name": "get_weather", "description": "Current weather for a city", "parameters": SCHEMA}


def conversation() -> list[Message]:
    """A conversation with a tool round trip: user, assistant tool call, tool result, user."""
    return [
        Message.user("Weather in Paris?"),
        Message("assistant", [ToolCallPart("call-1", "get_weather", {"city": "Paris"})]),
        Message("tool", [ToolResultPart("call-1", "get_weather", {"temp_c": 21, "sky": "clear"})]),
        Message.user("And should I take a coat?"),
    ]


def _one(server: LoopbackServer) -> CapturedRequest:
    assert len(server.requests) == 1, [r.path for r in server.requests]
    return server.requests[0]


def _header(req: CapturedRequest, name: str) -> str | None:
    return next((v for k, v in req.headers.items() if k.lower() == name), None)


def _hookstream(model: str, body: bytes, **kwargs: Any) -> CapturedRequest:
    with LoopbackServer([Response(body)]) as srv:
        provider = get_model(model, base_url=srv.url, project=PROJECT,
                             credentials=oauth2.Credentials(token=TOKEN), **kwargs)
        result = chat(provider, conversation(), system="You are terse.", tools=[TOOL], max_tokens=256,
                      temperature=0.2).result()
        assert result.text
        return _one(srv)


# -- Gemini: google-genai ------------------------------------------------------------------------------


def _genai_contents() -> list[Any]:
    t = genai_types
    return [
        t.Content(role="user", parts=[t.Part(text="Weather in Paris?")]),
        t.Content(role="model", parts=[t.Part(function_call=t.FunctionCall(name="get_weather",
                                                                           args={"city": "Paris"}))]),
        t.Content(role="user", parts=[
            t.Part(function_response=t.FunctionResponse(name="get_weather",
                                                        response={"temp_c": 21, "sky": "clear"})),
            t.Part(text="And should I take a coat?"),
        ]),
    ]


def _genai(location: str, api_version: str | None) -> CapturedRequest:
    t = genai_types
    with LoopbackServer([Response(gemini_text("Yes."))]) as srv:
        http_options: dict[str, Any] = {"base_url": srv.url}
        if api_version:
            http_options["api_version"] = api_version
        client = genai.Client(vertexai=True, project=PROJECT, location=location,
                              credentials=oauth2.Credentials(token=TOKEN), http_options=http_options)
        config = t.GenerateContentConfig(
            system_instruction="You are terse.",
            max_output_tokens=256,
            temperature=0.2,
            tools=[t.Tool(function_declarations=[t.FunctionDeclaration(
                name="get_weather", description="Current weather for a city", parameters_json_schema=SCHEMA)])],
        )
        chunks: Iterator[Any] = client.models.generate_content_stream(
            model="gemini-2.5-flash", contents=_genai_contents(), config=config)
        assert "".join(c.text or "" for c in chunks) == "Yes."
        return _one(srv)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _normalised(body: dict[str, Any]) -> dict[str, Any]:
    """The oracle's body with the two legitimate differences of the module docstring taken out."""
    body = copy.deepcopy(body)
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        assert system.pop("role", "user") == "user"
    for tool in body.get("tools", ()):
        # Only the declaration's own keys: the JSON Schema inside is user data and stays as it is.
        tool["functionDeclarations"] = [{_camel(k): v for k, v in d.items()} for d in tool["functionDeclarations"]]
    return body


@pytest.mark.parametrize(("location", "oracle_version", "ours"), [
    ("us-central1", "v1", None),            # hookstream's default v1, oracle asked for v1
    ("global", None, "v1beta1"),            # oracle's default v1beta1, hookstream asked for it
    ("europe-west4", "v1", None),
])
def test_gemini_request_matches_google_genai(location: str, oracle_version: str | None, ours: str | None) -> None:
    oracle = _genai(location, oracle_version)
    extra = {"api_version": ours} if ours else {}
    mine = _hookstream("vertex:gemini-2.5-flash", gemini_text("Yes."), location=location, **extra)
    version = oracle_version or ours
    assert oracle.path == mine.path == (
        f"/{version}/projects/{PROJECT}/locations/{location}/publishers/google/models/gemini-2.5-flash"
        ":streamGenerateContent?alt=sse"
    )
    for name in ("content-type", "authorization"):
        assert _header(mine, name) == _header(oracle, name), name
    assert _header(mine, "authorization") == f"Bearer {TOKEN}"
    assert _header(mine, "x-goog-api-key") is None
    assert mine.json() == _normalised(oracle.json())


def test_gemini_express_mode_matches_google_genai() -> None:
    """An API key alone (Vertex AI express mode): no project or location in the path, key in
    ``x-goog-api-key``, no bearer token."""
    key = "AIza-vertex-express-test-key"
    with LoopbackServer([Response(gemini_text("Hi."))]) as srv:
        client = genai.Client(vertexai=True, api_key=key, http_options={"base_url": srv.url, "api_version": "v1"})
        assert "".join(c.text or "" for c in client.models.generate_content_stream(
            model="gemini-2.5-flash", contents="Hello")) == "Hi."
        oracle = _one(srv)
    with LoopbackServer([Response(gemini_text("Hi."))]) as srv:
        assert chat(get_model("vertex:gemini-2.5-flash", base_url=srv.url, api_key=key), "Hello").result().text == "Hi."
        mine = _one(srv)
    assert mine.path == oracle.path == "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert _header(mine, "x-goog-api-key") == _header(oracle, "x-goog-api-key") == key
    assert _header(mine, "authorization") is _header(oracle, "authorization") is None
    assert mine.json() == oracle.json()


# -- Claude: anthropic.AnthropicVertex -----------------------------------------------------------------


def _anthropic_oracle(region: str, model: str) -> CapturedRequest:
    with LoopbackServer([Response(anthropic_text("Yes."))]) as srv:
        client = anthropic.AnthropicVertex(project_id=PROJECT, region=region, access_token=TOKEN,
                                           base_url=srv.url + "/v1", max_retries=0)
        with client.messages.stream(
            model=model,
            max_tokens=256,
            # anthropic 2.14 dropped the ``temperature`` keyword; the Messages API still takes the field.
            extra_body={"temperature": 0.2},
            system="You are terse.",
            tools=[{"name": "get_weather", "description": "Current weather for a city", "input_schema": SCHEMA}],
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call-1", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call-1", "content": '{"temp_c": 21, "sky": "clear"}',
                     "is_error": False},
                    {"type": "text", "text": "And should I take a coat?"},
                ]},
            ],
        ) as stream:
            assert stream.get_final_text() == "Yes."
        return _one(srv)


@pytest.mark.parametrize("region", ["us-east5", "global", "europe-west1"])
def test_anthropic_request_matches_anthropic_vertex(region: str) -> None:
    model = "claude-sonnet-4-5@20250929"
    oracle = _anthropic_oracle(region, model)
    mine = _hookstream(f"vertex-anthropic:{model}", anthropic_text("Yes."), location=region)
    assert oracle.path == mine.path == (
        f"/v1/projects/{PROJECT}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict"
    )
    for name in ("content-type", "authorization"):
        assert _header(mine, name) == _header(oracle, name), name
    assert _header(mine, "authorization") == f"Bearer {TOKEN}"
    ours, theirs = mine.json(), oracle.json()
    assert ours.pop("anthropic_version") == "vertex-2023-10-16"
    assert isinstance(theirs.pop("anthropic_version"), str)
    assert "model" not in ours and "model" not in theirs
    assert ours == theirs
