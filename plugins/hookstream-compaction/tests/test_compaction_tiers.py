"""Each tier of compaction through the plugin's public faces: ``Compaction.compact`` and the
``hookstream_step_start`` hook with a :class:`~hookstream.plugin.StepContext`, on conversations of tool
loops (one call per step, parallel calls, calls answered in separate tool messages). Summaries are written
by a :class:`~hookstream.testing.FunctionModel` through a real ``chat()`` call."""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hookstream import Message, Tool, ToolCallPart, ToolResultPart, chat, tool
from hookstream.errors import PluginError
from hookstream.events import Custom, RunError
from hookstream.plugin import RunContext, StepContext
from hookstream.testing import FunctionModel, RequestInfo
from hookstream_compaction import (
    EVENT,
    Compaction,
    CompactionReport,
    ContextWindowUnknown,
    context_window_of,
    estimate,
)

NOTE = "[tool result removed to save context]"
BIG = "x" * 400  # 100 estimated tokens


def fetch(page: int) -> str:
    """Fetch a page."""
    return BIG


TOOLS: list[Tool] = [tool(fetch)]


def call(i: int, n: int = 0) -> ToolCallPart:
    return ToolCallPart(f"call_{i}_{n}", "fetch", {"page": i}, arguments_raw=f'{{"page": {i}}}')


def result(i: int, n: int = 0, output: str = BIG) -> ToolResultPart:
    return ToolResultPart(f"call_{i}_{n}", "fetch", output)


def loop(steps: int, task: str = "read every page") -> list[Message]:
    """A system prompt, the task, then ``steps`` tool calls each answered in its own tool message."""
    out = [Message.system("You read pages."), Message.user(task)]
    for i in range(steps):
        out += [Message("assistant", [call(i)]), Message("tool", [result(i)])]
    return out


def check_paired(messages: Sequence[Message]) -> None:
    """What the providers need of a request: every tool call answered before the next non-tool message,
    no result without its call, the first message after the system prompt a user message."""
    waiting: set[str] = set()
    seen_other = False
    for m in messages:
        if m.role == "system" and not seen_other:
            continue
        if not seen_other:
            assert m.role == "user", f"first message after the system prompt is {m.role}"
            seen_other = True
        if m.role == "tool":
            for r in m.tool_results:
                assert r.tool_call_id in waiting, f"orphan result {r.tool_call_id}"
                waiting.discard(r.tool_call_id)
            continue
        assert not waiting, f"unanswered calls {waiting}"
        waiting = {c.id for c in m.tool_calls}
    assert not waiting, f"unanswered calls {waiting}"


def outputs(messages: Sequence[Message]) -> list[Any]:
    return [r.output for m in messages for r in m.tool_results]


def step_context(messages: list[Message], *, provider: str = "openai", model: str = "gpt-4o-mini",
                 state: dict[str, Any] | None = None, number: int = 1) -> StepContext:
    run = RunContext("thread", "run", provider, model, list(messages), state=state if state is not None else {})
    return StepContext(run, number, [], list(messages), {t.name: t for t in TOOLS}, None, model)


# -- nothing to do ---------------------------------------------------------------------------------------


def test_a_request_that_fits_is_sent_as_it_is() -> None:
    messages = loop(3)
    sent, report = Compaction(context_window=100_000).compact(messages, TOOLS)
    assert sent == messages and report is None
    step = step_context(messages)
    before = step.messages
    Compaction(context_window=100_000).hookstream_step_start(step)
    assert step.messages is before and step.events == []


# -- tier 1: tool results -------------------------------------------------------------------------------------


