"""gunicorn's arbiter hands a dead worker's runs over (``hookstream_serve_exited``) and must go on reaping and
forking whatever the system database does: against a PostgreSQL that accepts the TCP connection and never
answers (a socket that listens and never accepts or reads), the hook returns (the connect is bounded, and so
is the arbiter's wait for the hand-over), with a warning that never holds the database URL's password; the
runs are left to DBOS (the slot's next worker recovers them). A real PostgreSQL: the hand-over through the
bounded URL lists and hands as before; with the workflow table or the run's row locked by another session,
the hand-over's statement times out, its thread ends, and the run, still pending, is handed once the lock is gone."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookstream_dbos.journal import bounded_url, hand_over_left
from hookstream_dbos.serve import ServeDurable
from sqlalchemy.engine import make_url

sys.path.append(str(Path(__file__).resolve().parents[3] / "tests"))  # the core's test kits

from store_kit import postgres

HANG_GUARD = 120.0
"""Seconds after which the hook counts as hung (it returns within seconds; unbounded, it never does)."""
PASSWORD = "hunter2-not-in-any-log"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that completes the TCP handshake (the kernel's backlog) and then says nothing."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()  # the connections left in its backlog are reset: a late hand-over thread ends


def _exited(server: ServeDurable) -> threading.Event:
    """Call the hook as the arbiter does, on a thread of its own; the event is set once it returned."""
    returned = threading.Event()

    def arbiter() -> None:
        server.hookstream_serve_exited(None, 3)
        returned.set()

    threading.Thread(target=arbiter, daemon=True).start()
    return returned


def _no_password(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    out, err = capfd.readouterr()
    assert PASSWORD not in caplog.text + out + err
    assert all(PASSWORD not in str(r.args) for r in caplog.records)


def test_the_arbiter_never_hangs_on_a_silent_database(silent_port: int, caplog: pytest.LogCaptureFixture,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.WARNING)
    url = f"postgresql://app:{PASSWORD}@127.0.0.1:{silent_port}/app"
    returned = _exited(ServeDurable(url, "silent"))
    assert returned.wait(HANG_GUARD), "hookstream_serve_exited hung on a database that never answers"
    warned = [r.getMessage() for r in caplog.records if r.name == "hookstream_dbos"]
    assert any("slot 3 not handed over" in m and "app:***@127.0.0.1" in m for m in warned), warned
    _no_password(caplog, capfd)


def test_a_late_hand_over_is_left_behind(silent_port: int, caplog: pytest.LogCaptureFixture,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    # The URL's own connect_timeout and timeouts are kept (long ones here): the arbiter's wait bounds them still.
    caplog.set_level(logging.WARNING)
    url = (f"postgresql://app:{PASSWORD}@127.0.0.1:{silent_port}/app?connect_timeout=600"
           "&options=-c+statement_timeout%3D600000+-c+lock_timeout%3D0")
    assert bounded_url(url) == url
    returned = _exited(ServeDurable(url, "late", hand_over_wait=0.5))
    assert returned.wait(HANG_GUARD), "hookstream_serve_exited waited for a hand-over past its bound"
    warned = [r.getMessage() for r in caplog.records if r.name == "hookstream_dbos"]
    assert any("slot 3: the hand-over" in m and "took more than" in m for m in warned), warned
    _no_password(caplog, capfd)


def test_the_bounded_url_hands_over_on_a_real_postgresql() -> None:
    with postgres() as url:
        bounded = bounded_url(url)
        assert "connect_timeout=5" in bounded and bounded_url(bounded) == bounded
        assert bounded_url("sqlite:///x.sqlite") == "sqlite:///x.sqlite"
        # The system database as DBOS makes it (a client runs no migrations), in a process of its own: DBOS
        # is one per process. No run pending: none handed.
        subprocess.run([sys.executable, "-c", "import sys; from dbos import DBOS; DBOS(config={'name': "
                        "'hookstream-durable', 'system_database_url': sys.argv[1]}); DBOS.launch(); DBOS.destroy()",
                        url], check=True, timeout=HANG_GUARD)
        assert hand_over_left(url, "hookstream-serve-none-0", "hookstream-serve-none") == []


_PENDING = """\
import os, sys
from dbos import DBOS, SetWorkflowID
DBOS(config={"name": "hookstream-durable", "system_database_url": sys.argv[1], "executor_id": sys.argv[2],
             "application_version": "hookstream-durable-1"})

