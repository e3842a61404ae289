"""Messages to JSON text and back, for conversation stores that keep them outside the process.

:func:`dumps_message` gives one JSON object per :class:`~hookstream.Message`:
``{"role", "parts": [{"kind": ..., ...}], "id"}``; every part carries its ``kind`` (the discriminator
:func:`loads_message` dispatches on), :class:`~hookstream.FilePart` bytes are standard base64 (RFC 4648
section 4). Field names are the attrs field names. The conversion is cattrs' (a converter with a hook
for ``bytes`` and one for the part union), not hand-written per class.

Raises :class:`ValueError` from :func:`loads_message` for text that is not such an object (an unknown
part ``kind``, a missing field).

Thread safety: the converter is built once at import and only read afterwards.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import cattrs

from .._messages import FilePart, Message, Part, ReasoningPart, SourcePart, TextPart, ToolCallPart, ToolResultPart

__all__ = ["dumps_message", "loads_message"]

_PART_CLASSES: dict[str, type[Any]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool-call": ToolCallPart,
    "tool-result": ToolResultPart,
    "file": FilePart,
    "source": SourcePart,
}

_converter = cattrs.Converter()
_converter.register_unstructure_hook(bytes, lambda b: base64.b64encode(b).decode("ascii"))
_converter.register_structure_hook(bytes, lambda v, _: base64.b64decode(v, validate=True))


def _structure_part(value: Any, _: Any) -> Part:
    if not isinstance(value, dict) or value.get("kind") not in _PART_CLASSES:
        raise ValueError(f"not a message part: {value!r:.200}")
    part: Part = _converter.structure(value, _PART_CLASSES[value["kind"]])
    return part


_converter.register_structure_hook(Part, _structure_part)


def dumps_message(message: Message) -> str:
    """One message as compact JSON text (see the module docstring). Raises :class:`TypeError` when a
    tool output or provider metadata is not JSON serialisable."""
    doc = _converter.unstructure(message)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def loads_message(text: str) -> Message:
    """The message :func:`dumps_message` wrote. Raises :class:`ValueError`."""
    try:
        message: Message = _converter.structure(json.loads(text), Message)
    except (cattrs.BaseValidationError, KeyError, TypeError) as exc:
        raise ValueError(f"not a stored message: {exc}") from None
    return message
