"""Temporary bridge to the StreamBuilder output methods of issue 12 (``source``, ``file``, ``raw``)
and ``Usage.cache_write_tokens``, for a core that does not have them yet.

MERGE NOTE (delete this module once the core has ``StreamBuilder.source/file/raw``,
``finish(..., response_id=, model=)`` and ``Usage.cache_write_tokens``): replace
``emit_source(b, p)`` with ``b.source(p)``, ``emit_file(b, p)`` with ``b.file(p)``,
``emit_raw(b, e, s)`` with ``b.raw(e, s)``, ``emit_finish(b, ...)`` with ``b.finish(...)`` and
``make_usage(...)`` with ``Usage(...)``. Each helper calls the real method when the builder has it,
so after the merge this module is already a pass-through.

Without the real methods: a source becomes ``CUSTOM`` ``source`` and a file ``CUSTOM`` ``file`` with
the camelCase wire value the core's payload classes read (``{"id", "sourceType", "url"?, "title"?,
"citedText"?, "startIndex"?, "endIndex"?, "documentIndex"?, "providerMetadata"?}`` and
``{"mediaType", "data"? (base64) | "url"?, "filename"?, "providerMetadata"?}``); an event the
adapter does not understand is counted in :data:`UNKNOWN_EVENTS` and skipped.
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import attrs
from hookstream.plugin import BaseEvent, Custom, FilePart, SourcePart, StreamBuilder, Usage

__all__ = ["UNKNOWN_EVENTS", "emit_file", "emit_finish", "emit_raw", "emit_source", "make_usage"]

UNKNOWN_EVENTS = itertools.count()
"""Provider events skipped because the core has no ``StreamBuilder.raw`` yet (``next()`` counts one)."""


def _compact(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


def emit_source(builder: StreamBuilder, part: SourcePart) -> list[BaseEvent]:
    """``builder.source(part)``, or the equivalent ``CUSTOM`` ``source`` event."""
    method = getattr(builder, "source", None)
    if method is not None:
        return list(method(part))
    return [
        Custom(
            "source",
            _compact(
                {
                    "id": part.id,
                    "sourceType": part.source_type,
                    "url": part.url,
                    "title": part.title,
                    "citedText": part.cited_text,
                    "startIndex": part.start_index,
                    "endIndex": part.end_index,
                    "documentIndex": part.document_index,
                    "providerMetadata": part.provider_metadata,
                }
            ),
        )
    ]


def emit_file(builder: StreamBuilder, part: FilePart) -> list[BaseEvent]:
    """``builder.file(part)``, or the equivalent ``CUSTOM`` ``file`` event."""
    method = getattr(builder, "file", None)
    if method is not None:
        return list(method(part))
    value = {
        "mediaType": part.media_type,
        "data": part.base64() if part.data is not None else None,
        "url": part.url,
        "filename": part.filename,
        "providerMetadata": part.provider_metadata,
    }
    return [Custom("file", _compact(value))]


def emit_raw(builder: StreamBuilder, event: Any, source: str) -> list[BaseEvent]:
    """``builder.raw(event, source)`` (AG-UI ``RAW``), or count the event and emit nothing."""
    method = getattr(builder, "raw", None)
    if method is not None:
        return list(method(event, source))
    next(UNKNOWN_EVENTS)
    return []


_HAS_CACHE_WRITE = "cache_write_tokens" in attrs.fields_dict(Usage)


def make_usage(*, cache_write_tokens: int | None = None, **counts: int | None) -> Usage:
    """``Usage(**counts, cache_write_tokens=...)``; the write count is left out on a core without it."""
    if _HAS_CACHE_WRITE:
        counts["cache_write_tokens"] = cache_write_tokens
    return Usage(**counts)


_FINISH_TAKES_IDS = "response_id" in inspect.signature(StreamBuilder.finish).parameters


def emit_finish(
    builder: StreamBuilder,
    finish_reason: str | None,
    raw_finish_reason: str | None,
    usage: Usage | None,
    metadata: dict[str, Any] | None = None,
    *,
    response_id: str | None = None,
    model: str | None = None,
) -> list[BaseEvent]:
    """``builder.finish(...)`` with ``response_id`` and ``model`` where the core takes them."""
    if _FINISH_TAKES_IDS:
        finish: Any = builder.finish  # the newer signature; Any keeps mypy quiet on the older core
        return list(finish(finish_reason, raw_finish_reason, usage, metadata, response_id=response_id, model=model))
    return builder.finish(finish_reason, raw_finish_reason, usage, metadata)
