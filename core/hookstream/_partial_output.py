"""The partial structured output while it streams: the output's text is fed, delta by delta, to one
:class:`~hookstream._partial_json.PartialJSONParser`, and each value that completes becomes one JSON Patch
(RFC 6902) ``add`` operation, published to AG-UI clients as a ``STATE_DELTA`` event.

Why JSON Patch ``add`` operations and not snapshots: a snapshot per delta re-serialises the whole object
each time (quadratic in the output); an ``add`` is written once per value, when it completes (containers
as empty ``{}``/``[]`` when they open), so the total cost is linear in the output. A string still
being streamed is not in the state yet (JSON Patch has no "append to a string" operation, and replacing
a growing string per delta would be quadratic again); it arrives whole when its closing quote does,
while the raw text streams as ``TEXT_MESSAGE_CONTENT`` (or ``TOOL_CALL_ARGS`` in the forced-tool form).

Paths are JSON Pointers (RFC 6901) under :data:`STATE_KEY` of the agent state (``/output/items/0/name``);
the first operation of each model call is ``add /output`` with the root container, which replaces what
an earlier (retried) answer left there.

Thread safety: one tracker per model call, fed by the thread that iterates the run.
"""

from __future__ import annotations

from typing import Any

from ._errors import PartialJSONError
from ._partial_json import PartialJSONParser

__all__ = ["STATE_KEY", "OutputTracker", "apply_patch", "pointer_token"]

STATE_KEY = "output"
"""The AG-UI state key the partial output is published under (``/output``)."""


def pointer_token(key: str) -> str:
    """``key`` escaped as one JSON Pointer reference token (RFC 6901 section 3: ``~`` -> ``~0``,
    ``/`` -> ``~1``)."""
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


class _RecordingParser(PartialJSONParser):
    """A partial JSON parser that also records an ``add`` operation for every value it puts in place."""

    __slots__ = ("_last", "_pointers", "_root", "ops")

    def __init__(self, root: str) -> None:
        super().__init__()
        self.ops: list[dict[str, Any]] = []
        self._root = root
        self._pointers: list[str] = []  # the pointer of each open container, parallel to the parser's stack
        self._last = root

    def _put(self, value: Any) -> None:
        stack = self._stack
        if not stack:
            path = self._root
        else:
            top = stack[-1]
            if isinstance(top, dict):
                key = self._keys[-1]
                path = self._pointers[-1] + "/" + pointer_token(key if key is not None else "")
            else:
                path = self._pointers[-1] + "/" + str(len(top))
        # A container is published empty: its members follow as their own operations, and the parser
        # keeps filling its own object in place, which must not change an event already sent.
        published = {} if isinstance(value, dict) else [] if isinstance(value, list) else value
        self.ops.append({"op": "add", "path": path, "value": published})
        self._last = path
        super()._put(value)

    def _open(self, container: dict[str, Any] | list[Any]) -> None:
        super()._open(container)  # calls _put, which sets _last to the container's pointer
        self._pointers.append(self._last)

    def _close_container(self) -> None:
        super()._close_container()
        self._pointers.pop()


class OutputTracker:
    """Feed the output's text deltas with :meth:`feed`; read :attr:`value` (the partial object) at any
    time and :meth:`text` at the end.

    :meth:`feed` returns the JSON Patch operations of the values that completed in that delta (often
    none). Text that cannot be JSON stops the tracking (the final validation reports it); it never
    raises. ``source`` says where the text comes from: ``"text"`` or a tool call id (forced-tool form).
    """

    __slots__ = ("_chunks", "_parser", "source")

    def __init__(self, source: str, root: str = "/" + STATE_KEY) -> None:
        self.source = source
        self._parser = _RecordingParser(root)
        self._chunks: list[str] = []

    def feed(self, delta: str) -> list[dict[str, Any]]:
        self._chunks.append(delta)
        parser = self._parser
        if parser.error is not None:
            return []
        try:
            parser.feed(delta)
        except PartialJSONError:
            return []
        ops = parser.ops
        if ops:
            parser.ops = []
        return ops

    @property
    def value(self) -> Any:
        """The partial object: containers as soon as they open, members once complete (``None`` before
        the first value)."""
        return self._parser.value

    @property
    def failed(self) -> bool:
        """Whether the text so far cannot be JSON."""
        return self._parser.error is not None

    def text(self) -> str:
        """All the text fed (joins the deltas: costs its length; read it once, at the end)."""
        return "".join(self._chunks)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def apply_patch(doc: Any, ops: list[Any]) -> Any:
    """Apply JSON Patch (RFC 6902) ``add``, ``replace`` and ``remove`` operations to ``doc`` in place;
    returns the document (a new one when an operation targets the root ``""``).

    Raises :class:`ValueError` for another operation, a malformed one or a path that does not exist
    (operations before it stay applied: a state delta is applied as far as it goes)."""
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise ValueError(f"not a JSON Patch operation: {op!r:.100}")
        kind, path = op.get("op"), op["path"]
        if kind not in ("add", "replace", "remove"):
            raise ValueError(f"unsupported JSON Patch operation {kind!r}")
        if path == "":
            if kind == "remove":
                raise ValueError("cannot remove the root")
            doc = op.get("value")
            continue
        if not path.startswith("/"):
            raise ValueError(f"a JSON Pointer starts with '/': {path!r:.100}")
        *parents, last = [_unescape(t) for t in path[1:].split("/")]
        target = doc
        try:
            for token in parents:
                target = target[int(token)] if isinstance(target, list) else target[token]
            if isinstance(target, list):
                index = len(target) if last == "-" else int(last)
                if kind == "add":
                    if not 0 <= index <= len(target):
                        raise IndexError(index)
                    target.insert(index, op.get("value"))
                elif kind == "replace":
                    target[index] = op.get("value")
                else:
                    del target[index]
            elif isinstance(target, dict):
                if kind == "add":
                    target[last] = op.get("value")
                elif kind == "replace":
                    if last not in target:
                        raise KeyError(last)
                    target[last] = op.get("value")
                else:
                    del target[last]
            else:
                raise TypeError(type(target).__name__)
        except (LookupError, TypeError, ValueError) as exc:
            raise ValueError(f"JSON Patch {kind} {path!r:.100}: no such location ({exc!r:.60})") from None
    return doc