@DBOS.workflow(name="hookstream.durable_run")
def run() -> None:
    import threading
    threading.Event().wait()

DBOS.launch()
with SetWorkflowID(sys.argv[3]):
    DBOS.start_workflow(run)
os._exit(0)  # killed mid-run: the workflow stays PENDING under the executor id
"""


def _status(url: str, run_id: str) -> tuple[str, str | None]:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            row = conn.execute(sqlalchemy.text("SELECT status, queue_name FROM dbos.workflow_status "
                                               "WHERE workflow_uuid = :id"), {"id": run_id}).one()
    finally:
        engine.dispose()
    return row[0], row[1]


LOCKS = {
    # The listing waits: DBOS bounds it itself (observability_query_timeout_sec, which the hand-over sets).
    "table": "LOCK TABLE dbos.workflow_status IN ACCESS EXCLUSIVE MODE",
    # The listing reads, the resume's UPDATE waits: only the URL's lock_timeout bounds it.
    "row": "SELECT 1 FROM dbos.workflow_status WHERE workflow_uuid = 'run-locked' FOR UPDATE",
}


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_a_hand_over_blocked_on_a_lock_ends_and_the_run_is_handed_later(
        lock: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    """A database that takes the connection and then holds the statement (another session locks the
    workflow table, or the run's row): the hand-over's thread ends by itself (:func:`bounded_url`'s
    ``lock_timeout``), the hook warns without the password, the run stays ``PENDING``; once the lock is
    gone it is handed."""
    import sqlalchemy

    caplog.set_level(logging.WARNING)
    with postgres() as plain:
        # Trust auth ignores the password; it is in the URL all the same, for the log to leave out.
        url = make_url(plain).set(password=PASSWORD).render_as_string(hide_password=False)
        with sqlalchemy.create_engine(bounded_url(url).replace("postgresql://", "postgresql+psycopg://", 1)
                                      ).connect() as probe:  # the options reach the session
            assert probe.execute(sqlalchemy.text("SHOW lock_timeout")).scalar() == "10s"
            assert probe.execute(sqlalchemy.text("SHOW statement_timeout")).scalar() == "10s"
        subprocess.run([sys.executable, "-c", _PENDING, url, "hookstream-serve-locked-3", "run-locked"],
                       check=True, timeout=HANG_GUARD)
        assert _status(url, "run-locked") == ("PENDING", None)
        holder = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with holder.connect() as conn:
                conn.execute(sqlalchemy.text(LOCKS[lock]))
                # The arbiter's own wait outlasts the guard: only the hand-over's end returns the hook.
                returned = _exited(ServeDurable(url, "locked", hand_over_wait=10 * HANG_GUARD))
                assert returned.wait(HANG_GUARD), "the hand-over's thread hung on a locked table"
                conn.rollback()
        finally:
            holder.dispose()
        warned = [r.getMessage() for r in caplog.records if r.name == "hookstream_dbos"]
        assert any("slot 3 not handed over" in m and "***@" in m for m in warned), warned
        _no_password(caplog, capfd)
        assert _status(url, "run-locked") == ("PENDING", None)  # not lost: left for the slot's next holder
        assert hand_over_left(url, "hookstream-serve-locked-3", "hookstream-serve-locked") == ["run-locked"]
        assert _status(url, "run-locked") == ("ENQUEUED", "hookstream-serve-locked")
