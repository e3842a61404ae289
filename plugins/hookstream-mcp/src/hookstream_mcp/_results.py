"""An MCP ``CallToolResult`` as a hookstream tool output (the JSON value the model receives).

MCP spec, "Server Features" > "Tools" > "Tool Result": ``content`` is a list of text, image, audio,
resource-link and embedded-resource blocks; ``structuredContent`` is an optional JSON value (the spec
asks servers to repeat it as text); ``isError`` marks a failure the model should see.

hookstream's tool results carry JSON (text, in practice) only: there is no image part for a tool
result yet. So an image or audio block becomes a one-line description with its MIME type and size,
and a binary resource likewise; the model learns that the tool produced one and what it was, not its
pixels. Text blocks are passed verbatim, joined with newlines.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any

from ._errors import MCPToolError

__all__ = ["describe_block", "tool_output"]


def _decoded_size(data: str) -> int | None:
    """Bytes that base64 ``data`` decodes to; None when it is not valid base64."""
    try:
        return len(b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def _size(data: str) -> str:
    size = _decoded_size(data)
    return f"{size} bytes" if size is not None else "invalid base64 data"


def describe_block(block: Any) -> str:
    """One content block as text: a text block's text; for the others a bracketed line naming the kind,
    MIME type and size (``[image: image/png, 1234 bytes, not shown to the model: hookstream tool results
    carry text only]``) or the resource's URI."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return (f"[{kind}: {block.mime_type}, {_size(block.data)}, not shown to the model: "
                "hookstream tool results carry text only]")
    if kind == "resource_link":
        mime = f", {block.mime_type}" if getattr(block, "mime_type", None) else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]"
    if kind == "resource":
        res = block.resource
        mime = res.mime_type or "unknown type"
        if getattr(res, "text", None) is not None:
            return f"[resource <{res.uri}> ({mime})]\n{res.text}"
        return f"[resource <{res.uri}>: {mime}, {_size(res.blob)}, not shown to the model]"
    return f"[{kind or type(block).__name__} content block, not shown to the model]"


def tool_output(result: Any) -> Any:
    """The output for a ``CallToolResult``: its content blocks as text (see :func:`describe_block`),
    or its ``structuredContent`` when there are no content blocks. Raises :class:`MCPToolError` with
    that text when ``isError`` is set, so the engine gives the model an error result."""
    blocks = list(result.content or ())
    if not blocks and result.structured_content is not None:
        output: Any = result.structured_content
    else:
        output = "\n".join(describe_block(b) for b in blocks)
    if result.is_error:
        text = output if isinstance(output, str) else repr(output)
        raise MCPToolError(text or "the tool reported an error and gave no text")
    return output
