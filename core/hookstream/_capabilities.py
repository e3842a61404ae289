"""What a model can do (:class:`ModelCapabilities`), in a module of its own: every provider plugin that
registers its models builds these at start-up, so it imports nothing but attrs (the prices, their decimal
arithmetic and genai-prices stay in :mod:`hookstream._prices`, loaded when a step is priced).

Thread safety: frozen values.
"""

from __future__ import annotations

import attrs

__all__ = ["ModelCapabilities"]


@attrs.frozen
class ModelCapabilities:
    """What a model can do, as a provider plugin registers it (``hookstream_register_models``).
    ``None`` means not known. ``context_window`` is in tokens (input and output together)."""

    vision: bool | None = None
    tools: bool | None = None
    reasoning: bool | None = None
    context_window: int | None = None
    description: str | None = None
