"""Compaction as a run plugin: :class:`Compaction` shrinks what a step sends when the request would pass
``max_fraction`` of the model's context window, so a long tool loop goes on instead of failing with
"context length exceeded" in the middle of a run.

Before each model call (``hookstream_step_start``) the step's messages and tools are counted
(:data:`TokenCounter`; by default :func:`estimate`, 4 characters a token). When the count is above the
budget (``max_fraction`` x the context window), tiers are applied in order until it fits:

1. ``tool_results``: every tool result but the most recent ``keep_tool_results`` has its output replaced
   by ``note`` (``"[tool result removed to save context]"``); the tool call and the result's id stay.
2. ``summary`` (only with a ``summary_model``): the older messages are summarised by one ``chat()`` call
   to that model and replaced by one user message holding the summary; the most recent messages that fit
   in ``keep_fraction`` of the budget are kept as they are. A summary is kept for the run and reused by
   later steps while it still covers what must go (a new one is written from it and what follows it when
   it does not), so a long run asks for a summary now and then, not on every step.
3. ``sliding_window`` (unless ``sliding_window=False``): the system prompt and the latest messages that
   fit are kept; the rest are not sent.

Tiers 2 and 3 cut only where no tool call is separated from its result: a kept part never starts with a
tool result and never holds an assistant tool-call message without all its results (so no request holds
an unanswered call or an orphan result). After the system prompt the first message sent is a user
message, as Anthropic and Gemini require: the summary (merged with the first kept message when that is a
user message too) or, for a window that starts at an assistant message, the user message that turn
answers (the run's task, in a tool loop).

Only what is sent changes: the run's own history (``RunResult.messages``, a conversation store) keeps
every message. Each compaction is told to the run's consumer by a ``CUSTOM`` event named
:data:`EVENT` (``"hookstream.compaction"``) right after the step's ``STEP_STARTED``; its value is
:meth:`CompactionReport.to_value`. When the last tier still leaves the request above the budget it is
sent all the same (``"fits": false``; the provider decides).

The context window is ``context_window`` when given, else the model's entry in the catalogue
(:func:`hookstream.models`: provider plugins' ``hookstream_register_models`` and genai-prices), matched
by name, or by the longest catalogue name the model's name starts with (a dated snapshot such as
``claude-sonnet-4-5-20250929``); with neither the run ends with :class:`ContextWindowUnknown`.

Counting: cut points are chosen from per-message estimates scaled to the counter's total, then the result
is counted again, so a counter that calls a provider's count endpoint is called a few times per
compacted step (once per step otherwise).

Thread safety: a :class:`Compaction` may be shared by any number of runs and threads; per-run values (the
summary) live in ``RunContext.state``; the catalogue lookups are cached per process, under a lock. The
``counter`` and the summary model are called from the run's thread. A :class:`Compaction` holds only its
settings, so it pickles when they do (a model name, not a provider object, as ``summary_model``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs
from hookstream import (
    HookstreamError,
    Message,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
    chat,
    get_registry,
    models,
)
from hookstream.events import Custom

# The 4-characters-a-token estimate (the one count_tokens and History use) and the summary request are the core's.
from hookstream.plugin import StepContext, estimate_request_tokens, estimate_tokens, hookimpl, summary_request

from .errors import ContextWindowUnknown

__all__ = ["EVENT", "Compaction", "CompactionReport", "Tier", "TokenCounter", "context_window_of", "estimate"]

log = logging.getLogger("hookstream_compaction")

TokenCounter = Callable[[list[Message], Sequence[Tool]], int]
"""``counter(messages, tools) -> input tokens`` of a request holding ``messages`` (system prompt included)
and the ``tools`` (:class:`~hookstream.Tool` objects) the model is offered."""

Tier = Literal["tool_results", "summary", "sliding_window"]
EVENT = "hookstream.compaction"
"""The ``CUSTOM`` event name a compaction is reported under."""
STATE = "hookstream_compaction"
"""The key of this plugin's values in ``RunContext.state``."""
DEFAULT_NOTE = "[tool result removed to save context]"
# The catalogue's windows by "PROVIDER:MODEL", looked up once per process. Kept here, not on the plugin, so a
# Compaction holds only its settings and pickles (hookstream-ray ships a batch's settings to its workers).
_WINDOWS: dict[str, int | None] = {}
_WINDOWS_LOCK = threading.Lock()
SUMMARY_PREFIX = "Summary of the earlier conversation (older messages were compacted to fit the context window): "


