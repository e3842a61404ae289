"""Run one recorded response body through a provider adapter over real loopback HTTP (defined in the
shipped ``hookstream._replay_body``, which ``hookstream replay`` uses)."""

from __future__ import annotations

from .._replay_body import replay_body
from .provider_bodies import BASE_PATH

__all__ = ["BASE_PATH", "replay_body"]
