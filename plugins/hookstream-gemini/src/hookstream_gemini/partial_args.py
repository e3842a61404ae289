"""Reassemble Vertex AI streamed function-call arguments (``FunctionCall.partialArgs``) into one object.

With ``toolConfig.functionCallingConfig.streamFunctionCallArguments`` Vertex AI sends a function call
as several parts: ``{name, willContinue: true}``, then parts whose ``partialArgs`` list entries
``{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}``, then a closing
``functionCall: {}``. A string value may arrive in several pieces for the same ``jsonPath``; they are
concatenated.

Source: Vertex AI API reference, ``FunctionCall`` (``partialArgs``, ``willContinue``) and ``PartialArg``
(``jsonPath`` is an RFC 9535 JSONPath such as ``$.foo.bar[0].data``).

Only the singular paths the API emits are accepted: ``$`` followed by ``.name``, ``['name']`` /
``["name"]`` and ``[index]`` segments. JSONPath libraries query documents; none builds one from paths,
so this small reader is ours.

Thread safety: one assembler per streamed call, used by the thread that parses the stream.
"""

from __future__ import annotations

import re
from typing import Any

from hookstream.errors import MalformedChunkError

__all__ = ["PartialArgs", "parse_json_path"]

_SEGMENT = re.compile(
    r"""\.(?P<dot>[A-Za-z_][A-Za-z0-9_\-]*)"""
    r"""|\[(?P<index>\d+)\]"""
    r"""|\['(?P<sq>(?:[^'\\]|\\.)*)'\]"""
    r"""|\["(?P<dq>(?:[^"\\]|\\.)*)"\]"""
)
_UNESCAPE = re.compile(r"\\(.)")


def parse_json_path(path: str) -> list[str | int]:
    """The segments of a singular JSONPath: ``"$.a['b c'][2]"`` -> ``["a", "b c", 2]``.

    Raises :class:`~hookstream.errors.MalformedChunkError` for anything else (filters, wildcards...).
    """
    if not path.startswith("$"):
        raise MalformedChunkError(f"partialArgs jsonPath {path!r} does not start with '$'")
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if m is None:
            raise MalformedChunkError(f"unsupported partialArgs jsonPath {path!r}")
        if m.group("index") is not None:
            out.append(int(m.group("index")))
        else:
            name = m.group("dot") or m.group("sq") or m.group("dq") or ""
            out.append(_UNESCAPE.sub(r"\1", name) if m.group("dot") is None else name)
        pos = m.end()
    return out


class PartialArgs:
    """Collects ``partialArgs`` entries; :meth:`value` builds the arguments object once, at the end.

    String pieces are kept in lists and joined once, so the cost is linear in the argument size.
    """

    __slots__ = ("_order", "_values")

    def __init__(self) -> None:
        self._values: dict[str, list[Any]] = {}
        self._order: list[str] = []

    def add(self, entry: Any) -> None:
        """Add one ``PartialArg`` object. Raises :class:`MalformedChunkError` when it is not one."""
        if not isinstance(entry, dict) or not isinstance(entry.get("jsonPath"), str):
            raise MalformedChunkError(f"partialArgs entry without a jsonPath: {entry!r}"[:200])
        path = entry["jsonPath"]
        if "stringValue" in entry:
            if not isinstance(entry["stringValue"], str):
                raise MalformedChunkError(f"partialArgs stringValue is not a string: {entry!r}"[:200])
            value: Any = _Str(entry["stringValue"])
        elif "numberValue" in entry:
            value = entry["numberValue"]
        elif "boolValue" in entry:
            value = entry["boolValue"]
        elif "nullValue" in entry:
            value = None
        else:
            return  # a bare willContinue marker carries no value
        pieces = self._values.get(path)
        if pieces is None:
            self._values[path] = [value]
            self._order.append(path)
        elif isinstance(value, _Str) and pieces and isinstance(pieces[-1], _Str):
            pieces.append(value)
        else:
            self._values[path] = [value]

    def value(self) -> dict[str, Any]:
        """The reassembled arguments object. Raises :class:`MalformedChunkError` when paths conflict."""
        root: dict[str, Any] = {}
        for path in self._order:
            pieces = self._values[path]
            if isinstance(pieces[0], _Str):
                leaf: Any = "".join(pieces)
            else:
                leaf = pieces[-1]
            _set(root, parse_json_path(path), leaf, path)
        return root


class _Str(str):
    """Marks a string piece (as opposed to a number/bool/null value) while collecting."""

    __slots__ = ()


def _set(root: dict[str, Any], segments: list[str | int], leaf: Any, path: str) -> None:
    if not segments:
        raise MalformedChunkError(f"partialArgs jsonPath {path!r} names the whole arguments object")
    node: Any = root
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        nxt: Any = leaf if last else ([] if isinstance(segments[i + 1], int) else {})
        if isinstance(seg, int):
            if not isinstance(node, list):
                raise MalformedChunkError(f"partialArgs jsonPath {path!r} indexes a non-array")
            while len(node) <= seg:
                node.append(None)
            if last or node[seg] is None:
                node[seg] = nxt
            node = node[seg]
        else:
            if not isinstance(node, dict):
                raise MalformedChunkError(f"partialArgs jsonPath {path!r} names a field of a non-object")
            if last or seg not in node:
                node[seg] = nxt
            node = node[seg]