def test_tier_one_clears_old_tool_results_and_keeps_the_calls() -> None:
    messages = loop(10)  # about 1000 estimated tokens
    original = [list(m.parts) for m in messages]
    sent, report = Compaction(context_window=800, max_fraction=0.5, keep_tool_results=2).compact(messages, TOOLS)
    assert report is not None and report.tiers == ("tool_results",) and report.tier == "tool_results"
    assert outputs(sent) == [NOTE] * 8 + [BIG, BIG]
    assert [c.id for m in sent for c in m.tool_calls] == [f"call_{i}_0" for i in range(10)]
    assert [r.tool_call_id for m in sent for r in m.tool_results] == [f"call_{i}_0" for i in range(10)]
    assert report.tool_results_cleared == 8 and report.fits
    assert report.tokens_before == estimate(messages, TOOLS) > 400 >= report.tokens_after == estimate(sent, TOOLS)
    assert report.messages_before == report.messages_after == len(messages)
    assert [list(m.parts) for m in messages] == original  # the run's history is not touched
    check_paired(sent)


def test_tier_one_through_the_hook_assigns_the_messages_and_emits_the_report() -> None:
    step = step_context(loop(10), number=7)
    run_history = step.run.messages
    Compaction(context_window=800, max_fraction=0.5, keep_tool_results=2).hookstream_step_start(step)
    assert outputs(step.messages) == [NOTE] * 8 + [BIG, BIG]
    assert outputs(run_history) == [BIG] * 10
    [event] = step.events
    assert isinstance(event, Custom) and event.name == EVENT == "hookstream.compaction"
    assert event.value["tier"] == "tool_results" and event.value["step"] == 7
    assert event.value["toolResultsCleared"] == 8 and event.value["fits"] is True
    assert event.value["contextWindow"] == 800 and event.value["budget"] == 400
    assert event.value["tokensBefore"] > event.value["tokensAfter"]
    assert CompactionReport.from_value(event.value).to_value() == event.value


# -- tier 2: summary ---------------------------------------------------------------------------------------------


class Summarizer:
    """A summary model: answers each summary request with ``SUMMARY <n>`` and keeps what it was asked."""

    def __init__(self, fail: bool = False) -> None:
        self.asked: list[str] = []
        self.fail = fail
        self.model = FunctionModel(self.answer)

    def answer(self, messages: list[Message], info: RequestInfo) -> str:
        assert not info.tools  # a summary request offers no tools
        if self.fail:
            raise RuntimeError("the summary model is down")
        self.asked.append(messages[-1].text)
        return f"SUMMARY {len(self.asked)}"


def test_tier_two_summarises_older_turns_into_a_user_message_and_keeps_the_latest() -> None:
    summarizer = Summarizer()
    messages = loop(20)  # about 2000 estimated tokens
    compaction = Compaction(context_window=1000, max_fraction=0.8, keep_tool_results=20,
                            summary_model=summarizer.model, keep_fraction=0.5)
    sent, report = compaction.compact(messages, TOOLS, state={})
    assert report is not None and report.tiers == ("summary",) and report.fits
    assert sent[0] == messages[0]  # the system prompt stays
    assert sent[1].role == "user" and sent[1].text.endswith("SUMMARY 1")
    assert sent[2:] == messages[2 + report.messages_summarized - 1:]
    assert report.messages_summarized >= 20 and report.messages_after == len(sent)
    assert "read every page" in summarizer.asked[0]  # the task is in what the summary model read
    check_paired(sent)


def test_a_summary_is_reused_by_later_steps_and_rewritten_from_itself_when_it_no_longer_covers_enough() -> None:
    summarizer = Summarizer()
    compaction = Compaction(context_window=1000, keep_tool_results=20, summary_model=summarizer.model)
    state: dict[str, Any] = {}
    history = loop(20)
    _, report = compaction.compact(history, TOOLS, state=state)
    assert report is not None and report.tier == "summary" and len(summarizer.asked) == 1
    covered = report.messages_summarized
    # The next step: one more call and result; the same summary still covers what must go.
    history += [Message("assistant", [call(20)]), Message("tool", [result(20)])]
    second, report = compaction.compact(history, TOOLS, state=state)
    assert report is not None and report.tier == "summary" and len(summarizer.asked) == 1
    assert report.messages_summarized == covered and second[1].text.endswith("SUMMARY 1")
    # Many steps later the kept part has outgrown its share: a new summary, written from the old one.
    for i in range(21, 30):
        history += [Message("assistant", [call(i)]), Message("tool", [result(i)])]
    third, report = compaction.compact(history, TOOLS, state=state)
    assert report is not None and report.tier == "summary" and len(summarizer.asked) == 2
    assert report.messages_summarized > covered and third[1].text.endswith("SUMMARY 2")
    assert "SUMMARY 1" in summarizer.asked[1]
    check_paired(third)


