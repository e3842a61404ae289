"""The ``vertex-anthropic`` body: the Anthropic adapter's Messages body, minus ``model``, plus
``anthropic_version``; Vertex AI's ``@`` model ids keep the Anthropic builder's model-dependent choices."""

from __future__ import annotations

from hookstream import Message
from hookstream.plugin import ModelRequest, OutputFormat
from hookstream_anthropic.request import build_body
from hookstream_vertex.anthropic import VERTEX_ANTHROPIC_VERSION, vertex_anthropic_body

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
          "additionalProperties": False}


def _request(model: str, **kwargs: object) -> ModelRequest:
    return ModelRequest(model=model, messages=[Message.user("hi")], max_tokens=100, **kwargs)  # type: ignore[arg-type]


def test_the_body_is_the_messages_body_without_model_with_anthropic_version() -> None:
    req = _request("claude-haiku-4-5@20251001", temperature=0.3)
    body = vertex_anthropic_body(req)
    first_party = build_body(_request("claude-haiku-4-5-20251001", temperature=0.3))
    assert next(iter(body)) == "anthropic_version" and body.pop("anthropic_version") == VERTEX_ANTHROPIC_VERSION
    assert first_party.pop("model") == "claude-haiku-4-5-20251001"
    assert body == first_party and body["stream"] is True


def test_options_may_set_another_anthropic_version() -> None:
    body = vertex_anthropic_body(_request("claude-sonnet-4@20250514", options={"anthropic_version": "vertex-x"}))
    assert body["anthropic_version"] == "vertex-x"


def test_a_vertex_model_id_gets_native_structured_output_like_its_first_party_name() -> None:
    """``claude-sonnet-4-5@20250929`` has native structured output, as ``claude-sonnet-4-5-20250929``
    does; the Anthropic builder's name rule alone would read the ``@`` id as Sonnet 4.0."""
    output = OutputFormat("answer", SCHEMA, strict=True)
    body = vertex_anthropic_body(_request("claude-sonnet-4-5@20250929", output=output))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "tools" not in body
    older = vertex_anthropic_body(_request("claude-3-5-haiku@20241022", output=output))
    assert older["tool_choice"] == {"type": "tool", "name": "answer"}
