"""The provider contract suite: what every provider plugin's adapter must do with real recorded bodies.

:class:`ProviderContract` takes a provider name (the registry name, ``"anthropic"``), real recorded
response bodies of that provider (:class:`~hookstream.testing.Recording` s from the shared corpus or
the plugin's own ``tests/recordings``: never hand-written provider bytes) and the provider's real
HTTP error bodies (:class:`HTTPErrorCase`), and runs each check over real loopback HTTP
(:func:`~hookstream.testing.replay_body`, :class:`~hookstream.testing.LoopbackServer`) through the real
transport and adapter. Each check returns its problems (an empty list: the adapter keeps the contract):

``truncated``
    The body cut before its last events by a dropped connection (at an event boundary, and inside the
    event after it) ends in ``RUN_ERROR`` ``connection_closed``; the content events before the cut are exactly the
    whole run's, and the call's result keeps their text.
``oversized_event``
    With ``max_event_bytes`` half the body's largest event (which arrives in two reads, its first half
    still open at the end of the first), the call ends in ``RUN_ERROR``
    ``line_too_long`` (:class:`~hookstream.errors.LineTooLongError`) after the same content events.
``random_splits``
    Served in random pieces (several seeds), the body gives the same events as whole (generated ids
    aside) that obey the adapter grammar.
``errors``
    Each HTTP error case ends in ``RUN_STARTED RUN_ERROR`` with its typed code and the provider's
    message; a recording whose stream ends in the provider's in-stream error gives a typed code of the
    provider's own (not a transport one) and a message.
``finish_reason``
    ``RUN_FINISHED`` carries the recording's raw finish reason and the finish reason the one policy
    (:meth:`hookstream.plugin.StreamBuilder.normalise_finish_reason`) gives with the provider class's
    ``finish_reasons`` table and ``unknown_finish_reason``; ``expected_finish`` names the recordings
    whose end is not a finish value (a Gemini prompt blocked before any candidate).
``usage``
    Where the recording's expected result has token counts, the call reports them.
``keep_alive``
    Served whole ``keep_alive_calls`` times by a server that keeps its connections alive, the
    sequential calls on one ``requests`` session use one TCP connection (the transport reads a body's
    end after the provider's final event, so the connection goes back to the pool) and give the same
    events each time.

A plugin runs it from its tests, one small file (see ``docs/testing-kit.md``)::

    @pytest.fixture(scope="module")
    def contract() -> ProviderContract:
        corpus = require_corpus(Path(__file__))
        return ProviderContract("anthropic", recordings(corpus, ("anthropic",)), errors=ERRORS)

    @pytest.mark.parametrize("check", CONTRACT_CHECKS)
    def test_anthropic_contract(contract: ProviderContract, check: str) -> None:
        assert contract.check(check) == []

Thread safety: a contract caches each recording's whole run; use one from one thread at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs
import requests

from .._errors import LineTooLongError
from .._events import BaseEvent, Custom, RunError, RunFinished, TextMessageContent, ToolCallStart, to_dict
from .._messages import Message
from .._registry import get_registry
from .._stream.accumulate import StepAccumulator, StepResult
from .._stream.builder import StreamBuilder
from .._stream.call import CallOptions, ModelCall
from .._stream.loopback import LoopbackServer, Response
from .._stream.provider import CallContext, ModelRequest
from .conformance import Recording
from .grammar import check_events
from .recorded import replay_body

__all__ = ["CONTRACT_CHECKS", "HTTPErrorCase", "ProviderContract"]

CONTRACT_CHECKS: tuple[str, ...] = ("truncated", "oversized_event", "random_splits", "errors", "finish_reason", "usage",
                                    "keep_alive")
"""The names of :class:`ProviderContract`'s checks, for ``pytest.mark.parametrize``."""

# Transport and framing codes the core gives: an in-stream provider error must have its own code.
_CORE_CODES = frozenset({"connection_closed", "malformed_chunk", "line_too_long", "corrupt_frame", "provider_error"})
# new_id's shape (``msg_3f2a9c0d1e4b5a67``): ids generated per run, masked when two runs are compared.
_GENERATED_ID = re.compile(r"^[a-z]+_[0-9a-f]{16}$")


@attrs.define(slots=True, frozen=True)
class HTTPErrorCase:
    """One HTTP error response of the provider: ``status`` with the provider's real error ``body`` (the
    shape its API reference documents, as the plugin's error tests send it), and what the call must end
    with: ``RUN_ERROR`` whose ``code`` is ``code`` and whose message contains ``message`` (the provider's
    own words). ``headers`` are sent too (``{"retry-after": "7"}``)."""

    status: int
    body: bytes
    code: str
    message: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    content_type: str = "application/json"


