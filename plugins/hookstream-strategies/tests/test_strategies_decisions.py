"""Each strategy's decisions and reset, without a processor."""

from __future__ import annotations

import pytest
from hookstream import ChunkStrategy
from hookstream_strategies import (
    BatchStrategy,
    CompositeStrategy,
    PunctuationStrategy,
    WordBoundaryStrategy,
)


def test_punctuation_ascii_and_cjk() -> None:
    s = PunctuationStrategy()
    assert [s.should_emit(c, c) for c in ["Hello", " world.", "a,b", "ok!", "why?", "x;", "note:"]] == [
        False, True, True, True, True, True, True]
    assert [s.should_emit(c, c) for c in ["你好", "你好。", "是，", "好！", "吗？", "甲；", "如下：", "、"]] == [  # noqa: RUF001
        False, True, True, True, True, True, True, True]
    s.reset()
    assert isinstance(s, ChunkStrategy)


def test_batch_every_n_and_reset() -> None:
    s = BatchStrategy(3)
    assert [s.should_emit("x", "x") for _ in range(7)] == [False, False, True, False, False, True, False]
    s.reset()
    assert [s.should_emit("x", "x") for _ in range(3)] == [False, False, True]
    with pytest.raises(ValueError):
        BatchStrategy(0)


def test_word_boundary_whitespace_and_spaceless_scripts() -> None:
    s = WordBoundaryStrategy()
    assert [s.should_emit(c, c) for c in ["Hel", "lo ", "wor", "ld\n", ""]] == [False, True, False, True, False]
    assert [s.should_emit(c, c) for c in ["你", "こんにちは", "カタカナ", "สวัสดี", "안녕", "Ab"]] == [
        True, True, True, True, False, False]  # Hangul uses spaces
    s.reset()


def test_composite_any_child_every_child_sees_every_chunk() -> None:
    batch = BatchStrategy(2)
    s = CompositeStrategy(PunctuationStrategy(), batch)
    assert [s.should_emit(c, c) for c in ["a.", "b", "c", "d"]] == [True, True, False, True]
    assert batch.count == 0  # counted "a." too: no short-circuit
    s.should_emit("x", "x")
    s.reset()
    assert batch.count == 0


def test_composite_default_and_names() -> None:
    s = CompositeStrategy()
    assert [type(c).__name__ for c in s.children] == ["PunctuationStrategy", "BatchStrategy"]
    named = CompositeStrategy("punctuation", "word-boundary")
    assert [type(c).__name__ for c in named.children] == ["PunctuationStrategy", "WordBoundaryStrategy"]
