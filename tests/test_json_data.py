"""``hookstream.plugin.json_loads`` gives :func:`json.loads`'s value or error, with msgspec installed
(``hookstream[fast]``: msgspec decodes first) and without it (the standard library's scanner only)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hookstream._json_data import FAST, json_loads_stdlib
from hookstream.plugin import json_loads
from hookstream.testing.provider_bodies import PROVIDERS, provider_stream
from hypothesis import given, settings
from hypothesis import strategies as st

LOADERS = [json_loads, json_loads_stdlib]

EDGES = [
    # Values both decoders give.
    '{"a":1}', ' {"a": [1, 2.5, "x", true, false, null]} \n', '"\\ud83d\\ude00"', '"\\u0000\\/\\b"', '-0', '-0.0',
    "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "9007199254740993", "1E2", "1e-400",
    "18446744073709551615", "123456789012345678901234567890", "-9223372036854775809", '{"b":1,"a":2,"b":3}',
    "0." + "1" * 400, '"\u2028 caf\u00e9"',
    # Values only the standard library gives (msgspec refuses them): the standard library decides.
    '{"a":"\\ud800"}', '"\\udc00\\ud800"', "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1" * 400 + ".5",
    '"\udc80"',
    # Errors.
    "", "  ", "\ufeff{}", "[1,]", '"\x01"', "01", ".5", "1.5e", '"\\x"', "[1] x", '{"a":1}{}', "{", "nul", "1" * 5000,
]


def outcome(loads: Any, text: Any) -> tuple[str, Any]:
    """("ok", the value as a comparable tree) or ("error", its type and message)."""
    try:
        return ("ok", tree(loads(text)))
    except RecursionError:
        return ("error", "RecursionError")
    except Exception as exc:
        return ("error", (type(exc), str(exc)))


def tree(value: Any) -> Any:
    """The value with every type kept and floats as their repr (so NaN, -0.0 and 1 vs 1.0 compare)."""
    if isinstance(value, dict):
        return ("dict", [(k, tree(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [tree(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


@pytest.mark.parametrize("loads", LOADERS, ids=["json_loads", "stdlib"])
@pytest.mark.parametrize("text", EDGES)
def test_edge_cases_as_json_loads(loads: Any, text: str) -> None:
    assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize("loads", LOADERS, ids=["json_loads", "stdlib"])
def test_deep_nesting_fails_as_json_loads(loads: Any) -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize("text", [b"{}", bytearray(b"{}"), 5, None], ids=["bytes", "bytearray", "int", "None"])
def test_not_a_str_fails_as_the_stdlib_path(text: Any) -> None:
    assert outcome(json_loads, text) == outcome(json_loads_stdlib, text)
    assert outcome(json_loads, text)[0] == "error"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_payload_of_the_provider_streams(provider: str) -> None:
    payloads = [line[6:].decode() for event in provider_stream(provider).events for line in event.splitlines()
                if line.startswith(b"data: ")]
    assert payloads
    for text in payloads:
        assert outcome(json_loads, text) == outcome(json_loads_stdlib, text) == outcome(json.loads, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**130), max_value=2**130)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans(), st.sampled_from([None, 1]), st.integers(min_value=0, max_value=40))
def test_any_json_text_and_any_cut_of_it(value: Any, ascii_only: bool, indent: int | None, cut: int) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    for t in (text, text[:cut], text[cut:]):
        assert outcome(json_loads, t) == outcome(json_loads_stdlib, t) == outcome(json.loads, t)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip_to_the_same_float(x: float) -> None:
    for t in (repr(x), f"{x:.17e}", f"{x:.3e}"):
        assert outcome(json_loads, t) == outcome(json.loads, t)
    assert math.isfinite(json_loads(repr(x)))


def test_without_msgspec_json_loads_is_the_stdlib_path() -> None:
    code = ("import sys; sys.modules['msgspec'] = None\n"  # as if not installed: its import fails
            "from hookstream import plugin\n"
            "from hookstream._json_data import FAST, json_loads_stdlib\n"
            "assert not FAST and plugin.json_loads is json_loads_stdlib\n"
            "assert plugin.json_loads('{\"a\": [1, 2.5]}') == {'a': [1, 2.5]}\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_with_msgspec_json_loads_decodes_with_it() -> None:
    pytest.importorskip("msgspec")
    assert FAST and json_loads is not json_loads_stdlib