@attrs.define(slots=True)
class _Run:
    events: list[BaseEvent]
    step: StepResult


@attrs.define(slots=True)
class ProviderContract:
    """The contract suite for ``provider`` (a registry name) over ``recordings`` (real recorded bodies
    with their expected results, :func:`~hookstream.testing.recordings`) and ``errors`` (its real HTTP
    error bodies). ``seeds`` seed the random splits (pieces of 1 to ``max_piece`` bytes);
    ``expected_finish`` maps a recording name to the finish reason its end gives when that end is not
    a finish value the policy knows (a prompt blocked before any answer); ``keep_alive_calls`` is how
    many sequential calls the ``keep_alive`` check makes per recording. Raises
    :class:`~hookstream.errors.UnknownPluginError` (on the first check) for a provider that is not installed.

    :meth:`check` runs one check by name (:data:`CONTRACT_CHECKS`) and returns its problems,
    ``"RECORDING: what is wrong"`` strings; :meth:`check_all` runs them all."""

    provider: str
    recordings: Sequence[Recording]
    errors: Sequence[HTTPErrorCase] = ()
    seeds: tuple[int, ...] = (1, 2, 3)
    max_piece: int = 48
    expected_finish: Mapping[str, str] = attrs.field(factory=dict)
    keep_alive_calls: int = 3
    _whole: dict[str, _Run] = attrs.field(factory=dict, init=False, repr=False)

    # -- running ---------------------------------------------------------------------------------
    def check(self, name: str) -> list[str]:
        """The problems :data:`CONTRACT_CHECKS` check ``name`` finds (empty: kept). Raises
        :class:`ValueError` for an unknown name, and when there are no recordings to check."""
        checks: dict[str, Callable[[], list[str]]] = {
            "truncated": self.check_truncated, "oversized_event": self.check_oversized_event,
            "random_splits": self.check_random_splits, "errors": self.check_errors,
            "finish_reason": self.check_finish_reason, "usage": self.check_usage,
            "keep_alive": self.check_keep_alive,
        }
        if name not in checks:
            raise ValueError(f"unknown contract check {name!r}; known: {', '.join(CONTRACT_CHECKS)}")
        if not self.recordings:
            raise ValueError(f"the {self.provider} contract has no recordings to check")
        return checks[name]()

    def check_all(self) -> dict[str, list[str]]:
        """Every check's problems, by name."""
        return {name: self.check(name) for name in CONTRACT_CHECKS}

    def whole(self, recording: Recording) -> tuple[list[BaseEvent], StepResult]:
        """(events, result) of ``recording`` served whole (cached: the other checks compare with it)."""
        run = self._whole.get(recording.name)
        if run is None:
            run = self._whole[recording.name] = _Run(*replay_body(self.provider, _body(recording)))
        return run.events, run.step

    # -- checks ----------------------------------------------------------------------------------
    def check_truncated(self) -> list[str]:
        """See the module docstring: ``truncated``."""
        problems: list[str] = []
        for rec in self.recordings:
            body = _body(rec)
            units = self._units(body)
            full, _ = self.whole(rec)
            if not _ended(full):
                continue  # recorded cut short already
            # The adapter may name what is unfinished, or report the provider's error that came before the cut.
            codes = sorted({"connection_closed", "incomplete_tool_call", getattr(full[-1], "code", None) or ""} - {""})
            drops = range(1, min(len(units) - 1, 4) + 1)  # at least one event stays
            # The fewest last events whose loss the adapter notices when the body ends cleanly there; a
            # stream that repeats its end on every event (Gemini's legacy finishReason) has none.
            drop = next((d for d in drops if not isinstance(self._clean_cut(body, units, d)[0][-1], RunFinished)),
                        None)
            if drop is not None:
                events, step = self._clean_cut(body, units, drop)
                problems += _cut_problems(rec.name, f"body ending after {len(units) - drop} events", full, events,
                                          step, *codes)
            drop = drop or 1
            kept, at = sum(len(u) for u in units[:-drop]), len(units) - drop
            for end, how in ((kept, f"connection dropped after {at} events"),
                             (kept + len(units[-drop]) // 2, f"connection dropped inside event {at + 1}")):
                events, step = self._cut(body[:end])
                problems += _cut_problems(rec.name, how, full, events, step, *codes)
        return problems

    def check_oversized_event(self) -> list[str]:
        """See the module docstring: ``oversized_event``."""
        problems: list[str] = []
        for rec in self.recordings:
            body = _body(rec)
            units = self._units(body)
            big = max(range(len(units)), key=lambda i: len(units[i]))
            limit = max(1, len(units[big]) // 2)
            # The largest event split in two reads, the second sent later: a framing bounds an event by
            # what it holds open between reads, so the event is over the limit while it is still open.
            mid = sum(len(u) for u in units[:big]) + limit
            media_type = get_registry().provider(self.provider).framing.media_type
            events, step = self._serve(Response(body, content_type=media_type, pieces=[body[:mid], body[mid:]],
                                                delay=0.02), CallOptions(max_event_bytes=limit))
            full, _ = self.whole(rec)
            problems += _cut_problems(rec.name, f"max_event_bytes={limit}", full, events, step,
                                      LineTooLongError.code)
        return problems

    def check_random_splits(self) -> list[str]:
        """See the module docstring: ``random_splits``."""
        problems: list[str] = []
        for rec in self.recordings:
            full, _ = self.whole(rec)
            try:
                check_events(full, form="call")
            except AssertionError as exc:
                problems.append(f"{rec.name}: whole body breaks the adapter grammar: {exc}")
            want = _normalised(full)
            for seed in self.seeds:
                events, _ = replay_body(self.provider, _body(rec), fragment=(1, self.max_piece), seed=seed)
                got = _normalised(events)
                if got != want:
                    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                              min(len(got), len(want)))
                    problems.append(f"{rec.name}: split with seed {seed}, event {at} differs: "
                                    f"{_at(got, at)!r} != {_at(want, at)!r}")
        return problems

    def check_errors(self) -> list[str]:
        """See the module docstring: ``errors``."""
        problems: list[str] = []
        for case in self.errors:
            events, _ = self._serve(Response(case.body, status=case.status, headers=dict(case.headers),
                                             content_type=case.content_type))
            label = f"HTTP {case.status}"
            if [e.type for e in events] != ["RUN_STARTED", "RUN_ERROR"]:
                problems.append(f"{label}: events {[e.type for e in events]} != ['RUN_STARTED', 'RUN_ERROR']")
                continue
            last = events[-1]
            assert isinstance(last, RunError)
            if last.code != case.code:
                problems.append(f"{label}: code {last.code!r} != {case.code!r}")
            if case.message not in last.message:
                problems.append(f"{label}: message {last.message!r} lacks the provider's {case.message!r}")
        for rec in self.recordings:
            full, _ = self.whole(rec)
            last = full[-1]
            if isinstance(last, RunError) and (not last.code or last.code in _CORE_CODES or not last.message):
                problems.append(f"{rec.name}: in-stream provider error ends with code {last.code!r} and message "
                                f"{last.message!r}: want the provider's own error type and message")
        return problems

    def check_finish_reason(self) -> list[str]:
        """See the module docstring: ``finish_reason``."""
        cls = get_registry().provider(self.provider)
        table: Mapping[str, str] = cls.finish_reasons
        unknown: str = cls.unknown_finish_reason
        if not table:
            return [f"{cls.__name__} has no finish_reasons table (a class attribute: raw -> normalised)"]
        problems: list[str] = []
        for rec in self.recordings:
            full, _ = self.whole(rec)
            end = full[-1]
            if not isinstance(end, RunFinished):
                continue
            raw = end.raw_finish_reason
            if "finish_reason" in rec.expected and raw != rec.expected["finish_reason"]:
                problems.append(f"{rec.name}: raw finish reason {raw!r} != recorded {rec.expected['finish_reason']!r}")
            tools = any(isinstance(e, ToolCallStart) for e in full)
            refusal = any(isinstance(e, Custom) and e.name == "refusal" for e in full)
            want = self.expected_finish.get(rec.name) or StreamBuilder.normalise_finish_reason(
                raw, table, tool_calls=tools, refusal=refusal, unknown=unknown)
            if end.finish_reason != want:
                problems.append(f"{rec.name}: finish reason {end.finish_reason!r} != {want!r} (raw {raw!r}, "
                                f"tool calls {tools}, refusal {refusal})")
        return problems

    def check_usage(self) -> list[str]:
        """See the module docstring: ``usage``."""
        problems: list[str] = []
        for rec in self.recordings:
            expected = rec.expected.get("usage") or {}
            full, _ = self.whole(rec)
            end = full[-1]
            usage = end.usage if isinstance(end, (RunFinished, RunError)) else None
            for key in ("input_tokens", "output_tokens"):
                want = expected.get(key)
                got = getattr(usage, key, None) if usage is not None else None
                if want is not None and got != want:
                    problems.append(f"{rec.name}: usage.{key} {got!r} != recorded {want!r}")
        return problems

    def check_keep_alive(self) -> list[str]:
        """See the module docstring: ``keep_alive``."""
        problems: list[str] = []
        media_type = get_registry().provider(self.provider).framing.media_type
        calls = self.keep_alive_calls
        for rec in self.recordings:
            full, _ = self.whole(rec)
            if not _ended(full):
                continue  # recorded cut short: no end of body to reach
            with LoopbackServer([Response(_body(rec), content_type=media_type)]) as srv, \
                    requests.Session() as session:
                runs = [self._call(srv, session, None)[0] for _ in range(calls)]
            if srv.connections != 1:
                problems.append(f"{rec.name}: {calls} sequential calls on one session opened {srv.connections} "
                                "connections to a server that keeps them alive, want 1")
            want = _normalised(full)
            problems += [f"{rec.name}: call {i + 1} of {calls} on a kept-alive connection gave other events"
                         for i, events in enumerate(runs) if _normalised(events) != want]
        return problems

    # -- helpers ---------------------------------------------------------------------------------
    def _units(self, body: bytes) -> list[bytes]:
        return get_registry().provider(self.provider).framing.split_events(body)

    def _clean_cut(self, body: bytes, units: list[bytes], drop: int) -> tuple[list[BaseEvent], StepResult]:
        """The call answered by ``body`` without its last ``drop`` events, the response ending cleanly."""
        return replay_body(self.provider, body[:sum(len(u) for u in units[:-drop])])

    def _cut(self, body: bytes) -> tuple[list[BaseEvent], StepResult]:
        """The call answered by ``body`` and then a dropped connection (TCP FIN, no end of the chunked
        body), as a provider or proxy cut off mid-stream."""
        media_type = get_registry().provider(self.provider).framing.media_type
        return self._serve(Response(body, content_type=media_type, ending="fin"))

    def _serve(self, response: Response, options: CallOptions | None = None) -> tuple[list[BaseEvent], StepResult]:
        """(events, result) of one call to ``provider`` answered by ``response`` (any status, body and
        ending), over loopback as :func:`~hookstream.testing.replay_body` serves a recorded body."""
        with LoopbackServer([response]) as srv, requests.Session() as session:
            return self._call(srv, session, options)

    def _call(self, srv: LoopbackServer, session: requests.Session,
              options: CallOptions | None) -> tuple[list[BaseEvent], StepResult]:
        """(events, result) of one call to ``provider`` at ``srv`` through ``session``."""
        cls = get_registry().provider(self.provider)
        base_path = urlsplit(cls.default_base_url).path.rstrip("/")
        provider = cls("recorded-model", base_url=srv.url + base_path, api_key="recorded")
        request = ModelRequest(model="recorded-model", messages=[Message.user("replay")])
        acc = StepAccumulator()
        call = ModelCall(provider, request, CallContext("replay", "replay-1"), session, options)
        events = [acc.add(e) for e in call]
        return events, acc.finish()


def _body(recording: Recording) -> bytes:
    return recording.body_path.read_bytes()


def _ended(events: list[BaseEvent]) -> bool:
    """Whether a run ended by the provider's own end (``RUN_FINISHED`` or an in-stream error), not cut."""
    last = events[-1] if events else None
    return isinstance(last, RunFinished) or (isinstance(last, RunError) and last.code != "connection_closed")


def _cut_problems(name: str, how: str, full: list[BaseEvent], events: list[BaseEvent], step: StepResult,
                  *codes: str) -> list[str]:
    """Problems of a call cut short (``how``): it must end in ``RUN_ERROR`` with one of ``codes`` after
    exactly the whole run's first content events, and its result must keep their text."""
    last = events[-1]
    if not isinstance(last, RunError) or last.code not in codes:
        got = f"RUN_ERROR {last.code}" if isinstance(last, RunError) else last.type
        return [f"{name}: {how}: ends with {got}, want RUN_ERROR {' or '.join(codes)}"]
    problems = []
    content = events[:-1]
    if _normalised(content) != _normalised(full[:len(content)]):
        problems.append(f"{name}: {how}: the events before the error are not the whole run's first {len(content)}")
    streamed = "".join(e.delta for e in content if isinstance(e, TextMessageContent))
    if (step.text or "") != streamed:
        problems.append(f"{name}: {how}: the result's text {step.text!r} is not what streamed ({streamed!r})")
    return problems


def _at(events: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    return events[index] if index < len(events) else None


def _normalised(events: Sequence[BaseEvent]) -> list[dict[str, Any]]:
    """Events as AG-UI objects with the ids generated per run masked, so two runs compare equal."""
    return [_mask(to_dict(e)) for e in events]


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, str) and _GENERATED_ID.match(value):
        return value.split("_", 1)[0] + "_*"
    return value
