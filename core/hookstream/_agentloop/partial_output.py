"""The partial structured output while it streams: the output's text is fed, delta by delta, to one
:class:`~hookstream._processing.partial_json.PartialJSONParser`, and each value that completes becomes one JSON Patch
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

from .._errors import PartialJSONError
from .._processing.partial_json import PartialJSONParser

__all__ = ["PUBLISH_DEPTH", "STATE_KEY", "OutputTracker", "apply_patch", "pointer_token"]

STATE_KEY = "output"
"""The AG-UI state key the partial output is published under (``/output``)."""


def pointer_token(key: str) -> str:
    """``key`` escaped as one JSON Pointer reference token (RFC 6901 section 3: ``~`` -> ``~0``,
    ``/`` -> ``~1``)."""
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


PUBLISH_DEPTH = 2
"""Containers nested at most this deep under the root (the root is depth 0) are published when they open
and then member by member; a container deeper than that is published whole when it closes."""


class _RecordingParser(PartialJSONParser):
    """A partial JSON parser that also records a JSON Patch ``add`` for each value as it becomes known:
    scalars when they complete, containers at depth < :data:`PUBLISH_DEPTH` (the root and its direct
    members) empty when they open (their members follow one by one), and a container at depth
    :data:`PUBLISH_DEPTH` whole when it closes (the values inside it add nothing on their own).

    Why whole at that depth: a client re-renders on each ``STATE_DELTA``, and a list of records
    published field by field costs an operation (and a render) per scalar; one per record keeps the
    work and the event count proportional to the records, while a small object still fills in member by
    member. A closed container is never touched by the parser again, so it is published as it is."""

    __slots__ = ("_pointers", "_root", "ops")

    def __init__(self, root: str) -> None:
        super().__init__()
        self.ops: list[dict[str, Any]] = []
        self._root = root
        # The pointer of each open container up to PUBLISH_DEPTH, parallel to the parser's stack.
        self._pointers: list[str] = []

    def _pointer(self) -> str:
        """The pointer of the value being put (called only for values at depth <= PUBLISH_DEPTH)."""
        stack = self._stack
        if not stack:
            return self._root
        top = stack[-1]
        if type(top) is dict:
            key = self._keys[-1] or ""
            if "~" in key or "/" in key:
                key = pointer_token(key)
            return self._pointers[-1] + "/" + key
        return self._pointers[-1] + "/" + str(len(top))

    def _put(self, value: Any) -> None:
        # Hot: once per JSON value of the output. Plain type() tests (JSON values are exact types).
        depth = len(self._stack)
        if depth <= PUBLISH_DEPTH:
            kind = type(value)
            if kind is dict or kind is list:
                path = self._pointer()
                self._pointers.append(path)  # _open pushes the container right after this _put
                if depth < PUBLISH_DEPTH:
                    # Published empty: its members follow as their own operations, and the parser keeps
                    # filling its own object, which must not change an event already sent.
                    self.ops.append({"op": "add", "path": path, "value": {} if kind is dict else []})
            else:
                self.ops.append({"op": "add", "path": self._pointer(), "value": value})
        super()._put(value)

    def _close_container(self) -> None:
        depth = len(self._stack) - 1  # of the container closing
        if depth <= PUBLISH_DEPTH:
            path = self._pointers.pop()
            if depth == PUBLISH_DEPTH:
                self.ops.append({"op": "add", "path": path, "value": self._stack[-1]})
        super()._close_container()


class OutputTracker:
    """Feed the output's text deltas with :meth:`feed`; read :attr:`value` (the partial object) at any
    time.

    :meth:`feed` returns the JSON Patch operations of what became known in that delta (often none).
    Text that cannot be JSON stops the tracking (the final validation reports it); it never raises.
    ``source`` says where the text comes from: ``"text"`` or a tool call id (forced-tool form). The
    text itself is not kept here: the step's accumulator already keeps it.
    """

    __slots__ = ("_parser", "source")

    def __init__(self, source: str, root: str = "/" + STATE_KEY) -> None:
        self.source = source
        self._parser = _RecordingParser(root)

    def feed(self, delta: str) -> list[dict[str, Any]]:
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
        """The partial object, current after every delta: containers as soon as they open, members once
        complete (``None`` before the first value). Finer than the published operations below
        :data:`PUBLISH_DEPTH`."""
        return self._parser.value

    @property
    def failed(self) -> bool:
        """Whether the text so far cannot be JSON."""
        return self._parser.error is not None


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
                _patch_list(target, kind, last, op.get("value"))
            elif isinstance(target, dict):
                _patch_dict(target, kind, last, op.get("value"))
            else:
                raise TypeError(type(target).__name__)
        except (LookupError, TypeError, ValueError) as exc:
            raise ValueError(f"JSON Patch {kind} {path!r:.100}: no such location ({exc!r:.60})") from None
    return doc


def _patch_list(target: list[Any], kind: str, last: str, value: Any) -> None:
    """One operation on the array member ``last`` (an index, or ``-`` for the end).
    Raises :class:`LookupError` or :class:`ValueError` when that member does not exist."""
    index = len(target) if last == "-" else int(last)
    if kind == "add":
        if not 0 <= index <= len(target):
            raise IndexError(index)
        target.insert(index, value)
    elif kind == "replace":
        target[index] = value
    else:
        del target[index]


def _patch_dict(target: dict[str, Any], kind: str, last: str, value: Any) -> None:
    """One operation on the object member ``last``. Raises :class:`KeyError` when it does not exist."""
    if kind == "add":
        target[last] = value
    elif kind == "replace":
        if last not in target:
            raise KeyError(last)
        target[last] = value
    else:
        del target[last]
