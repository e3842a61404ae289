"""hookstream-batch: ``hookstream batch INPUT.jsonl``, the command line of :func:`hookstream.batch`, and
:func:`batch_progress`, its progress display, and :data:`EXIT_INTERRUPTED`, its Ctrl-C exit status, for a
plugin that drives a batch itself (hookstream-provider-batch). The command is in :mod:`hookstream_batch.cli`;
names load on first use (PEP 562), so loading the plugin imports neither click nor rich.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .progress import batch_progress

__getattr__, __dir__ = lazy_attributes(__name__, {"batch_progress": "hookstream_batch.progress"})

__all__ = ["EXIT_INTERRUPTED", "batch_progress"]
__version__ = "0.1.0"

EXIT_INTERRUPTED = 130
"""The exit status of ``hookstream batch`` stopped with Ctrl-C (128 + SIGINT, what a shell reports), which a
plugin that takes the command over exits with too."""