def estimate(messages: Sequence[Message], tools: Sequence[Tool] = ()) -> int:
    """The default :data:`TokenCounter`: the core's 4-characters-a-token estimate of each message (its
    text, tool arguments and results) plus the tools' JSON schemas (``name``, ``description``,
    ``parameters``) counted the same way."""
    return estimate_request_tokens(
        messages, [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools])


def context_window_of(provider: str, model: str) -> int | None:
    """The context window in tokens the catalogue (:func:`hookstream.models`) lists for ``provider``'s
    ``model``: the entry of that name, else of the longest listed name ``model`` starts with (``-`` or
    ``:`` following it: a dated snapshot or a tag); ``None`` when none has one or the provider is unknown."""
    try:
        entries = {m.model: m.context_window for m in models(provider)}
    except HookstreamError:
        return None
    window = entries.get(model)
    if window is not None:
        return window
    prefixes = [name for name, w in entries.items()
                if w is not None and model.startswith(name) and model[len(name):][:1] in ("-", ":", "@")]
    return entries[max(prefixes, key=len)] if prefixes else None


@attrs.frozen(slots=True)
class CompactionReport:
    """What one compaction did: ``tiers`` applied in order (``tier`` the last one), tokens of the request
    before and after (by the counter), the ``budget`` (``max_fraction`` x ``context_window``), messages
    before and after, how many tool results were cleared, messages summarised (of the run's history, the
    summary covers them) and messages dropped by the sliding window, and whether the request ``fits``."""

    tiers: tuple[Tier, ...]
    tokens_before: int
    tokens_after: int
    budget: int
    context_window: int
    messages_before: int
    messages_after: int
    tool_results_cleared: int = 0
    messages_summarized: int = 0
    messages_dropped: int = 0
    step: int | None = None

    @property
    def tier(self) -> Tier:
        """The last tier applied."""
        return self.tiers[-1]

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.budget

    def to_value(self) -> dict[str, Any]:
        """The ``CUSTOM`` event's value: a camelCase JSON object (as the core's ``CUSTOM`` values)."""
        return {"step": self.step, "tier": self.tier, "tiers": list(self.tiers), "tokensBefore": self.tokens_before,
                "tokensAfter": self.tokens_after, "budget": self.budget, "contextWindow": self.context_window,
                "messagesBefore": self.messages_before, "messagesAfter": self.messages_after,
                "toolResultsCleared": self.tool_results_cleared, "messagesSummarized": self.messages_summarized,
                "messagesDropped": self.messages_dropped, "fits": self.fits}

    @classmethod
    def from_value(cls, value: Any) -> CompactionReport:
        """The report a ``CUSTOM`` ``hookstream.compaction`` event carries. Raises :class:`ValueError` for a
        value of another shape."""
        try:
            return cls(tuple(value["tiers"]), int(value["tokensBefore"]), int(value["tokensAfter"]),
                       int(value["budget"]), int(value["contextWindow"]), int(value["messagesBefore"]),
                       int(value["messagesAfter"]), int(value["toolResultsCleared"]),
                       int(value["messagesSummarized"]), int(value["messagesDropped"]), value.get("step"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a {EVENT} value: {value!r:.200}") from exc


@attrs.define(slots=True, eq=False)
class _Summary:
    """A run's summary: ``text`` covers the first ``covered`` messages after the system prompt, the last of
    them ``last`` (checked by identity: the run's history only grows, so a later step sees the same objects)."""

    covered: int
    last: Message
    text: str

    def valid_for(self, body: Sequence[Message]) -> bool:
        return self.covered < len(body) and body[self.covered - 1] is self.last


def _cuts(messages: Sequence[Message]) -> list[int]:
    """The indices ``i > 0`` where ``messages[i:]`` may start: not a tool result, and every tool call before
    it answered before it (so the kept part holds neither an orphan result nor an unanswered call)."""
    out: list[int] = []
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if i > 0 and not waiting and m.role != "tool":
            out.append(i)
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                waiting.add(p.id)
            elif isinstance(p, ToolResultPart):
                waiting.discard(p.tool_call_id)
    return out


def _suffix(estimates: Sequence[int]) -> list[int]:
    """``out[i]`` = the sum of ``estimates[i:]``."""
    out = [0] * (len(estimates) + 1)
    for i in range(len(estimates) - 1, -1, -1):
        out[i] = out[i + 1] + estimates[i]
    return out


def _with_summary(text: str, first: Message | None) -> list[Message]:
    """The summary as the user message that opens the kept part (merged into ``first`` when that is a user
    message: two user messages in a row are refused by some providers)."""
    part = TextPart(SUMMARY_PREFIX + text)
    if first is not None and first.role == "user":
        return [Message("user", [part, *first.parts])]
    return [Message("user", [part]), *([first] if first is not None else [])]


def _summarized(rest: Sequence[Message], summary: _Summary) -> list[Message]:
    """``rest`` with its first ``summary.covered`` messages replaced by the summary."""
    kept = rest[summary.covered:]
    return [*_with_summary(summary.text, kept[0] if kept else None), *kept[1:]]


@attrs.define(slots=True, eq=False)
class _Pass:
    """One compaction of one request: the system prompt (``head``) and what follows (``body``), the request
    as it stands (``rest`` after the head), and what was done."""

    head: list[Message]
    body: list[Message]
    tools: Sequence[Tool]
    budget: int
    count: Callable[[list[Message]], int]
    scale: float
    rest: list[Message]
    tokens: int
    tiers: list[Tier] = attrs.Factory(list)
    cleared: int = 0
    summarized: int = 0
    dropped: int = 0

    @property
    def fits(self) -> bool:
        return self.tokens <= self.budget

    def predicted(self, estimates: int) -> float:
        """Tokens a request of ``estimates`` estimated tokens (the tools included) counts, by the scale of
        the counter to the estimate measured on the whole request."""
        return estimates * self.scale

    def apply(self, tier: Tier, rest: list[Message]) -> None:
        self.rest = rest
        self.tokens = self.count([*self.head, *rest])
        self.tiers.append(tier)


@attrs.define(slots=True, eq=False)
class Compaction:
    """Compacts what each step sends to fit ``max_fraction`` of the model's context window (see the module
    docstring for the tiers).

    Use it per run: ``chat(..., plugins=[Compaction(context_window=8000, summary_model="openai:gpt-4o-mini")])``,
    by the registered name ``plugins=["compaction"]`` / ``plugins=[("compaction", {"max_fraction": 0.5})]``,
    or ``hookstream chat --compact``.

    * ``context_window``: tokens (input and output together); default: the catalogue's for the model.
    * ``max_fraction``: the share of the window a request may fill (0 < f <= 1; the rest is left for the answer).
    * ``keep_tool_results``: the most recent tool results tier 1 leaves whole.
    * ``summary_model``: what writes tier 2's summary (anything ``chat()`` takes as a model); ``None``: no tier 2.
    * ``keep_fraction``: the share of the budget the recent messages kept beside a summary may fill.
    * ``sliding_window``: whether tier 3 runs.
    * ``counter``: a :data:`TokenCounter` (default :func:`estimate`).
    * ``note``: what a cleared tool result says instead of its output.

    Raises :class:`ValueError` (or :class:`TypeError`) at construction for a value out of range.
    """

    context_window: int | None = attrs.field(default=None, validator=attrs.validators.optional(
        [attrs.validators.instance_of(int), attrs.validators.ge(1)]))
    max_fraction: float = attrs.field(default=0.8, validator=[attrs.validators.gt(0.0), attrs.validators.le(1.0)])
    keep_tool_results: int = attrs.field(default=3, validator=[attrs.validators.instance_of(int),
                                                               attrs.validators.ge(0)])
    summary_model: Any = None
    keep_fraction: float = attrs.field(default=0.5, validator=[attrs.validators.gt(0.0), attrs.validators.lt(1.0)])
    sliding_window: bool = True
    counter: TokenCounter | None = None
    note: str = DEFAULT_NOTE

    # -- the hook ---------------------------------------------------------------------------------------
    @hookimpl(trylast=True)
    def hookstream_step_start(self, step: StepContext) -> None:
        """Compact ``step.messages`` when they would pass the budget; emit the report as ``CUSTOM``
        :data:`EVENT`. ``trylast``: it sees what the run's other plugins did to the step (tools found by a
        tool search count too)."""
        window = self.context_window or self._window(step)
        runs: dict[int, Any] = step.run.state.setdefault(STATE, {})
        state: dict[str, Any] = runs.setdefault(id(self), {})
        messages, report = self.compact(step.messages, list(step.tools.values()), context_window=window,
                                        state=state, step=step.number)
        if report is None:
            return
        step.messages = messages
        step.emit(Custom(EVENT, report.to_value()))
        log.info("step %d compacted (%s): %d -> %d tokens (budget %d)", step.number, ", ".join(report.tiers),
                 report.tokens_before, report.tokens_after, report.budget)

    def _window(self, step: StepContext) -> int:
        provider, model = _model_of(step)
        key = f"{provider}:{model}"
        with _WINDOWS_LOCK:
            known = key in _WINDOWS
            window = _WINDOWS.get(key)
        if not known:
            window = context_window_of(provider, model)
            with _WINDOWS_LOCK:
                _WINDOWS[key] = window
        if window is None:
            raise ContextWindowUnknown(key)
        return window

    # -- compaction ---------------------------------------------------------------------------------------
    def compact(self, messages: Sequence[Message], tools: Sequence[Tool] = (), *, context_window: int | None = None,
                state: dict[str, Any] | None = None, step: int | None = None,
                ) -> tuple[list[Message], CompactionReport | None]:
        """``(messages to send, report)`` for a request of ``messages`` and ``tools``: the same list and
        ``None`` when it fits in the budget. ``context_window`` defaults to this object's; ``state`` is a
        dict kept between the calls of one run (the summary lives there; without it a summary is written
        each time one is needed). ``messages`` are not changed. Raises :class:`ValueError` without a
        context window; the counter's errors propagate. A summary model that fails is logged and tier 3
        goes on without a summary."""
        window = context_window or self.context_window
        if window is None:
            raise ValueError("compact() needs a context window")
        budget = int(window * self.max_fraction)
        counter = self.counter or estimate
        msgs = list(messages)
        tokens = counter(msgs, tools)
        if tokens <= budget:
            return msgs, None
        split = next((i for i, m in enumerate(msgs) if m.role != "system"), len(msgs))
        head, body = msgs[:split], msgs[split:]
        guess = estimate(msgs, tools)
        run = _Pass(head, body, tools, budget, lambda ms: counter(ms, tools), tokens / guess if guess else 1.0,
                    list(body), tokens)
        self._clear_tool_results(run)
        if not run.fits and self.summary_model is not None:
            self._summarize(run, state if state is not None else {})
        if not run.fits and self.sliding_window:
            self._slide(run)
        if not run.tiers:
            return msgs, None
        report = CompactionReport(tuple(run.tiers), tokens, run.tokens, budget, window, len(msgs),
                                  len(head) + len(run.rest), run.cleared, run.summarized, run.dropped, step)
        if not report.fits:
            log.warning("compaction left the request at %d tokens, above its budget of %d", run.tokens, budget)
        return [*head, *run.rest], report

    # tier 1
    def _clear_tool_results(self, run: _Pass) -> None:
        found = [(i, j) for i, m in enumerate(run.rest) for j, p in enumerate(m.parts) if isinstance(p, ToolResultPart)]
        old = found[:max(0, len(found) - self.keep_tool_results)]
        rest = list(run.rest)
        cleared = 0
        for i, j in old:
            part = rest[i].parts[j]
            assert isinstance(part, ToolResultPart)
            if not part.files and len(str(part.output)) <= len(self.note):
                continue  # nothing to gain (or cleared already)
            parts = list(rest[i].parts)
            parts[j] = attrs.evolve(part, output=self.note, files=[])
            rest[i] = Message(rest[i].role, parts, id=rest[i].id)
            cleared += 1
        if cleared:
            run.cleared = cleared
            run.apply("tool_results", rest)

    # tier 2
    def _summarize(self, run: _Pass, state: dict[str, Any]) -> None:
        rest = run.rest  # tier 1's messages: what is kept verbatim keeps its cleared results
        cuts = _cuts(rest)
        if not cuts:
            return
        tail = _suffix([estimate_tokens(m) for m in rest])
        target = self.keep_fraction * run.budget
        cut = next((c for c in cuts if run.predicted(tail[c]) <= target), cuts[-1])
        old: _Summary | None = state.get("summary")
        if old is not None and not (old.valid_for(run.body) and old.covered in cuts):
            old = None
        if old is not None:
            # The run's summary is reused while the request fits with it, so a new one is written only once
            # the kept part has grown from keep_fraction of the budget to all of it, not on every step.
            reused = _summarized(rest, old)
            if old.covered >= cut or run.count([*run.head, *reused]) <= run.budget:
                run.summarized = old.covered
                run.apply("summary", reused)
                return
        summary = self._new_summary(run.body, cut, old)
        if summary is None:
            return
        state["summary"] = summary
        run.summarized = summary.covered
        run.apply("summary", _summarized(rest, summary))

    def _new_summary(self, body: list[Message], cut: int, old: _Summary | None) -> _Summary | None:
        """A summary of ``body[:cut]`` (of ``old`` and what follows it, when there is one)."""
        base = [Message.user(SUMMARY_PREFIX + old.text)] if old is not None else []
        start = old.covered if old is not None else 0
        try:
            result = chat(self.summary_model, summary_request([*base, *body[start:cut]]), max_steps=1).result()
            if result.error is not None:
                raise result.error
        except Exception as exc:
            log.warning("the summary model failed (%s: %s); compacting without a summary", type(exc).__name__, exc)
            return None
        return _Summary(cut, body[cut - 1], result.text)

    # tier 3
    def _slide(self, run: _Pass) -> None:
        rest = run.rest
        cuts = _cuts(rest)
        if not cuts:
            return
        estimates = [estimate_tokens(m) for m in rest]
        tail = _suffix(estimates)
        fixed = estimate(run.head, run.tools)
        users = [i for i, m in enumerate(rest) if m.role == "user"]

        def window(cut: int) -> tuple[list[Message], int]:
            if rest[cut].role == "user":
                return rest[cut:], 0
            pin = max((i for i in users if i < cut), default=None)
            if pin is None:
                return rest[cut:], 0
            return [rest[pin], *rest[cut:]], estimates[pin]

        start = next((k for k, c in enumerate(cuts) if run.predicted(fixed + window(c)[1] + tail[c]) <= run.budget),
                     len(cuts) - 1)
        for c in cuts[start:]:
            kept, _ = window(c)
            tokens = run.count([*run.head, *kept])
            if tokens <= run.budget or c == cuts[-1]:
                run.dropped = len(rest) - len(kept)
                run.rest, run.tokens = kept, tokens
                run.tiers.append("sliding_window")
                return


def _model_of(step: StepContext) -> tuple[str, str]:
    """``(provider name, model name)`` of the model ``step`` calls."""
    model = step.model
    run = step.run
    if isinstance(model, str):
        if model == run.model:
            return run.provider, model
        prefix, sep, name = model.partition(":")
        if sep and prefix in get_registry().names("providers"):
            return prefix, name
        return run.provider, model
    return str(getattr(model, "name", run.provider)), str(getattr(model, "model", run.model))
