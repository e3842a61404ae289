"""The event dispatch tables: each handler is typed for the event class it is registered under.

The tables are typed ``Callable[[Owner, Any], ...]`` (one dict lookup and one call per event), so mypy
cannot check that a handler takes the class it is keyed by; this test reads the annotations instead.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

import pytest
from hookstream._cli import live, render
from hookstream._processing import processor as _processor
from hookstream._stream import accumulate as _accumulate
from hookstream_server import ui_message_stream as _ui_message_stream


def _accepted(handler: Callable[..., Any]) -> set[type]:
    hints = typing.get_type_hints(handler)
    hints.pop("return", None)
    (annotation,) = hints.values()  # self is not annotated: the one hint is the event's
    if isinstance(annotation, types.UnionType):
        return set(typing.get_args(annotation))
    return {annotation}


@pytest.mark.parametrize("table", [
    _processor._HANDLERS, _accumulate._HANDLERS, live._LIVE_HANDLERS, live._PLAIN_HANDLERS,
    _ui_message_stream._CHUNK_HANDLERS, render._RENDER_HANDLERS,
], ids=["processor", "accumulate", "live", "plain", "ui_message_stream", "render"])
def test_every_handler_takes_the_event_class_it_is_keyed_by(table: dict[type, Callable[..., Any]]) -> None:
    wrong = {cls.__name__: handler.__qualname__ for cls, handler in table.items() if cls not in _accepted(handler)}
    assert wrong == {}


def test_processor_handles_every_event_it_documents() -> None:
    names = {cls.__name__ for cls in _processor._HANDLERS}
    assert names >= {"TextMessageContent", "ToolCallArgs", "ToolCallStart", "ToolCallEnd", "ToolCallResult",
                     "ReasoningMessageContent", "ReasoningEncryptedValue", "RunFinished", "RunError", "Custom"}
