"""The one finish-reason policy every adapter uses (``StreamBuilder.normalise_finish_reason``,
``docs/finish-reasons.md``): the provider's table, its default for unknown values, and the shared rules."""

from __future__ import annotations

import pytest
from hookstream.plugin import CallContext, StreamBuilder

TABLE = {"end": "stop", "cut": "length", "filtered": "content_filter", "calls": "tool_calls", "bad": "error"}


@pytest.mark.parametrize(("raw", "tools", "refusal", "unknown", "want"), [
    ("end", False, False, "stop", "stop"),
    ("end", True, False, "stop", "tool_calls"),       # a forced tool_choice ends with the plain stop value
    ("end", False, True, "stop", "content_filter"),   # only a refusal
    ("end", True, True, "stop", "tool_calls"),        # tool calls win over a refusal
    ("calls", False, False, "stop", "tool_calls"),
    ("cut", True, False, "stop", "length"),           # a cut-off answer's calls are not run
    ("filtered", True, False, "stop", "content_filter"),
    ("bad", True, False, "stop", "error"),
    ("new-value", False, False, "stop", "stop"),      # unknown: the provider's default, then the rules
    ("new-value", True, False, "stop", "tool_calls"),
    ("new-value", True, False, "error", "error"),
    (None, False, False, "error", "stop"),            # no raw value at all
    (None, True, False, "error", "tool_calls"),
])
def test_policy(raw: str | None, tools: bool, refusal: bool, unknown: str, want: str) -> None:
    got = StreamBuilder.normalise_finish_reason(raw, TABLE, tool_calls=tools, refusal=refusal, unknown=unknown)
    assert got == want


def test_the_builder_applies_its_table_and_knows_its_tool_calls() -> None:
    b = StreamBuilder(CallContext("t", "r"), TABLE, "error")
    assert (b.finish_reason("end"), b.finish_reason("other")) == ("stop", "error")
    b.tool_start("c1", "f")
    assert b.finish_reason("end") == "tool_calls"
    finished = b.finish(b.finish_reason("end"), "end", None)[-1]
    assert (finished.finish_reason, finished.raw_finish_reason) == ("tool_calls", "end")


def test_a_table_must_map_to_the_normalised_reasons() -> None:
    with pytest.raises(ValueError, match="finish reasons must map to"):
        StreamBuilder(CallContext("t", "r"), {"end": "done"})
    with pytest.raises(ValueError, match="finish reasons must map to"):
        StreamBuilder(CallContext("t", "r"), TABLE, "unknown")


def test_a_raw_value_that_is_not_a_string_is_unknown() -> None:
    assert StreamBuilder.normalise_finish_reason(["end"], TABLE, tool_calls=False, unknown="error") == "error"
