"""Vertex ``partialArgs`` reassembly: JSONPath segments, value kinds, string pieces, bad input."""

from __future__ import annotations

import pytest
from hookstream.errors import MalformedChunkError
from hookstream_gemini.partial_args import PartialArgs, parse_json_path


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$.location", ["location"]),
        ("$.a.b[2].c", ["a", "b", 2, "c"]),
        ("$['with space']", ["with space"]),
        ('$["q\\"uote"]', ['q"uote']),
        ("$.x-y", ["x-y"]),
    ],
)
def test_gemini_json_path(path: str, segments: list[object]) -> None:
    assert parse_json_path(path) == segments


@pytest.mark.parametrize("path", ["location", "$..a", "$.a[*]", "$[?(@.a)]", "$.a["])
def test_gemini_json_path_rejects(path: str) -> None:
    with pytest.raises(MalformedChunkError):
        parse_json_path(path)


def test_gemini_partial_args_values() -> None:
    acc = PartialArgs()
    for entry in [
        {"jsonPath": "$.s", "stringValue": "He", "willContinue": True},
        {"jsonPath": "$.s", "stringValue": "llo"},
        {"jsonPath": "$.n", "numberValue": 1.5},
        {"jsonPath": "$.list[1]", "boolValue": False},
        {"jsonPath": "$.list[0]", "nullValue": "NULL_VALUE"},
        {"jsonPath": "$.empty", "stringValue": ""},
        {"jsonPath": "$.marker", "willContinue": True},
    ]:
        acc.add(entry)
    assert acc.value() == {"s": "Hello", "n": 1.5, "list": [None, False], "empty": ""}


@pytest.mark.parametrize(
    "entries",
    [
        [{"stringValue": "x"}],
        [{"jsonPath": "$.a", "stringValue": 3}],
        [{"jsonPath": "$", "stringValue": "x"}],
        [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}],
        [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a[0]", "numberValue": 2}],
    ],
)
def test_gemini_partial_args_bad_input(entries: list[dict[str, object]]) -> None:
    acc = PartialArgs()
    with pytest.raises(MalformedChunkError):
        for entry in entries:
            acc.add(entry)
        acc.value()
