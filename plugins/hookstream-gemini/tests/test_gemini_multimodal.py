"""Beyond text with the ``gemini`` provider (issue 12): files in, sources, files and built-in tool parts
out.

Request shapes compared with the Gemini API documentation: "Image understanding" / "Document
understanding" (``{"inlineData": {"mimeType", "data"}}`` with base64 data; ``{"fileData":
{"mimeType", "fileUri"}}`` for a URI) and "Function calling" > multimodal function responses
(``functionResponse.parts: [{"inlineData": {"mimeType", "data", "displayName"}}]``). Response
metadata: ``GroundingMetadata`` (``groundingChunks[].web.{uri,title}``, ``groundingSupports[].segment``
with byte offsets and ``groundingChunkIndices``), ``CitationMetadata.citationSources``, and generated
images as ``inlineData`` parts. Every body is captured by a loopback server.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import requests
from hookstream import (
    FilePart,
    Message,
    ReasoningPart,
    StepResult,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    chat,
    get_model,
)
from hookstream.events import BaseEvent, Custom, RunFinished
from hookstream.plugin import CallContext, ModelCall, ModelRequest, StepAccumulator
from hookstream.testing import CapturedRequest, LoopbackServer, Response, check_events
from hookstream.testing.conformance import find_corpus, require_corpus
from hookstream_gemini import GeminiProvider
from hookstream_gemini.request import build_body

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
PDF = b"%PDF-1.7\n%fake test document\n"
SCREENSHOT = b"\x89PNG\r\n\x1a\n" + b"\x02" * 16
B64 = base64.b64encode
OK_BODY = b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP"}]}\r\n\r\n'
HERE = Path(__file__).resolve()


def _sse(*docs: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(d).encode() + b"\r\n\r\n" for d in docs)


def _run(body: bytes, request: ModelRequest | None = None) -> tuple[list[BaseEvent], StepResult, CapturedRequest]:
    request = request or ModelRequest(model="gemini-test", messages=[Message.user("hi")])
    with LoopbackServer([Response(body, fragment=(1, 61))], seed=4) as srv, requests.Session() as session:
        provider = GeminiProvider(request.model, base_url=srv.url, api_key="AIza-test")
        events = list(ModelCall(provider, request, CallContext("t", "r"), session))
        acc = StepAccumulator()
        for event in events:
            acc.add(event)
        check_events(events, form="call")
        return events, acc.finish(), srv.requests[0]


def _customs(events: list[BaseEvent], name: str) -> list[Any]:
    return [e.value for e in events if isinstance(e, Custom) and e.name == name]


def test_gemini_image_pdf_and_tool_result_image_request_shape() -> None:
    messages = [
        Message.user(
            "What is in these?",
            FilePart.from_bytes(PNG),
            FilePart.from_bytes(PDF, filename="report.pdf"),
            FilePart(media_type="video/mp4", url="gs://bucket/clip.mp4"),
            FilePart.from_url("https://example.com/paper.pdf"),
        ),
        Message("assistant", [ToolCallPart("c1", "screenshot", {}, provider_metadata={
            "gemini": {"functionCallId": "fc-1", "thoughtSignature": "sig"}})]),
        Message("tool", [ToolResultPart("c1", "screenshot", {"ok": True}, files=[
            FilePart.from_bytes(SCREENSHOT, filename="screen.png"),
            FilePart.from_url("https://example.com/big.png"),
        ])]),
    ]
    _, step, captured = _run(OK_BODY, ModelRequest(model="gemini-test", messages=messages))
    assert step.text == "done"
    assert captured.json()["contents"] == [
        {"role": "user", "parts": [
            {"text": "What is in these?"},
            {"inlineData": {"mimeType": "image/png", "data": B64(PNG).decode()}},
            {"inlineData": {"mimeType": "application/pdf", "data": B64(PDF).decode()}},
            {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://bucket/clip.mp4"}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/paper.pdf"}},
        ]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "screenshot", "args": {}, "id": "fc-1"}, "thoughtSignature": "sig"},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {
                "name": "screenshot", "response": {"ok": True}, "id": "fc-1",
                "parts": [{"inlineData": {"mimeType": "image/png", "data": B64(SCREENSHOT).decode(),
                                          "displayName": "screen.png"}}],
            }},
            {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/big.png"}},
        ]},
    ]


def test_gemini_file_without_media_type_is_a_value_error() -> None:
    unknown = FilePart(media_type="application/octet-stream", data=b"\x00\x01")
    with pytest.raises(ValueError, match="media type"):
        build_body(ModelRequest(model="m", messages=[Message.user("what", unknown)]))
    audio = FilePart(media_type="audio/wav", data=b"RIFF0000WAVE")
    sent = build_body(ModelRequest(model="m", messages=[Message.user("listen", audio)]))
    wav = B64(b"RIFF0000WAVE").decode()
    assert sent["contents"][0]["parts"][1] == {"inlineData": {"mimeType": "audio/wav", "data": wav}}


def test_gemini_generated_image_is_a_file_and_goes_back_with_its_signature() -> None:
    stream = _sse(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Here it is: "}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"inlineData": {"mimeType": "image/png", "data": B64(PNG).decode()}, "thoughtSignature": "img-sig"},
        ]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "done."}]}, "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "cachedContentTokenCount": 8},
         "responseId": "resp-1", "modelVersion": "gemini-image-test"},
    )
    events, step, _ = _run(stream)
    (file,) = _customs(events, "file")
    assert file == {"mediaType": "image/png", "data": B64(PNG).decode(),
                    "providerMetadata": {"gemini": {"thoughtSignature": "img-sig"}}}
    assert step.text == "Here it is: done." and step.usage.cached_input_tokens == 8
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert getattr(finished, "response_id", "resp-1") == "resp-1"

    # The part in history (what the core's accumulator builds from the file event) goes back as sent.
    image = FilePart("image/png", data=PNG, provider_metadata={"gemini": {"thoughtSignature": "img-sig"}})
    history = Message("assistant", [TextPart("Here it is: "), image, TextPart("done.")])
    sent = build_body(ModelRequest(model="m", messages=[Message.user("draw"), history, Message.user("again")]))
    assert sent["contents"][1]["parts"] == [
        {"text": "Here it is: "},
        {"inlineData": {"mimeType": "image/png", "data": B64(PNG).decode()}, "thoughtSignature": "img-sig"},
        {"text": "done."},
    ]


def test_gemini_grounding_and_citation_metadata_become_sources() -> None:
    text = "Café au lait is coffee with milk."  # "é" is two bytes: offsets are bytes on the wire
    seg_bytes = len("Café au lait".encode())
    stream = _sse(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]},
        {"candidates": [{
            "content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": "STOP",
            "groundingMetadata": {
                "groundingChunks": [
                    {"web": {"uri": "https://a.example/cafe", "title": "a.example"}},
                    {"web": {"uri": "https://b.example/milk", "title": "b.example"}},
                    {"web": {"uri": "https://c.example/unused", "title": "c.example"}},
                ],
                "groundingSupports": [
                    {"segment": {"endIndex": seg_bytes, "text": "Café au lait"}, "groundingChunkIndices": [0, 1]},
                ],
                "webSearchQueries": ["cafe au lait"],
            },
            "citationMetadata": {"citationSources": [
                {"startIndex": seg_bytes + 4, "endIndex": len(text.encode()), "uri": "https://d.example/book",
                 "license": "mit"},
            ]},
        }]},
    )
    events, step, _ = _run(stream)
    sources = _customs(events, "source")
    assert [(s["url"], s.get("startIndex"), s.get("endIndex"), s.get("citedText")) for s in sources] == [
        ("https://a.example/cafe", 0, 12, "Café au lait"),
        ("https://b.example/milk", 0, 12, "Café au lait"),
        ("https://c.example/unused", None, None, None),
        ("https://d.example/book", 16, len(text), None),
    ]
    assert step.text[0:12] == "Café au lait" and step.text[16:] == "coffee with milk."
    assert sources[0]["title"] == "a.example" and sources[0]["sourceType"] == "url"
    assert sources[0]["providerMetadata"]["gemini"]["groundingChunkIndex"] == 0
    assert sources[3]["providerMetadata"] == {"gemini": {"citationSource": {
        "startIndex": seg_bytes + 4, "endIndex": len(text.encode()), "uri": "https://d.example/book",
        "license": "mit"}}}


def test_gemini_unknown_part_is_raw_and_counted() -> None:
    stream = _sse({"candidates": [{"content": {"role": "model", "parts": [
        {"futurePart": {"x": 1}}, {"text": "ok"}]}, "finishReason": "STOP"}]})
    events, step, _ = _run(stream)
    raw = [e for e in events if type(e).__name__ == "Raw"]
    assert step.text == "ok" and len(raw) == 1 and step.unknown_events == 1


# -- recordings ------------------------------------------------------------------------------------

def _recording(name: str) -> Path:
    corpus = find_corpus(HERE, "provider-streams-external") or require_corpus(HERE, "provider-streams-external")
    path = corpus / f"{name}.sse"
    assert path.exists(), f"recording {name} missing from {corpus}"
    return path


def _docs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("data:")]


def test_gemini_recorded_grounding_becomes_sources() -> None:
    path = _recording("gemini__pydantic-ai__url-context-builtin-json")
    grounding = [c["groundingMetadata"] for d in _docs(path) for c in d.get("candidates", [])
                 if "groundingMetadata" in c]
    (meta,) = grounding
    chunks = meta["groundingChunks"]
    events, step, _ = _run(path.read_bytes())
    sources = _customs(events, "source")
    assert [s["url"] for s in sources] == [c["web"]["uri"] for c in chunks]
    assert [s.get("title") for s in sources] == [c["web"].get("title") for c in chunks]
    (support,) = meta["groundingSupports"]
    for s in sources:
        assert s["citedText"] == support["segment"]["text"]
        assert step.text[s["startIndex"]:s["endIndex"]] == support["segment"]["text"]


@pytest.mark.parametrize(
    "name", ["gemini__pydantic-ai__url-context-builtin-json", "gemini__pydantic-ai__code-execution-parts"]
)
def test_gemini_recorded_builtin_tool_parts_round_trip(name: str) -> None:
    path = _recording(name)
    server_keys = {"executableCode", "codeExecutionResult", "toolCall", "toolResponse"}
    recorded = [p for d in _docs(path) for c in d.get("candidates", [])
                for p in c.get("content", {}).get("parts", []) if server_keys.intersection(p)]
    assert recorded, "the recording holds built-in tool parts"
    _, step, _ = _run(path.read_bytes())
    kept = [p for p in step.message.parts if isinstance(p, ReasoningPart)
            and "part" in ((p.provider_metadata or {}).get("gemini") or {})]
    assert len(kept) == len(recorded)
    sent = build_body(ModelRequest(model="m", messages=[Message.user("q"), step.message, Message.user("more")]))
    model_parts = sent["contents"][1]["parts"]
    assert [p for p in model_parts if server_keys.intersection(p)] == recorded
    assert "".join(p.get("text", "") for p in model_parts if "thought" not in p) == step.text


def test_gemini_engine_sends_builtin_tool_parts_back_with_the_function_response() -> None:
    """Through the agent loop: a Gemini 3 built-in search (``toolCall`` / ``toolResponse``) and a
    function call in one answer; the second request repeats the built-in parts verbatim, in place."""
    tool_call = {"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {"queries": ["oslo weather"]}, "id": "t1"},
                 "thoughtSignature": "sig-a"}
    tool_response = {"toolResponse": {"toolType": "GOOGLE_SEARCH_WEB", "response": {"ok": True}, "id": "t1"},
                     "thoughtSignature": "sig-b"}
    first = _sse(
        {"candidates": [{"content": {"role": "model", "parts": [tool_call]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [tool_response]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "lookup", "args": {"city": "Oslo"}, "id": "fc-9"}}]},
            "finishReason": "STOP"}]},
    )

    def lookup(city: str) -> str:
        """Look a city up."""
        return f"{city}: sunny"

    with LoopbackServer([Response(first), Response(OK_BODY)]) as srv:
        provider = get_model("gemini:gemini-test", base_url=srv.url, api_key="AIza-test")
        result = chat(provider, "Weather?", tools=[lookup]).result()
        assert result.text.endswith("done")
        second = srv.requests[1].json()
    assert second["contents"][1] == {"role": "model", "parts": [
        tool_call,
        tool_response,
        {"functionCall": {"name": "lookup", "args": {"city": "Oslo"}, "id": "fc-9"}},
    ]}
    assert second["contents"][2]["parts"][0]["functionResponse"]["id"] == "fc-9"
