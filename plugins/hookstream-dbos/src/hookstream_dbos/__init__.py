"""hookstream-dbos: durable hookstream runs on DBOS Transact (``docs/durable.md``).

:class:`Durable` is the run plugin (registered as ``durable``: ``chat(..., plugins=[Durable("order-42")])``,
``plugins=[("durable", {"id": "order-42"})]``, ``hookstream chat ... --durable order-42``): the run is a
DBOS workflow identified by the id, each model call and each tool call a step. :func:`attempt` tells a tool
whether it is running again after a crash; :class:`RerunRefused` is what a tool that must not run twice
raises then. A run that ends waiting for approvals waits durably; :class:`AnswerRefused` and
:class:`NotWaitingError` are the answers it refuses. :func:`list_runs` and :func:`export_run` read the
journal (``hookstream runs list``, ``hookstream runs export``).

Names load on first use (PEP 562): every ``hookstream`` process loads the entry point
(``hookstream_dbos.plugin``), and most never import DBOS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .durable import Durable, attempt, request_key
    from .errors import (
        AnswerRefused,
        DurableError,
        DurableSettingsError,
        DurableStoreError,
        NotWaitingError,
        RerunRefused,
        RunBusyError,
        RunDivergedError,
    )
    from .journal import default_url
    from .runs import RunInfo, export_run, list_runs

__all__ = ["AnswerRefused", "Durable", "DurableError", "DurableSettingsError", "DurableStoreError", "NotWaitingError",
           "RerunRefused", "RunBusyError", "RunDivergedError", "RunInfo", "attempt", "default_url", "export_run",
           "list_runs", "request_key"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_attributes(__name__, {
    **{name: "hookstream_dbos.durable" for name in ("Durable", "attempt", "request_key")},
    **{name: "hookstream_dbos.errors" for name in ("AnswerRefused", "DurableError", "DurableSettingsError",
                                                   "DurableStoreError", "NotWaitingError", "RerunRefused",
                                                   "RunBusyError", "RunDivergedError")},
    "default_url": "hookstream_dbos.journal",
    **{name: "hookstream_dbos.runs" for name in ("RunInfo", "export_run", "list_runs")},
})
