"""JSON decoding of one SSE ``data`` payload: :func:`json.loads`'s values and errors, faster.

Providers send each event's data as one compact JSON text. :func:`json.loads` reaches the C scanner
through two Python calls and two regular-expression matches for the whitespace around the value;
on a stream of short events that is more than half its cost (about 1.6 µs of 2.3 per Anthropic text
event, measured for issue 17). :func:`json_loads_stdlib` calls the scanner directly and hands anything
else (whitespace around the value, trailing text, no value) to :func:`json.loads`, so its results and
errors are exactly those of :func:`json.loads`.

With msgspec installed (``pip install hookstream[fast]``), :func:`json_loads` decodes with msgspec's
JSON decoder first (about 0.4 µs less per Anthropic text event, 0.7 µs per OpenAI Chat chunk) and
hands every text msgspec does not decode to :func:`json_loads_stdlib`. msgspec decodes to the same
Python objects as :func:`json.loads` (``dict``, ``list``, ``str``, ``int`` of any size, ``float``,
``bool``, ``None``; a repeated key keeps its first place and its last value) and refuses what the
standard library accepts beyond JSON (``NaN``, ``Infinity``, numbers out of the ``float`` range, lone
surrogates), so those, and every invalid text, get the standard library's value or its
:class:`json.JSONDecodeError` (``tests/test_json_data.py`` holds both paths to that). Without msgspec
:func:`json_loads` is :func:`json_loads_stdlib`.

Thread safety: pure functions (the scanner clears its key memo after every call; msgspec's decoder
keeps no state between calls; two threads that both make the first call each import it and bind a decoder,
and either one serves every later call).
"""

from __future__ import annotations

import importlib.util
import json
import json.scanner
from collections.abc import Callable
from typing import Any, cast

__all__ = ["FAST", "json_loads", "json_loads_stdlib"]

# The scanner json.loads uses (JSONDecoder.scan_once), with json.loads's defaults.
# typeshed types make_scanner's context as the C scanner's own type; the stdlib passes a JSONDecoder.
_scan_once = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))


def json_loads_stdlib(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same :class:`json.JSONDecodeError` (a ``ValueError``)."""
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:  # no value at the start (e.g. leading whitespace): json.loads decides
        return json.loads(text)
    if end != len(text):  # trailing whitespace or extra data: json.loads accepts or rejects it
        return json.loads(text)
    return value


def _first_decode(text: str) -> Any:
    """msgspec's decoder, imported on the first call (a process that decodes no provider event, such as
    ``hookstream --version``, or one that decodes a few, such as ``hookstream replay``, does not pay
    its import: about 8 ms of CPU, measured for issue 39), then used for ``text``."""
    global _decode
    try:
        import msgspec.json

        _decode = msgspec.json.Decoder().decode
    except ImportError:  # found but not importable: every text goes to the standard library
        _decode = json_loads_stdlib
    return _decode(text)


_decode: Callable[[str], Any] = _first_decode


if importlib.util.find_spec("msgspec") is not None:

    def json_loads(text: str) -> Any:
        """``json.loads(text)``: the same value, or the same :class:`json.JSONDecodeError` (a ``ValueError``)."""
        if type(text) is str:  # msgspec also decodes bytes, which json_loads_stdlib refuses
            try:
                return _decode(text)
            # msgspec's DecodeError and ValidationError are ValueErrors, and so is the UnicodeEncodeError
            # of a str with a lone surrogate; RecursionError: nesting deeper than msgspec goes.
            except (ValueError, RecursionError):
                pass
        return json_loads_stdlib(text)

else:
    json_loads = json_loads_stdlib


FAST = json_loads is not json_loads_stdlib
"""Whether :func:`json_loads` decodes with msgspec (installed: ``hookstream[fast]``; imported on the first
decode)."""