def test_a_summary_merges_with_a_kept_user_message() -> None:
    summarizer = Summarizer()
    history = [Message.system("s")]
    for i in range(12):
        history += [Message.user(f"question {i}"), Message.assistant(f"answer {i} " + BIG)]
    sent, report = Compaction(context_window=1000, summary_model=summarizer.model).compact(history, TOOLS, state={})
    assert report is not None and report.tier == "summary"
    kept_first = history[1 + report.messages_summarized]
    assert kept_first.role == "user"
    assert sent[1].role == "user" and sent[1].parts[1:] == kept_first.parts  # one user message, summary first
    assert sent[2].role == "assistant"
    check_paired(sent)


def test_a_failed_summary_leaves_the_sliding_window_to_fit_the_request() -> None:
    sent, report = Compaction(context_window=1000, keep_tool_results=20,
                              summary_model=Summarizer(fail=True).model).compact(loop(20), TOOLS, state={})
    assert report is not None and report.tiers == ("sliding_window",) and report.fits
    check_paired(sent)


# -- tier 3: sliding window ---------------------------------------------------------------------------------------


def test_tier_three_keeps_the_system_prompt_the_task_and_the_latest_turns() -> None:
    messages = loop(20)
    sent, report = Compaction(context_window=1000, keep_tool_results=20).compact(messages, TOOLS)
    assert report is not None and report.tiers == ("sliding_window",) and report.fits
    assert sent[0] == messages[0] and sent[1] == messages[1]  # system prompt, then the task (a user message)
    assert sent[-1] == messages[-1] and sent[2].role == "assistant"
    assert sent[2:] == messages[len(messages) - (len(sent) - 2):]
    assert report.messages_dropped == len(messages) - len(sent)
    assert report.tokens_after <= report.budget < report.tokens_before
    check_paired(sent)


def test_tiers_apply_in_order_until_the_request_fits() -> None:
    sent, report = Compaction(context_window=600, keep_tool_results=3).compact(loop(20), TOOLS)
    assert report is not None and report.tiers == ("tool_results", "sliding_window") and report.fits
    assert outputs(sent)[-3:] == [BIG] * 3
    check_paired(sent)


def test_the_window_keeps_the_last_turn_when_nothing_smaller_fits() -> None:
    messages = [Message.system("s"), Message.user("go"), Message("assistant", [call(0), call(0, 1)]),
                Message("tool", [result(0), result(0, 1)]), Message("assistant", [call(1)]),
                Message("tool", [result(1, output=BIG * 10)])]
    sent, report = Compaction(context_window=100, keep_tool_results=5).compact(messages, TOOLS)
    assert report is not None and not report.fits and report.tier == "sliding_window"
    assert sent == [messages[0], messages[1], messages[4], messages[5]]
    check_paired(sent)


def test_without_the_sliding_window_a_request_too_big_is_sent_and_said_not_to_fit() -> None:
    sent, report = Compaction(context_window=1000, keep_tool_results=10, sliding_window=False).compact(loop(20), TOOLS)
    assert report is not None and report.tiers == ("tool_results",) and not report.fits
    assert report.to_value()["fits"] is False and len(sent) == len(loop(20))
    # No tier can do anything: the request goes as it is, with nothing to report.
    sent, report = Compaction(context_window=1000, keep_tool_results=20, sliding_window=False).compact(loop(20), TOOLS)
    assert report is None and sent == loop(20)


