"""Run one recorded response body through a provider adapter over real loopback HTTP (defined in the
shipped ``hookstream._replay_body``, which ``hookstream replay`` uses)."""

from __future__ import annotations

from .._replay_body import BASE_PATH, replay_body

__all__ = ["BASE_PATH", "replay_body"]
