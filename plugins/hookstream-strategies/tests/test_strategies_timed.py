"""Debounce and throttle: with a controllable clock, and for real on timer threads."""

from __future__ import annotations

import threading
import time

from hookstream import StreamProcessor
from hookstream import events as E
from hookstream_strategies import DebounceStrategy, ManualScheduler, ThrottleStrategy


def start(p: StreamProcessor) -> None:
    p.process_chunk(E.RunStarted("t", "r"))
    p.process_chunk(E.TextMessageStart("m1"))


def delta(p: StreamProcessor, text: str) -> None:
    p.process_chunk(E.TextMessageContent("m1", text))


def test_debounce_with_manual_clock() -> None:
    clock = ManualScheduler()
    updates: list[str] = []
    p = StreamProcessor(strategy=DebounceStrategy(50, clock), on_text_update=lambda mid, t: updates.append(t))
    start(p)
    delta(p, "a")
    clock.advance(0.030)
    delta(p, "b")  # restarts the quiet period
    clock.advance(0.030)
    assert updates == []  # 60 ms since "a", but only 30 since "b"
    assert clock.pending == 1  # one timer per quiet period, re-armed, not one per delta
    clock.advance(0.025)
    assert updates == ["ab"]
    delta(p, "c")
    p.process_chunk(E.TextMessageEnd("m1"))  # segment end flushes at once and cancels the timer
    assert updates == ["ab", "abc"] and clock.pending == 0
    clock.advance(1)
    assert updates == ["ab", "abc"]
    assert p.finalize().content == "abc"


def test_debounce_reset_cancels_and_stale_timer_does_nothing() -> None:
    clock = ManualScheduler()
    flushed: list[int] = []
    s = DebounceStrategy(10, clock)
    s.attach(lambda: flushed.append(1))
    assert s.should_emit("x", "x") is False
    s.reset()
    clock.advance(1)
    assert flushed == [] and clock.pending == 0


def test_debounce_for_real_flushes_from_timer_thread() -> None:
    done = threading.Event()
    seen: list[tuple[str, str]] = []

    def on_text(mid: str, text: str) -> None:
        seen.append((threading.current_thread().name, text))
        done.set()

    p = StreamProcessor(strategy=DebounceStrategy(20), on_text_update=on_text)
    start(p)
    # Holding the processor's lock keeps a timer that fires early (a preempted test thread) waiting
    # until both deltas are in, so they always come out as one update, however loaded the machine.
    with p.lock:
        delta(p, "hello ")
        delta(p, "world")
        assert seen == []
    assert done.wait(30)  # only so a broken timer cannot hang the test
    assert seen == [(seen[0][0], "hello world")] and seen[0][0] != threading.current_thread().name
    with p.lock:  # state is consistent under the processor's lock
        assert p.messages[0].parts[0].content == "hello world"  # type: ignore[union-attr]
    assert p.finalize().content == "hello world"
    time.sleep(0.05)
    assert len(seen) == 1


def test_throttle_with_manual_clock_trailing_flush() -> None:
    clock = ManualScheduler()
    updates: list[str] = []
    p = StreamProcessor(strategy=ThrottleStrategy(100, clock), on_text_update=lambda mid, t: updates.append(t))
    start(p)
    delta(p, "a")  # first: at once
    clock.advance(0.040)
    delta(p, "b")
    clock.advance(0.040)
    delta(p, "c")
    assert updates == ["a"]
    clock.advance(0.020)  # interval over: trailing flush merges b and c
    assert updates == ["a", "abc"]
    clock.advance(0.050)
    delta(p, "d")  # 50 ms after the trailing flush: held
    p.process_chunk(E.ToolCallStart("c1", "f"))  # flushed before any non-text event
    assert updates == ["a", "abc", "abcd"]
    assert clock.pending == 0


def test_throttle_reset() -> None:
    clock = ManualScheduler()
    s = ThrottleStrategy(100, clock)
    assert s.should_emit("a", "a") is True
    assert s.should_emit("b", "b") is False
    s.reset()
    assert s.should_emit("c", "c") is True
