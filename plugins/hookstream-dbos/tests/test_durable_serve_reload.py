"""``hookstream serve --durable`` reloaded (gunicorn's ``HUP``, a deploy) while a run is in a blocked tool:
gunicorn starts the new workers (under other slots) before the old ones stop gracefully; the old worker
that streams the run hands it to the live workers as it stops, a new one recovers it, and the client
that reconnects to the resume route gets every event once (the machinery of ``test_durable_serve``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_durable_run import db_url  # noqa: F401  (a fixture durable_db takes)
from test_durable_serve import (
    WAIT,
    _assert_one_run,
    _frames,
    _resumed,
    _stopped_in_tool_b,
    _until,
    durable_db,  # noqa: F401  (the fixture)
    scripted_server,
    serve,
    thread_store,
)


def _new_workers(arbiter: int, old: set[int], count: int) -> None:
    """Wait until ``arbiter`` has ``count`` children that are not in ``old`` (the reload's new workers)."""
    import psutil

    _until("the reload's new workers' start",
           lambda: len({p.pid for p in psutil.Process(arbiter).children()} - old) >= count)


@pytest.mark.parametrize("kill", [False, True], ids=["graceful", "killed-during-reload"])
def test_a_reload_hands_the_old_workers_run_to_a_new_worker(durable_db: str, tmp_path: Path,  # noqa: F811
                                                            kill: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``killed-during-reload``: the old worker is SIGKILLed once the new workers run, before its graceful
    stop hands its run over; no replacement takes its slot, and the arbiter hands the run over instead.
    The old worker's stop is held (``$DURABLE_KIT_HOLD_STOP``) so that it is still there, its run not
    handed, however late the kill comes after gunicorn's 10 s graceful wait (only gunicorn's 120 s
    heartbeat timeout would end it first)."""
    import psutil

    if kill:
        monkeypatch.setenv("DURABLE_KIT_HOLD_STOP", "1")  # serve's processes inherit it

    folder = tmp_path / "run"
    folder.mkdir()
    store = thread_store(durable_db, tmp_path)
    thread_id, run_id = "thread-6", f"run-{uuid.uuid4().hex}"
    arbiter: list[int] = []
    old: list[int] = []  # the worker that ran the run first
    with scripted_server() as model, serve(model.url, store, folder, "--durable", "--durable-db", durable_db,
                                           "--durable-name", "reload", pid=arbiter) as base:

        def reload(pid: int) -> None:
            old.append(pid)
            workers = {p.pid for p in psutil.Process(arbiter[0]).children()}
            os.kill(arbiter[0], signal.SIGHUP)  # new workers (slots 2 and 3), then the old ones stop gracefully
            if kill:
                _new_workers(arbiter[0], workers, 2)
                os.kill(pid, signal.SIGKILL)  # in its graceful wait, or held before its hand-over

        before = _stopped_in_tool_b(base, folder, thread_id, run_id, reload)

        after: list[tuple[str, dict[str, Any]]] = []
        with _resumed(base, thread_id, run_id, before[-1][0]) as again:
            gave_up = threading.Event()

            def give_up() -> None:  # the route keeps a stream alive: end the one of a run never recovered
                gave_up.set()
                again.close()

            bound = threading.Timer(WAIT, give_up)
            bound.start()
            with contextlib.suppress(AttributeError):  # the read of a stream closed under it
                _frames(again, after)
            bound.cancel()
        assert not gave_up.is_set(), f"no new worker recovered the run within {WAIT:.0f} s: {after}"
        _assert_one_run(before + after, run_id)
        assert len(model.requests) == 3
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "tool_b 1", "tool_b 2"]
        with pytest.raises(ProcessLookupError):  # the old worker is gone: a new one finished the run
            os.kill(old[0], 0)
