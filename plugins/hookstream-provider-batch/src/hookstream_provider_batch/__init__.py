"""``hookstream batch --provider-batch``: a batch through the provider's own batch API (``docs/batch.md``).
The driver loads on first use (PEP 562): loading the plugin does not load it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from ._provider_batch import STATE_SUFFIX, NoBatchAPIError, dry_run, pending_count, run_provider_batch, state_path

_NAMES = ("STATE_SUFFIX", "NoBatchAPIError", "dry_run", "pending_count", "run_provider_batch", "state_path")
__getattr__, __dir__ = lazy_attributes(__name__, dict.fromkeys(_NAMES, "hookstream_provider_batch._provider_batch"))

__all__ = ["STATE_SUFFIX", "NoBatchAPIError", "dry_run", "pending_count", "run_provider_batch", "state_path"]
