"""Wrong types are refused where the value is built, not deep inside an adapter later (issue 24)."""

from __future__ import annotations

from typing import Any

import pytest
from hookstream import FilePart, Message, TextPart, ToolCallPart, ToolResultPart


@pytest.mark.parametrize("build", [
    lambda: FilePart("image/png", data="iVBORw0KGgo="),          # base64 text instead of bytes
    lambda: FilePart(b"image/png", data=b"x"),                    # media type as bytes
    lambda: TextPart(None),
    lambda: TextPart(b"bytes"),
    lambda: ToolCallPart("id", "name", '{"a": 1}'),               # arguments as JSON text, not a dict
    lambda: ToolCallPart(1, "name", {}),
    lambda: ToolResultPart("id", "name", "out", is_error="yes"),
    lambda: Message("user", TextPart("not a list")),
    lambda: Message("user", [], id=5),
])
def test_wrong_field_types_raise_type_error_at_construction(build: Any) -> None:
    with pytest.raises(TypeError) as info:
        build()
    assert "iVBORw0KGgo" not in str(info.value)  # the value itself is never echoed


def test_unknown_role_and_the_right_types() -> None:
    with pytest.raises(ValueError):
        Message("robot", [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="from_data_url"):
        FilePart("image/png", data="data:image/png;base64,AAAA")  # type: ignore[arg-type]
    assert FilePart.from_data_url("data:image/png;base64,AAAA").data == b"\x00\x00\x00"
    Message("assistant", [TextPart("hi"), ToolCallPart("c1", "f", None, "{bad")])
