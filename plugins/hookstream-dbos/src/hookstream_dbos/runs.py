"""Reading durable runs from the DBOS system database: :func:`list_runs` (``hookstream runs list``) and
:func:`export_run` (``hookstream runs export``: a run's model calls as a ``--record`` directory, so
``--model replay:DIR`` plays a production run back as a regression test).

These read through a :class:`dbos.DBOSClient` (no DBOS runtime is launched, no workflow is touched).
Thread safety: each call opens its own client; call them from any thread.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from .errors import DurableError
from .journal import RESUMABLE, WORKFLOW_NAME, default_url, recorded_steps, workflow_meta
from .waits import read_history

__all__ = ["RECORDING_FORMAT", "RunInfo", "export_run", "list_runs", "model_steps"]

RECORDING_FORMAT = "hookstream-recording/1"
"""The format of ``hookstream chat --record DIR`` directories (``docs/recording.md``)."""

_STATES = {"SUCCESS": "finished", "PENDING": "interrupted", "ENQUEUED": "resuming", "CANCELLED": "stopped",
           "ERROR": "failed", "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed"}
"""DBOS's workflow status -> the run's state as ``runs list`` shows it. ``interrupted``: its process
died mid-run; ``stopped``: it ended without an answer (an error, a cancel). Both resume. Read from the
journal instead: ``waiting`` (its last part ended waiting for approvals, unanswered yet) and ``expired``
(that wait ran out)."""

_COUNTED = re.compile(r"^(s\d+:)?(model_call|tool_call):")
_MODEL = re.compile(r"^(s\d+:)?model_call:")


@attrs.frozen(slots=True)
class RunInfo:
    """One durable run: ``id``, ``state`` (``finished``, ``waiting``, ``interrupted``, ``stopped``,
    ``resuming``, ``expired``, ``failed``), ``steps`` (journaled model and tool calls), ``started`` (UTC), ``model``
    (``PROVIDER:MODEL``), ``prompt`` (its first 200 characters), ``argv`` (the ``hookstream`` command line
    that started it, ``None`` for a run started from Python) and ``text`` (a finished run's answer)."""

    id: str
    state: str
    steps: int
    started: dt.datetime | None
    model: str
    prompt: str
    argv: list[str] | None
    text: str | None

    def as_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        d["started"] = self.started.isoformat() if self.started else None
        return d


@contextmanager
def _client(url: str | None) -> Iterator[Any]:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url or default_url())
    try:
        yield client
    finally:
        client.destroy()


def _info(status: Any, rows: list[tuple[str, Any]]) -> RunInfo:
    meta = workflow_meta(status)
    started = dt.datetime.fromtimestamp(status.created_at / 1000, dt.UTC) if status.created_at else None
    output = status.output if isinstance(status.output, dict) else {}
    argv = meta.get("argv")
    state = _STATES.get(status.status, status.status.lower())
    history = read_history(meta.get("answer"), rows)
    if output.get("expired") or (status.status in RESUMABLE and history.expired(time.time())):
        state = "expired"
    elif status.status in RESUMABLE and history.waiting:
        state = "waiting"
    return RunInfo(status.workflow_id, state, sum(1 for name, _ in rows if _COUNTED.match(name)), started,
                   str(meta.get("model", "")), str(meta.get("prompt", "")),
                   list(argv) if isinstance(argv, list) else None, output.get("text"))


def list_runs(url: str | None = None, *, limit: int | None = None, run_id: str | None = None) -> list[RunInfo]:
    """The durable runs in the system database at ``url`` (default :func:`~hookstream_dbos.default_url`),
    newest first (``limit`` at most; ``run_id``: that run only)."""
    if _missing_sqlite(url):
        return []
    with _client(url) as client:
        statuses = client.list_workflows(name=WORKFLOW_NAME, sort_desc=True, limit=limit,
                                         workflow_ids=[run_id] if run_id is not None else None)
        return [_info(s, recorded_steps(s.workflow_id, client)) for s in statuses]


def model_steps(run_id: str, url: str | None = None) -> list[dict[str, Any]]:
    """The journaled model calls of ``run_id`` in the run's order, across the runs that answered its
    waits (each the dict the plugin stored: ``body``,
    ``media_type``, ``provider``, ``model``, ``base_path``, ``request``). Raises :class:`DurableError`
    for an unknown id."""
    if _missing_sqlite(url):
        raise DurableError(f"no durable run {run_id!r} in {_shown(url)}")
    with _client(url) as client:
        if not client.list_workflows(workflow_ids=[run_id], name=WORKFLOW_NAME, load_input=False,
                                     load_output=False):
            raise DurableError(f"no durable run {run_id!r} in {_shown(url)}")
        rows = recorded_steps(run_id, client)
    # The journal's own order (DBOS's function ids): a wait's answering run numbers its steps from 1 again.
    return [output for name, output in rows if _MODEL.match(name) and isinstance(output, dict)]


def export_run(run_id: str, directory: str | os.PathLike[str], url: str | None = None, *,
               overwrite: bool = False) -> Path:
    """Write ``run_id``'s journaled model calls to ``directory`` as a recording (the format of
    ``hookstream chat --record``: ``manifest.json``, ``NNN-request.json``, ``NNN-response.sse``), so
    ``hookstream chat PROMPT --model replay:DIRECTORY`` (the same prompt and tools) replays the run with
    no network. Requests hold no header and no query string, so no secret. Raises
    :class:`DurableError` for an unknown id or a run with no model call, :class:`FileExistsError` when
    ``directory`` holds a recording and ``overwrite`` is false."""
    calls = model_steps(run_id, url)
    if not calls:
        raise DurableError(f"durable run {run_id!r} has no completed model call to export")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "manifest.json").exists():
        if not overwrite:
            raise FileExistsError(f"{out} already holds a recording")
        for old in out.glob("[0-9][0-9][0-9]-*"):
            old.unlink()
    first = calls[0]
    manifest: dict[str, Any] = {"format": RECORDING_FORMAT, "provider": first["provider"],
                                "model": first["model"], "base_path": first["base_path"], "calls": []}
    for index, entry in enumerate(calls, 1):
        request = {**entry["request"], "headers": {}}
        (out / f"{index:03d}-request.json").write_text(json.dumps(request, ensure_ascii=False, indent=1), "utf-8")
        (out / f"{index:03d}-response.sse").write_bytes(entry["body"])
        manifest["calls"].append({"request": f"{index:03d}-request.json", "response": f"{index:03d}-response.sse",
                                  "status": 200, "content_type": entry["media_type"]})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), "utf-8")
    return out


def _missing_sqlite(url: str | None) -> bool:
    """Whether ``url`` names a SQLite file that does not exist yet (no run was ever kept there)."""
    url = url or default_url()
    return url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).expanduser().exists()


def _shown(url: str | None) -> str:
    from .journal import redact_url

    return redact_url(url or default_url())
