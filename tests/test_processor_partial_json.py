"""The incremental arguments parser: same values as json.loads for every split, open strings visible,
clear errors."""

from __future__ import annotations

import json

import pytest
from hookstream._processing.partial_json import PartialJSONParser
from hookstream.errors import PartialJSONError

DOCS = [
    '{"a": 1, "b": [1, 2.5, -3e2, true, false, null, "x\\"y\\\\z\\u00e9\\ud83d\\ude00\\n"], "c": {"d": {}}, "e": []}',
    "[]", '"root"', "12", "  {\"k\" :\t\"v\" }  ", '{"emoji": "😀 ok", "cjk": "你好"}',
]


@pytest.mark.parametrize("doc", DOCS)
@pytest.mark.parametrize("step", [1, 2, 3, 5, 8])
def test_every_split_gives_json_loads_value(doc: str, step: int) -> None:
    p = PartialJSONParser()
    for i in range(0, len(doc), step):
        p.feed(doc[i : i + step])
    assert p.close() is True
    assert p.value == json.loads(doc)


def test_partial_value_and_open_string() -> None:
    p = PartialJSONParser()
    p.feed('{"path": "a.txt", "content": "line 1\\nli')
    assert p.value == {"path": "a.txt"}
    assert p.open_path == ("content",) and p.open_text() == "line 1\nli"
    p.feed('ne 2", "tags": ["x", "y')
    assert p.value == {"path": "a.txt", "content": "line 1\nline 2", "tags": ["x"]}
    assert p.open_path == ("tags", 1) and p.open_text() == "y"
    p.feed('"]}')
    assert p.open_path is None and p.close()


def test_escape_split_across_pieces() -> None:
    p = PartialJSONParser()
    for piece in ['"a\\', "u00", "e9\\ud8", "3d\\", "ude00", '"']:
        p.feed(piece)
    assert p.close() and p.value == "aé😀"


@pytest.mark.parametrize("bad", ['{"a" 1}', '{"a": tru}', "[1,]", '{"a":1}}', '{"a": "\\x"}', "{'a': 1}"])
def test_invalid_text_raises_typed_error(bad: str) -> None:
    p = PartialJSONParser()
    with pytest.raises(PartialJSONError):
        p.feed(bad)
        p.close()
    assert p.error is not None and not p.complete
    p.feed("ignored")  # stays failed, no new error


def test_incomplete_text_is_not_complete() -> None:
    p = PartialJSONParser()
    p.feed('{"a": [1, 2')
    assert p.close() is False and p.value == {"a": [1]}  # 2 is cut: it could have been 23
