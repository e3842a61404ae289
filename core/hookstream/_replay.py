"""Entry point of the ``replay`` provider (``replay = hookstream._replay`` in the ``hookstream`` group).

It only names :class:`hookstream._replay_provider.ReplayProvider`, imported when a run first asks for
``replay:DIRECTORY``: every hookstream process loads this entry point, and the provider's imports
(requests, the transport) are for the runs that replay a recording.
"""

from __future__ import annotations

from ._hookspecs import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    register("replay", "hookstream._replay_provider:ReplayProvider")
