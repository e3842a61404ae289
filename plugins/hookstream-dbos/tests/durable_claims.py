"""The tool of the served claims test (``hookstream serve --durable --tool durable_claims:whoami``) and what
stands for an application that authorizes on its principal's claims: a stream factory that reads
``RunInput.principal.claims`` (here, each worker's factory wrapped as it starts serving, through the
server's ``hookstream_serve_process`` hook, tried first so it wraps before DBOS recovers a run there).

``whoami`` writes the claims of its run's principal to ``$DURABLE_KIT_DIR/claims-ATTEMPT.json``; its
first attempt then writes its worker's pid to ``whoami-running`` (the test's barrier: it SIGKILLs that
worker) and waits to be killed."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from hookstream import ToolContext, get_registry
from hookstream.plugin import hookimpl
from hookstream_dbos import attempt

_claims: dict[tuple[str, str], dict[str, Any]] = {}
_lock = threading.Lock()


class _ClaimsOfEachRun:
    @hookimpl(tryfirst=True)
    def hookstream_serve_process(self, app: Any, slot: int) -> None:
        factory = app.factory

        def start(run: Any) -> Any:
            with _lock:
                _claims[(run.thread_id, run.run_id)] = dict(run.principal.claims) if run.principal else {}
            return factory(run)

        object.__setattr__(app, "factory", start)  # the app is frozen: this test's stand-in for its own factory


get_registry().pm.register(_ClaimsOfEachRun(), name="durable-claims-test")


def _write(path: Path, text: str) -> None:
    path.with_suffix(".tmp").write_text(text, "utf-8")
    path.with_suffix(".tmp").rename(path)


def whoami(ctx: ToolContext) -> str:
    """Tell who the caller is."""
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    with _lock:
        claims = _claims.get((ctx.thread_id or "", ctx.run_id or ""), {})
    _write(folder / f"claims-{attempt()}.json", json.dumps(claims, sort_keys=True))
    if attempt() == 1:
        _write(folder / "whoami-running", str(os.getpid()))
        threading.Event().wait(600)  # killed here
    return f"{claims.get('sub')} of {claims.get('tenant')}"
