"""Who is asking: :class:`Principal` and the :data:`Authenticator` shape. The core names both (the
``hookstream_register_authenticators`` hook spec, :meth:`Registry.authenticator`); the server plugin
(``hookstream-server``) holds the built-in authenticators and the HTTP side.

Thread safety: a :class:`Principal` is immutable; an authenticator is called from every request thread
at once and must be thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["Authenticator", "Principal"]


def _non_empty_str(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{attribute.name} must be a non-empty str, not {value!r:.40}")


@attrs.frozen(slots=True)
class Principal:
    """An authenticated caller: ``id`` (a non-empty string: a user, a service, a JWT ``sub``) and the
    ``claims`` that came with it (a JWT's payload; empty for a static token). Threads a principal
    creates are its own (``docs/agui-server.md``, "What a principal can see"). Raises
    :class:`TypeError` at construction for an ``id`` that is not a non-empty string."""

    id: str = attrs.field(validator=_non_empty_str)
    claims: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)


Authenticator = Callable[[Mapping[str, Any]], "Principal | None"]
"""``authenticate(environ) -> Principal | None``: ``environ`` is the WSGI environ of one request
(PEP 3333); ``None`` means "not authenticated" (the server answers ``401``)."""
