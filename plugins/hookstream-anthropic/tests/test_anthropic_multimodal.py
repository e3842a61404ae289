"""Beyond text with the ``anthropic`` provider (issue 12): files in, sources and server-tool blocks out.

Request shapes compared with the Anthropic documentation examples: "Vision" (``{"type": "image",
"source": {"type": "base64", "media_type", "data"}}`` and ``{"type": "url", "url"}``), "PDF support"
(``{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data"}}`` or a
``url`` source), "Citations" (plain text documents: ``{"type": "text", "media_type": "text/plain",
"data"}``), "Tool use" (``tool_result`` ``content`` as a list of ``text`` and ``image`` blocks) and
"Prompt caching" (``cache_control: {"type": "ephemeral"}`` on system, tool and message blocks).
Every body is captured by a loopback server. Recordings are read in place from ``../shared``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from anthropic_sse_helpers import block_start, block_stop, body, delta, message_end, message_start, run_call, text_block
from hookstream import (
    FilePart,
    Message,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    chat,
    get_model,
)
from hookstream.events import Custom, ToolCallEnd, to_json
from hookstream.plugin import ModelRequest, ToolSpec
from hookstream.testing import LoopbackServer, Response
from hookstream.testing.conformance import find_corpus, require_corpus
from hookstream_anthropic import AnthropicProvider
from hookstream_anthropic.stream import source_for_citation

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
PDF = b"%PDF-1.7\n%fake test document\n"
SCREENSHOT = b"\x89PNG\r\n\x1a\n" + b"\x01" * 16
B64 = base64.b64encode

_OK = body([message_start(), *text_block(0, "ok"), *message_end("end_turn")])
SHOT = ToolSpec("screenshot", "Take a screenshot.", {"type": "object", "properties": {}})

HERE = Path(__file__).resolve()


def _conversation() -> list[Message]:
    return [
        Message.user(
            "What is in these?",
            FilePart.from_bytes(PNG),
            FilePart.from_bytes(PDF, filename="report.pdf"),
            FilePart.from_url("https://example.com/cat.jpg"),
            FilePart.from_url("https://example.com/paper.pdf"),
            FilePart.from_bytes(b"plain notes", media_type="text/plain", filename="notes.txt"),
        ),
        Message("assistant", [TextPart("Let me look."), ToolCallPart("toolu_1", "screenshot", {})]),
        Message("tool", [ToolResultPart("toolu_1", "screenshot", "the screen",
                                        files=[FilePart.from_bytes(SCREENSHOT)])]),
    ]


def test_anthropic_image_pdf_and_tool_result_image_request_shape() -> None:
    request = ModelRequest(model="claude-test", messages=_conversation(), tools=[SHOT])
    _, step, captured, _ = run_call(_OK, request)
    assert step.error is None
    sent = captured[0].json()
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64(PNG).decode()}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": B64(PDF).decode()},
                    "title": "report.pdf",
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/paper.pdf"}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"},
                    "title": "notes.txt",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [
                        {"type": "text", "text": "the screen"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": B64(SCREENSHOT).decode()},
                        },
                    ],
                    "is_error": False,
                }
            ],
        },
    ]


@pytest.mark.parametrize(
    ("part", "match"),
    [
        (FilePart(media_type="audio/wav", data=b"RIFF0000WAVE"), "audio"),
        (FilePart(media_type="image/tiff", data=b"II*\x00"), "JPEG, PNG, GIF and WebP"),
        (FilePart(media_type="text/plain", url="https://example.com/a.txt"), "only PDF documents by URL"),
        (FilePart(media_type="application/zip", data=b"PK"), "cannot take"),
    ],
)
def test_anthropic_file_it_cannot_take_is_a_value_error_before_sending(part: FilePart, match: str) -> None:
    provider = AnthropicProvider("m", api_key="k")
    with pytest.raises(ValueError, match=match):
        provider.build_request(ModelRequest(model="m", messages=[Message.user("listen", part)]))
    in_tool = Message("tool", [ToolResultPart("t", "x", "out", files=[part])])
    with pytest.raises(ValueError, match=match):
        provider.build_request(ModelRequest(model="m", messages=[Message.user("q"), in_tool]))


def test_anthropic_cache_breakpoints_on_system_tools_messages_and_parts() -> None:
    provider = AnthropicProvider("m", api_key="k")
    pinned = {"anthropic": {"cache_control": {"type": "ephemeral", "ttl": "1h"}}}
    messages = [
        Message.system("Long instructions."),
        Message("user", [TextPart("A long document.", provider_metadata=pinned), TextPart("Question?")]),
    ]
    sent = provider.build_request(
        ModelRequest(model="m", messages=messages, tools=[SHOT],
                     options={"anthropic_cache": {"system": True, "tools": True, "messages": True}})
    ).json
    assert "anthropic_cache" not in sent
    assert sent["system"] == [{"type": "text", "text": "Long instructions.", "cache_control": {"type": "ephemeral"}}]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][0]["content"] == [
        {"type": "text", "text": "A long document.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "Question?", "cache_control": {"type": "ephemeral"}},
    ]
    plain = provider.build_request(ModelRequest(model="m", messages=[Message.system("s"), Message.user("q")])).json
    assert plain["system"] == "s" and "cache_control" not in json.dumps(plain)
    with pytest.raises(ValueError, match="anthropic_cache"):
        provider.build_request(ModelRequest(model="m", messages=messages, options={"anthropic_cache": {"tool": 1}}))


def test_anthropic_document_citations_option_is_copied() -> None:
    provider = AnthropicProvider("m", api_key="k")
    doc = FilePart.from_bytes(PDF, filename="r.pdf")
    doc.provider_metadata = {"anthropic": {"citations": {"enabled": True}, "context": "Q3", "title": "Report"}}
    sent = provider.build_request(ModelRequest(model="m", messages=[Message.user("cite", doc)])).json
    block = sent["messages"][0]["content"][1]
    assert (block["title"], block["context"], block["citations"]) == ("Report", "Q3", {"enabled": True})


def test_anthropic_cache_read_and_write_tokens() -> None:
    stream = body([
        message_start(input_tokens=5, cache_read_input_tokens=1000, cache_creation_input_tokens=200),
        *text_block(0, "ok"),
        *message_end("end_turn"),
    ])
    _, step, _, _ = run_call(stream)
    assert step.usage.cached_input_tokens == 1000
    assert step.usage.input_tokens == 1205
    assert getattr(step.usage, "cache_write_tokens", 200) == 200  # a core whose Usage has the field fills it


def test_anthropic_tool_call_end_always_carries_input() -> None:
    stream = body([
        message_start(),
        block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"x": '}),
        delta(0, {"type": "input_json_delta", "partial_json": "1}"}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_b", "name": "g", "input": {}}),
        block_stop(1),
        *message_end("tool_use"),
    ])
    events, step, _, _ = run_call(stream)
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    # Streamed arguments are left to consumers as text (parsed once each); a block with none carries {}.
    assert [e.input for e in ends] == [None, {}]
    assert [json.loads(to_json(e))["input"] for e in ends] == [{"x": 1}, {}]
    assert [c.arguments for c in step.tool_calls] == [{"x": 1}, {}]


def test_anthropic_unknown_event_is_raw_and_counted() -> None:
    stream = body([
        message_start(),
        {"type": "future_event", "payload": 1},
        *text_block(0, "ok"),
        delta(0, {"type": "future_delta", "x": 1}),
        *message_end("end_turn"),
    ])
    events, step, _, _ = run_call(stream)
    assert step.text == "ok"
    raw = [e for e in events if type(e).__name__ == "Raw"]
    assert len(raw) == 2 and step.unknown_events == 2


def test_anthropic_citation_kinds_map_to_sources() -> None:
    web = source_for_citation(
        {"type": "web_search_result_location", "url": "https://a.example", "title": "A", "cited_text": "q",
         "encrypted_index": "E"}, 3, 9)
    assert (web.source_type, web.url, web.title, web.cited_text, web.start_index, web.end_index) == (
        "url", "https://a.example", "A", "q", 3, 9)
    assert web.provider_metadata == {"anthropic": {"type": "web_search_result_location", "url": "https://a.example",
                                                    "title": "A", "cited_text": "q", "encrypted_index": "E"}}
    char = source_for_citation({"type": "char_location", "document_index": 1, "document_title": "Doc",
                                "start_char_index": 0, "end_char_index": 4, "cited_text": "abcd"})
    assert (char.source_type, char.document_index, char.title, char.url) == ("document", 1, "Doc", None)
    page = source_for_citation({"type": "page_location", "document_index": 0, "start_page_number": 2,
                                "end_page_number": 3, "cited_text": "p"})
    assert (page.source_type, page.document_index) == ("document", 0)


def test_anthropic_document_citation_stream_gives_source_with_span() -> None:
    citation = {"type": "char_location", "cited_text": "grass is green", "document_index": 0,
                "document_title": "Facts", "start_char_index": 0, "end_char_index": 14}
    stream = body([
        message_start(),
        *text_block(0, "According to the document, "),
        block_start(1, {"type": "text", "text": "", "citations": []}),
        delta(1, {"type": "citations_delta", "citation": citation}),
        delta(1, {"type": "text_delta", "text": "the grass is green"}),
        block_stop(1),
        *message_end("end_turn"),
    ])
    events, step, _, _ = run_call(stream)
    (src,) = [e.value for e in events if isinstance(e, Custom) and e.name == "source"]
    assert src["sourceType"] == "document" and src["documentIndex"] == 0 and src["title"] == "Facts"
    assert step.text[src["startIndex"]:src["endIndex"]] == "the grass is green"
    assert src["providerMetadata"] == {"anthropic": citation}


# -- recordings ------------------------------------------------------------------------------------

def _sse_docs(path: Path) -> list[dict[str, Any]]:
    docs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("data:"):
            docs.append(json.loads(line[5:]))
    return docs


def _recorded_blocks(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(server blocks as the API would want them back, citations) from a recording's raw events."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, list[str]] = {}
    citations: list[dict[str, Any]] = []
    for doc in _sse_docs(path):
        if doc.get("type") == "content_block_start":
            blocks[doc["index"]] = doc["content_block"]
        elif doc.get("type") == "content_block_delta":
            d = doc["delta"]
            if d["type"] == "input_json_delta":
                inputs.setdefault(doc["index"], []).append(d["partial_json"])
            elif d["type"] == "citations_delta":
                citations.append(d["citation"])
    server = []
    for index in sorted(blocks):
        block = dict(blocks[index])
        if block["type"] in ("text", "thinking", "redacted_thinking", "tool_use"):
            continue
        if "".join(inputs.get(index, [])):
            block["input"] = json.loads("".join(inputs[index]))
        server.append(block)
    return server, citations


def _recording(name: str) -> Path:
    corpus_name = "provider-streams-external" if "__" in name.split("__", 1)[1] else "provider-streams"
    corpus = find_corpus(HERE, corpus_name) or require_corpus(HERE, corpus_name)
    path = corpus / f"{name}.sse"
    assert path.exists(), f"recording {name} missing from {corpus}"
    return path


SERVER_RECORDINGS = [
    "anthropic__web-search-citations",
    "anthropic__llm-anthropic__web-search-no-ping",
    "anthropic__pydantic-ai__pause-turn-web-search",
    "anthropic__pydantic-ai__code-execution",
    "anthropic__pydantic-ai__mcp-servers",
    "anthropic__pydantic-ai__advisor-tool",
]


@pytest.mark.parametrize("name", SERVER_RECORDINGS)
def test_anthropic_recorded_server_blocks_round_trip_and_citations_become_sources(name: str) -> None:
    path = _recording(name)
    server, citations = _recorded_blocks(path)
    assert server, "the recording holds server-tool blocks"
    events, step, _, _ = run_call(path.read_bytes(), fragment=(1, 97), seed=5)
    assert step.error is None and step.tool_calls == []

    sources = [e.value for e in events if isinstance(e, Custom) and e.name == "source"]
    assert [s["providerMetadata"]["anthropic"] for s in sources] == citations
    for s, c in zip(sources, citations, strict=True):
        assert s["url"] == c.get("url") and s["title"] == c.get("title") and s["citedText"] == c["cited_text"]
        assert 0 <= s["startIndex"] < s["endIndex"] <= len(step.text)

    # The assistant message holds the blocks, and the next request sends them back verbatim, in order.
    convo = [Message.user("search"), step.message, Message.user("more")]
    _, _, captured, _ = run_call(_OK, ModelRequest(model="m", messages=convo))
    sent = captured[0].json()["messages"][1]
    assert sent["role"] == "assistant"
    kinds = {"text", "thinking", "redacted_thinking", "tool_use"}
    assert [b for b in sent["content"] if b["type"] not in kinds] == server
    assert "".join(b["text"] for b in sent["content"] if b["type"] == "text") == step.text


def test_anthropic_server_block_parts_keep_stream_order() -> None:
    _, step, _, _ = run_call(_recording("anthropic__pydantic-ai__pause-turn-web-search").read_bytes())
    parts = [p for p in step.message.parts if not isinstance(p, SourcePart)]
    server = [p for p in parts if isinstance(p, ReasoningPart) and "server_block" in p.provider_metadata["anthropic"]]
    types = [p.provider_metadata["anthropic"]["server_block"]["type"] for p in server]
    assert types.count("server_tool_use") == 11 and types.count("web_search_tool_result") == 10
    assert all(p.text == "" for p in server)


def test_anthropic_engine_sends_server_blocks_back_with_the_tool_result() -> None:
    """Through the agent loop: a web search (server tool) then a client tool call in one answer; the
    second model request repeats the server blocks, in place, before the ``tool_use``."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://w.example", "title": "W", "encrypted_content": "E1",
         "page_age": None}]}
    first = body([
        message_start(),
        block_start(0, search),
        delta(0, {"type": "input_json_delta", "partial_json": '{"query": "weather"}'}),
        block_stop(0),
        block_start(1, found),
        block_stop(1),
        *text_block(2, "Checking."),
        block_start(3, {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {}}),
        delta(3, {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}),
        block_stop(3),
        *message_end("tool_use"),
    ])

    def lookup(city: str) -> str:
        """Look a city up."""
        return f"{city}: sunny"

    with LoopbackServer([Response(first), Response(_OK)]) as srv:
        provider = get_model("anthropic:claude-test", base_url=srv.url, api_key="k")
        result = chat(provider, "Weather?", tools=[lookup]).result()
        assert result.text.endswith("ok")
        second = srv.requests[1].json()
    assert second["messages"][1] == {"role": "assistant", "content": [
        {**search, "input": {"query": "weather"}},
        found,
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"city": "Oslo"}},
    ]}
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_9"
