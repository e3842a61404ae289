"""The ``budget`` run plugin: limits (input tokens, cost in USD) checked before each model request is
sent. ``chat(..., plugins=[("budget", {"max_input_tokens": 50_000})])`` or ``plugins=[Budget(...)]``; see
``docs/tokens.md``. :class:`Budget` loads on first use (PEP 562): loading the plugin does not load it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from ._budget import Budget

__getattr__, __dir__ = lazy_attributes(__name__, {"Budget": "hookstream_budget._budget"})

__all__ = ["Budget"]
