"""``tool_output``: every MCP content block kind (MCP spec, "Tools" > "Tool Result") as the text the
model gets, structured content alone, and ``isError`` as :class:`MCPToolError`. Built from the SDK's
own result types, as the SDK hands them over."""

from __future__ import annotations

import base64

import pytest
from hookstream_mcp import MCPToolError, tool_output
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

PNG = base64.b64encode(b"\x89PNG" + bytes(96)).decode()


def test_text_blocks_are_joined_with_newlines() -> None:
    result = CallToolResult(content=[TextContent(text="one"), TextContent(text="two")])
    assert tool_output(result) == "one\ntwo"


def test_media_and_resources_are_described_with_type_and_size() -> None:
    result = CallToolResult(content=[
        ImageContent(data=PNG, mime_type="image/png"),
        AudioContent(data=base64.b64encode(bytes(10)).decode(), mime_type="audio/wav"),
        ResourceLink(name="report", uri="file:///tmp/report.pdf", mime_type="application/pdf"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="hello")),
        EmbeddedResource(resource=BlobResourceContents(uri="file:///b.bin", mime_type="application/octet-stream",
                                                       blob=base64.b64encode(bytes(7)).decode())),
        ImageContent(data="not base64!", mime_type="image/jpeg"),
    ])
    assert tool_output(result).split("\n") == [
        "[image: image/png, 100 bytes, not shown to the model: hookstream tool results carry text only]",
        "[audio: audio/wav, 10 bytes, not shown to the model: hookstream tool results carry text only]",
        "[resource link: report <file:///tmp/report.pdf>, application/pdf]",
        "[resource <file:///a.txt> (text/plain)]",
        "hello",
        "[resource <file:///b.bin>: application/octet-stream, 7 bytes, not shown to the model]",
        "[image: image/jpeg, invalid base64 data, not shown to the model: hookstream tool results carry text only]",
    ]


def test_structured_content_alone_is_the_output() -> None:
    result = CallToolResult(content=[], structured_content={"temperature": 18, "unit": "C"})
    assert tool_output(result) == {"temperature": 18, "unit": "C"}


def test_structured_content_beside_text_keeps_the_text() -> None:
    result = CallToolResult(content=[TextContent(text='{"temperature": 18}')], structured_content={"temperature": 18})
    assert tool_output(result) == '{"temperature": 18}'


def test_is_error_raises_with_the_tools_text() -> None:
    with pytest.raises(MCPToolError, match=r"^disk full$"):
        tool_output(CallToolResult(content=[TextContent(text="disk full")], is_error=True))
    with pytest.raises(MCPToolError, match="no text"):
        tool_output(CallToolResult(content=[], is_error=True))
