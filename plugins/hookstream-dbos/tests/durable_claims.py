"""The tool of the served claims test (``hookstream serve --durable --tool durable_claims:whoami``), standing for
an application tool that authorizes on its principal's claims: it reads them as ``ctx.principal.claims``
(:attr:`hookstream.ToolContext.principal`), in the first run and in the recovered one.

``whoami`` writes the claims of its run's principal to ``$DURABLE_KIT_DIR/claims-ATTEMPT.json``; its
first attempt then writes its worker's pid to ``whoami-running`` (the test's barrier: it SIGKILLs that
worker) and waits to be killed."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from hookstream import ToolContext
from hookstream_dbos import attempt


def _write(path: Path, text: str) -> None:
    path.with_suffix(".tmp").write_text(text, "utf-8")
    path.with_suffix(".tmp").rename(path)


def whoami(ctx: ToolContext[Any]) -> str:
    """Tell who the caller is."""
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    claims = dict(ctx.principal.claims) if ctx.principal is not None else {}
    _write(folder / f"claims-{attempt()}.json", json.dumps(claims, sort_keys=True))
    if attempt() == 1:
        _write(folder / "whoami-running", str(os.getpid()))
        threading.Event().wait(600)  # killed here
    return f"{claims.get('sub')} of {claims.get('tenant')}"
