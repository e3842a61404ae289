"""Entry point of the ``replay`` provider (``replay = hookstream_replay.plugin`` in the ``hookstream`` group).

It only names :class:`hookstream_replay.provider.ReplayProvider`, imported when a run first asks for
``replay:DIRECTORY``: every hookstream process loads this entry point, and the provider's imports
(requests, the transport) are for the runs that replay a recording.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    from hookstream.plugin import ProviderRegistrar


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    register("replay", "hookstream_replay.provider:ReplayProvider")
