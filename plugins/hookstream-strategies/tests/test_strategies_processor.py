"""The strategies as installed plugins: found by name from this distribution, and the final messages
are the same whatever the strategy."""

from __future__ import annotations

import importlib.metadata

import pytest
from hookstream import StreamProcessor
from hookstream import events as E
from hookstream.plugin import Registry
from hookstream_strategies import ManualScheduler, ThrottleStrategy

NAMES = ["immediate", "punctuation", "batch", "word-boundary", "debounce", "throttle", "composite"]


def test_found_by_name_from_installed_distribution() -> None:
    eps = [ep for ep in importlib.metadata.entry_points(group="hookstream") if ep.name == "strategies"]
    if not eps:
        pytest.skip("hookstream-strategies is not installed (pip install -e plugins/hookstream-strategies)")
    assert eps[0].value == "hookstream_strategies.plugin" and eps[0].dist is not None
    assert eps[0].dist.name == "hookstream-strategies"
    reg = Registry()
    info = reg.plugins["strategies"]
    assert info.distribution == "hookstream-strategies"
    assert sorted(info.registered["chunk_strategies"]) == sorted(NAMES[1:])
    assert type(reg.chunk_strategy("word-boundary")()).__name__ == "WordBoundaryStrategy"


def stream() -> list[E.BaseEvent]:
    words = "Hello, world. 你好。 This is a test of chunk strategies; they only change timing!".split(" ")
    return [
        E.RunStarted("t", "r"),
        E.ReasoningMessageContent("r1", "think "), E.ReasoningMessageContent("r1", "more"),
        E.TextMessageStart("m1"), *(E.TextMessageContent("m1", w + " ") for w in words), E.TextMessageEnd("m1"),
        E.ToolCallStart("c1", "f"), E.ToolCallArgs("c1", '{"a":'), E.ToolCallArgs("c1", " 1}"), E.ToolCallEnd("c1"),
        E.ToolCallResult("x", "c1", "ok"),
        E.TextMessageStart("m2"), E.TextMessageContent("m2", "tail"), E.TextMessageContent("m2", " end"),
        E.RunFinished("t", "r", finish_reason="stop"),
    ]


@pytest.mark.parametrize("name", NAMES)
def test_final_messages_identical_whatever_the_strategy(name: str) -> None:
    reference = StreamProcessor()
    reference.process(stream())
    updates: list[str] = []
    p = StreamProcessor(strategy=name, on_text_update=lambda mid, t: updates.append(t))
    p.process(stream())
    assert [m.to_dict() for m in p.messages] == [m.to_dict() for m in reference.messages]
    assert updates[-1] == "tail end"
    if name in ("batch", "punctuation", "debounce"):
        assert len(updates) < 16  # fewer updates than deltas


def test_throttle_object_same_messages() -> None:
    p = StreamProcessor(strategy=ThrottleStrategy(1000, ManualScheduler()))
    p.process(stream())
    ref = StreamProcessor()
    ref.process(stream())
    assert [m.to_dict() for m in p.messages] == [m.to_dict() for m in ref.messages]