@pytest.mark.parametrize("seed", range(40))
def test_no_cut_ever_separates_a_tool_call_from_its_result(seed: int) -> None:
    rng = random.Random(seed)
    history = [Message.system("s"), Message.user("task")]
    for i in range(rng.randint(5, 30)):
        kind = rng.random()
        if kind < 0.15:
            history += [Message.user(f"more {i} " + "y" * rng.randint(0, 800))]
        elif kind < 0.25:
            history += [Message.assistant(f"thinking {i}")]
        n = rng.randint(1, 3)
        calls = [call(i, k) for k in range(n)]
        history.append(Message("assistant", [*calls]))
        results = [result(i, k, output="z" * rng.randint(0, 1500)) for k in range(n)]
        if rng.random() < 0.5:
            history.append(Message("tool", results))
        else:
            history += [Message("tool", [r]) for r in results]
    check_paired(history)
    compaction = Compaction(context_window=rng.choice([300, 800, 2000]), keep_tool_results=rng.randint(0, 4),
                            summary_model=Summarizer().model if rng.random() < 0.5 else None)
    sent, _ = compaction.compact(history, TOOLS, state={})
    check_paired(sent)


# -- sizing and counting --------------------------------------------------------------------------------------------


def test_the_context_window_comes_from_the_catalogue() -> None:
    window = context_window_of("openai", "gpt-4o-mini")
    assert window is not None and window >= 100_000
    assert context_window_of("openai", "gpt-4o-mini-2024-07-18") == window  # a dated snapshot of it
    assert context_window_of("openai", "no-such-model") is None
    # With the catalogue's window (128k) a small loop fits: nothing happens.
    step = step_context(loop(5))
    Compaction().hookstream_step_start(step)
    assert step.events == []


def test_a_model_the_catalogue_does_not_size_needs_a_window() -> None:
    step = step_context(loop(5), model="no-such-model")
    with pytest.raises(ContextWindowUnknown) as caught:
        Compaction().hookstream_step_start(step)
    assert caught.value.code == "context_window_unknown" and caught.value.model == "openai:no-such-model"
    Compaction(context_window=100_000).hookstream_step_start(step_context(loop(5), model="no-such-model"))


def test_a_run_on_a_model_without_a_window_ends_before_its_first_request() -> None:
    model = FunctionModel(lambda messages, info: "never asked")
    stream = chat(model, "hi", plugins=[Compaction()])
    events = list(stream)
    result = stream.result()
    assert isinstance(result.error, PluginError) and "ContextWindowUnknown" in result.error.message
    assert "'function:function'" in result.error.message and model.requests == []
    assert isinstance(events[-1], RunError) and events[-1].code == "plugin_error"


def test_the_counter_is_injectable() -> None:
    seen: list[tuple[int, int]] = []

    def count(messages: list[Message], tools: Sequence[Tool]) -> int:
        seen.append((len(messages), len(tools)))
        return 100 * len(messages)

    messages = loop(10)  # 22 messages: 2200 "tokens"
    sent, report = Compaction(context_window=1000, counter=count).compact(messages, TOOLS)
    assert report is not None and report.tokens_before == 2200 and report.tokens_after == 100 * len(sent) <= 800
    assert seen[0] == (22, 1)
    check_paired(sent)


def test_settings_out_of_range_are_refused() -> None:
    for bad in ({"max_fraction": 0}, {"max_fraction": 1.5}, {"keep_tool_results": -1}, {"context_window": 0},
                {"keep_fraction": 1.0}):
        with pytest.raises((ValueError, TypeError)):
            Compaction(**bad)


def test_a_compaction_pickles_with_its_settings() -> None:
    compaction = Compaction(context_window=1000, max_fraction=0.5, summary_model="openai:gpt-4o-mini")
    copy = pickle.loads(pickle.dumps(compaction))
    assert (copy.context_window, copy.max_fraction, copy.summary_model) == (1000, 0.5, "openai:gpt-4o-mini")
    assert copy.compact(loop(10), TOOLS)[1] == compaction.compact(loop(10), TOOLS)[1]
