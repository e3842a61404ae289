"""The journal of a durable run on DBOS Transact: one DBOS workflow per run id, one DBOS step per
completed model call and tool call.

The hookstream engine drives a run on the thread that iterates it (the consumer's), and DBOS steps can
only be taken inside a workflow function. So each open run has a :class:`Bridge`: its workflow function
(``hookstream.durable_run``, started on DBOS's own threads with the run id as workflow id) takes the
steps the run's hooks hand it, in the order they complete, through an in-process queue; the hooks wait for
DBOS to have written each step before the engine goes on. A step's function returns its payload as it
is, so DBOS stores exactly what the run computed. Re-executing the workflow (a resumed run) first replays
every recorded step in its recorded order, which DBOS answers from its system database without running
anything, then takes the new ones.

State of a run id, as DBOS keeps it:

* no workflow: a new run;
* ``PENDING`` (the process died mid-run), ``ENQUEUED`` or ``CANCELLED`` (the run ended without an
  answer: an error, a cancel, or the consumer stopped reading): resumable, its steps replay;
* waiting (``CANCELLED``, the journal ending with ``wait:N``): the run ended interrupted for approvals and
  its workflow detached at once, so a wait holds no thread; the run that answers
  (``hookstream_dbos.waits``) sends the answer, then resumes the same workflow, which takes the answer with
  ``DBOS.recv`` as it replays and goes on with that run's steps, under a prefix; a served one recovered
  ``PENDING`` (its worker died between journaling the wait and detaching) first ends its interrupted run
  again (:func:`_finish_interrupted`), then detaches;
* ``SUCCESS``: finished (or resumed past its wait's deadline), its steps replay and nothing is sent or run;
* ``ERROR``: the workflow itself failed (never from this plugin's own runs): refused.

Each process uses its own DBOS executor id and its own DBOS queue for resumes, so a process never picks
up a workflow whose run (its tools, its consumer) lives in another one: a crashed run is resumed by running
it again (``chat(..., plugins=[Durable(ID)])``, ``hookstream runs resume ID``), not in the background.
A ``serve --durable`` worker (``hookstream_dbos.serve``) is the exception: it runs under its slot's stable
executor id, so DBOS recovers at launch the runs a dead holder of the slot left, and :func:`on_recovery`
rebuilds each one's run, which adopts the executing workflow (:data:`_adopting`).

Thread safety: :func:`open_run` and the :class:`Journal` it returns may be used from any thread (tool
calls of one step write their steps at once); a run id is open in one run of a process at a time
(:class:`RunBusyError` otherwise).
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
from dbos import DBOS, DBOSClient, DBOSConfig, Queue, SetWorkflowID

from .errors import AnswerRefused, DurableError, DurableStoreError, RunBusyError, RunDivergedError
from .waits import TOPIC, decide, is_answer, message_key, read_history

__all__ = ["Journal", "default_url", "ensure_dbos", "hand_over", "on_answer", "on_recovery", "open_run", "open_runs",
           "redact_url"]

log = logging.getLogger("hookstream_dbos")

WORKFLOW_NAME = "hookstream.durable_run"
"""The DBOS workflow name of every durable run (``hookstream runs list`` lists these)."""
APP_NAME = "hookstream-durable"
APP_VERSION = "hookstream-durable-1"
"""Fixed, so a run started by one version of a program resumes in the next (DBOS would otherwise hash
the registered workflow functions, and a changed one would refuse the old runs)."""
ENV_URL = "DBOS_SYSTEM_DATABASE_URL"
DB_FILE = "durable.sqlite"
START_TIMEOUT = 120.0
"""Seconds a run waits for DBOS to start (or resume) its workflow before its first new step fails."""
FINISH_TIMEOUT = 30.0
"""Seconds a recovered waiting workflow waits for its interrupted run, started again, to end before it
detaches anyway (less than ``serve_wait.RECOVERY_SETTLE``: an answer never resumes it while it runs)."""
POLL = 0.5
"""Seconds between an open run's workflow's checks that the process is not exiting (so it never holds exit)."""
RESUMABLE = frozenset({"PENDING", "ENQUEUED", "CANCELLED"})


def default_url() -> str:
    """``$DBOS_SYSTEM_DATABASE_URL``, else SQLite ``durable.sqlite`` in hookstream's user directory
    (:func:`hookstream.plugin.user_dir`: ``$HOOKSTREAM_USER_DIR``, else platformdirs' ``user_data_dir``,
    ``~/.local/share/hookstream`` on Linux). One exception keeps runs journaled before
    ``$HOOKSTREAM_USER_DIR`` was set resumable (a run of an id the journal does not hold would start
    anew, and pay again): while no journal is in ``$HOOKSTREAM_USER_DIR`` and one is in platformdirs'
    directory, that one, with a warning (move the file to use the new place)."""
    env = os.environ.get(ENV_URL)
    if env:
        return env
    from hookstream.plugin import user_dir

    path = user_dir() / DB_FILE
    if not path.exists():
        import platformdirs

        old = Path(platformdirs.user_data_dir("hookstream", appauthor=False)) / DB_FILE
        if old != path and old.exists():
            _warn_old_journal(old, path)
            path = old
    return f"sqlite:///{path}"


@functools.cache
def _warn_old_journal(old: Path, new: Path) -> None:
    """Once a process: say which journal is used, and how to move it."""
    log.warning("durable runs: using the journal at %s, made before $HOOKSTREAM_USER_DIR was set; move it "
                "to %s (with its -wal and -shm files, no run going on) to keep it there", old, new)


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a database URL at all: say nothing of it
        return "<database URL>"


_cancelled: set[str] = set()
"""Run ids this process cancelled on purpose (a run that ended without an answer stays resumable so)."""


class _QuietCancel(logging.Filter):
    """DBOS logs a cancelled workflow at WARNING and ERROR; for the runs in :data:`_cancelled` those
    records say nothing wrong. Other workflows' records (a program's own DBOS workflows) pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        text = f"{record.getMessage()} {exc or ''}"
        return not ("cancelled" in text and any(f"{run_id} " in text for run_id in tuple(_cancelled)))


_lock = threading.Lock()
_recover: Callable[[str, dict[str, Any]], None] | None = None
"""Set by a server (``hookstream_dbos.serve``): rebuilds and starts the run of a workflow DBOS recovered
in this process (``recover(run_id, meta)``); the run's :func:`open_run` then adopts the execution."""
_adopting: set[str] = set()
"""Run ids whose workflow is executing (recovered) and waits for its run to open: no start, no resume."""
_launched_url: str | None = None
_queue: Queue | None = None
_bridges: dict[str, Bridge] = {}
_bridges_changed = threading.Condition(_lock)


def ensure_dbos(url: str | None = None, executor_id: str | None = None, shared_queue: str | None = None) -> str:
    """Configure and launch DBOS for this process on ``url`` (default :func:`default_url`) once; returns
    the URL in use. SQLite's parent directory is created. ``executor_id``: this process's DBOS executor id
    (default: a random one); a stable one (a served worker slot's, ``hookstream_dbos.serve``) makes DBOS
    recover, at launch, the runs a dead process of that id left. ``shared_queue``: a DBOS queue this
    process also dequeues from, with the other processes of its server (a stopping one hands its runs
    there: :func:`hand_over`). Raises :class:`DurableStoreError` when this process already uses another
    URL (DBOS has one system database per process)."""
    global _launched_url, _queue
    wanted = url or default_url()
    with _lock:
        if _launched_url is not None:
            if url is not None and url != _launched_url:
                raise DurableStoreError(f"this process keeps durable runs in {redact_url(_launched_url)}; "
                                        f"it cannot also use {redact_url(url)}")
            return _launched_url
        if wanted.startswith("sqlite:///"):
            _wal(Path(wanted.removeprefix("sqlite:///")).expanduser())
        executor = executor_id or f"hookstream-{uuid.uuid4().hex[:16]}"
        config: DBOSConfig = {"name": APP_NAME, "system_database_url": wanted, "executor_id": executor,
                              "application_version": APP_VERSION, "log_level": "WARNING"}
        logging.getLogger("dbos").addFilter(_QuietCancel())
        DBOS(config=config)
        # Only this process listens to its queue, so only it resumes the runs it asks to resume (their
        # tools and their consumer live here).
        name = f"hookstream-durable-{executor}"
        DBOS.listen_queues([name] if shared_queue is None else [name, shared_queue])
        DBOS.launch()
        _queue = DBOS.register_queue(name, polling_interval_sec=0.1)
        if shared_queue is not None:
            DBOS.register_queue(shared_queue, polling_interval_sec=0.5)
        _launched_url = wanted
        return wanted


def open_runs() -> int:
    """How many runs have their journal open in this process now (each one's workflow on a DBOS thread)."""
    with _lock:
        return len(_bridges)


def hand_over(shared_queue: str) -> list[str]:
    """Hand the runs open in this process (their workflows ``PENDING`` here) to the processes that dequeue
    from ``shared_queue`` (:func:`ensure_dbos`), for a process about to exit on purpose while they go
    on: DBOS is shut down here first (``DBOS.destroy``: this process dequeues nothing more, so it never
    takes back what it hands), then each workflow is ``ENQUEUED`` on ``shared_queue``
    (``DBOSClient.resume_workflow``), where one live process dequeues it (DBOS's dequeue claims each
    workflow once) and recovers it as after a crash. Returns the ids handed; this process must exit at
    once (DBOS is gone from it, and the runs left here must not go on)."""
    with _lock:
        ids, url = sorted({*_bridges, *_adopting}), _launched_url
    if not ids or url is None:
        return []
    DBOS.destroy(workflow_completion_timeout_sec=0)
    # Bounded as the arbiter's hand-over (hand_over_left): a stopping worker must not hang on the database.
    client = _bounded_client(url)
    for run_id in ids:
        client.resume_workflow(run_id, queue_name=shared_queue)
    return ids


CONNECT_TIMEOUT = 5
"""Seconds :func:`hand_over_left` waits to connect to a PostgreSQL system database (libpq's
``connect_timeout``, added to a URL that sets none)."""
STATEMENT_TIMEOUT = 10
"""Seconds each statement of a hand-over may run, or wait for a lock, on a PostgreSQL system database
(``statement_timeout`` and ``lock_timeout``, added to a URL that sets neither). SQLite needs none: DBOS
gives each of its connections a 30 s busy timeout, and DBOS's client offers no public setting for it."""


def bounded_url(url: str, seconds: int = CONNECT_TIMEOUT, statement_seconds: int = STATEMENT_TIMEOUT) -> str:
    """``url`` with ``connect_timeout=seconds`` when it is a PostgreSQL URL that sets no ``connect_timeout``
    (libpq and psycopg otherwise wait for a silent server forever), and libpq ``options`` that set
    ``statement_timeout`` and ``lock_timeout`` to ``statement_seconds`` (in ms), each one only when the URL's
    own ``options`` set no such timeout (a database that accepts the connection and then goes silent, or a
    lock held elsewhere, would otherwise hold the statement forever); any other URL as it is. The
    parameters reach psycopg through SQLAlchemy's URL query, as DBOS itself reads ``options``."""
    from sqlalchemy.engine import make_url

    if not url.startswith(("postgresql:", "postgres:", "postgresql+")):
        return url
    parsed = make_url(url)
    query: dict[str, str] = {}
    if "connect_timeout" not in parsed.query:
        query["connect_timeout"] = str(seconds)
    options = parsed.query.get("options", "")
    own = options if isinstance(options, str) else " ".join(options)
    added = [f"-c {name}={statement_seconds * 1000}" for name in ("statement_timeout", "lock_timeout")
             if name not in own]
    if added:
        query["options"] = " ".join([own, *added]).strip()
    if not query:
        return url
    return parsed.update_query_dict(query).render_as_string(hide_password=False)


def _bounded_client(url: str) -> DBOSClient:
    """A ``DBOSClient`` on ``url`` whose connect and statements are bounded (:func:`bounded_url`; its
    listing too, which DBOS bounds itself with ``observability_query_timeout_sec``) and which retries
    no lost connection."""
    return DBOSClient(system_database_url=bounded_url(url), retry_connection_errors=False,
                      observability_query_timeout_sec=float(STATEMENT_TIMEOUT))


def scrubbed(text: str, url: str) -> str:
    """``text`` (an error's message, its first line) with ``url``'s password, if any, replaced by ``***``."""
    from sqlalchemy.engine import make_url

    line = text.strip().splitlines()[0] if text.strip() else ""
    try:
        password = make_url(url).password
    except Exception:
        return "<error>"
    return line.replace(str(password), "***") if password else line


def hand_over_left(url: str, executor_id: str, shared_queue: str, late: threading.Event | None = None) -> list[str]:
    """Hand the runs a dead process of ``executor_id`` left ``PENDING`` in the system database ``url`` to
    the processes that dequeue from ``shared_queue``, as :func:`hand_over` does for a live one (each
    ``ENQUEUED`` there: one live process takes it and recovers it). For a process that knows no process
    of ``executor_id`` lives and none will start before this returns (``serve --durable``'s gunicorn
    arbiter, a worker just reaped): a run still going on under that id would run twice, so once ``late``
    is set (the caller gave up waiting and may start one) no run is handed any more. Through a
    ``DBOSClient``, closed before it returns, that connects within :data:`CONNECT_TIMEOUT` seconds to
    PostgreSQL and gives up each statement (a lock wait too) after :data:`STATEMENT_TIMEOUT` seconds
    (:func:`bounded_url`), and raises a lost connection instead of retrying it (DBOS's
    ``retry_connection_errors=False``). Returns the ids handed; raises what the database raises (a
    statement timed out: psycopg's ``QueryCanceled`` or ``LockNotAvailable``, wrapped by SQLAlchemy)."""
    client = _bounded_client(url)
    handed: list[str] = []
    try:
        ids = [status.workflow_id for status in client.list_workflows(
            status="PENDING", executor_id=executor_id, name=WORKFLOW_NAME, load_input=False, load_output=False)]
        for run_id in ids:
            if late is not None and late.is_set():
                break
            client.resume_workflow(run_id, queue_name=shared_queue)
            handed.append(run_id)
    finally:
        client.destroy()
    return handed


def on_recovery(recover: Callable[[str, dict[str, Any]], None] | None) -> None:
    """Have ``recover(run_id, meta)`` rebuild and start the run of each workflow DBOS recovers in this
    process with no run to drive it (``None``: such a workflow is cancelled, staying resumable)."""
    global _recover
    with _lock:
        _recover = recover


def _wal(path: Path) -> None:
    """Create ``path``'s directory (``hookstream.plugin.private_dirs``: owner only, the journal holds the
    runs' prompts and results) and put the file in WAL mode (a property of the file, kept by every later
    connection, DBOS's too): each step commits with one append instead of a rollback journal's writes and
    fsyncs, and ``hookstream runs list`` reads while a run writes."""
    import sqlite3

    from hookstream.plugin import private_dirs

    private_dirs(path.parent)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()


# -- the workflow ------------------------------------------------------------------------------------


def _payload(value: Any) -> Any:
    """A step's function: its result is what the run computed, which DBOS then keeps."""
    return value


@attrs.define(slots=True, eq=False)
class _Step:
    name: str
    payload: Any
    reply: queue.Queue[tuple[bool, Any]] = attrs.Factory(queue.Queue)


@attrs.define(slots=True, eq=False)
class _Finish:
    result: dict[str, Any]


_DETACH = object()


@attrs.define(slots=True, eq=False)
class Bridge:
    """The in-process link between one open run and its workflow's execution."""

    run_id: str
    preload: list[tuple[str, Any]]
    items: queue.Queue[Any] = attrs.Factory(queue.Queue)
    handle: Any = None
    """The DBOS workflow handle (of ``start_workflow``: waits on the execution itself, no polling)."""
    answer: Any = None
    """The answer this run delivers or continues (``hookstream_dbos.waits.canonical_answer``)."""
    refused: BaseException | None = None
    """Set by the workflow when the answer it received is another run's (two answers raced)."""


@DBOS.workflow(name=WORKFLOW_NAME)
def durable_run(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The workflow of one run (``meta``: what ``hookstream runs list`` shows and ``runs resume`` needs).
    Returns the run's summary once it finished with an answer."""
    run_id = DBOS.workflow_id
    assert run_id is not None
    with _lock:
        here = run_id in _bridges
        recover = None if here else _recover
    if not here and (recover is not None or _answer_driver is not None):
        steps = _outside(recorded_steps, run_id)
        if read_history(meta.get("answer"), steps).waiting:
            # A waiting run recovered (its worker died before it detached) or resumed by a served answer:
            # it takes the answer sent before it was resumed, else ends its interrupted run and detaches.
            return _go_on(run_id, steps, None, functools.partial(_finish_interrupted, run_id, meta, steps))
    if recover is not None:
        # Recovered by DBOS (its process died) with no run here to drive it: a server rebuilds the run.
        _start_adopting(run_id, recover, meta, "hookstream-durable-recover")
    bridge = _wait_for_bridge(run_id)
    if bridge is None:
        _detach(run_id)  # dispatched with no run to drive it: stay resumable, run nothing
        return None
    return _go_on(run_id, bridge.preload, bridge)


def _go_on(run_id: str, steps: list[tuple[str, Any]], bridge: Bridge | None,
           finish: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """Replay ``steps``, then drive ``bridge``'s run. When the journal ends waiting, the answer decides
    (:func:`_answered`): the run that brought it is driven (``bridge`` when known), or the workflow ends
    with its result (the wait expired) or detached (no answer; ``finish`` first, when given)."""
    waiting = _replay(steps)
    if waiting is not None:
        answered = _answered(run_id, waiting, bridge, finish)
        if not isinstance(answered, Bridge):
            return answered
        bridge = answered
    assert bridge is not None  # a run with no bridge here is one whose journal ends waiting
    return _drive(bridge)


def _start_adopting(run_id: str, start: Callable[[str, dict[str, Any]], None], arg: dict[str, Any],
                    name: str) -> None:
    """``start(run_id, arg)`` on a thread of its own (outside this workflow's context): it starts a run,
    whose :func:`open_run` adopts this execution (:data:`_adopting`)."""
    with _lock:
        _adopting.add(run_id)
    threading.Thread(target=start, args=(run_id, arg), name=name).start()


def _replay(preload: list[tuple[str, Any]]) -> dict[str, Any] | None:
    """Take every recorded step again, in its recorded place (DBOS answers each from its database);
    returns the payload of a last ``wait:N`` that no recorded answer follows."""
    waiting: dict[str, Any] | None = None
    for name, output in preload:
        if name == "DBOS.sleep":
            continue  # the timeout of the DBOS.recv before it, which reserved its place
        if name == "DBOS.recv":
            if waiting is not None and is_answer(DBOS.recv(TOPIC, 0), waiting["wait"]):
                waiting = None
            continue
        DBOS.run_step({"name": name}, _payload, output)
        if name.startswith("wait:"):
            waiting = output
    return waiting


def _drive(bridge: Bridge) -> dict[str, Any] | None:
    """Take the steps of ``bridge`` until its run finishes (the workflow's result) or ends otherwise (a
    ``wait:N`` step first when it ended waiting), which detaches the workflow."""
    for item in _items(bridge):
        if isinstance(item, _Finish):
            return item.result
        try:
            item.reply.put((True, DBOS.run_step({"name": item.name}, _payload, item.payload)))
        except BaseException as exc:
            item.reply.put((False, exc))
            raise
    # Cancelled from outside first, so this step raises and the execution ends CANCELLED.
    DBOS.run_step({"name": "detached"}, _payload, None)
    return None


def _answered(run_id: str, wait: dict[str, Any], bridge: Bridge | None,
              finish: Callable[[], None] | None = None) -> Bridge | dict[str, Any] | None:
    """Take the answer to ``wait``, sent before this workflow was resumed (so ``DBOS.recv`` never waits:
    no thread is held for a wait); returns the bridge of the run that answered (``bridge`` when known, else
    the one registered for the id, or the one the answer brought: a served POST's run), or the workflow's
    result when the wait expired. Detaches (the workflow stays waiting, resumable) when no answer came."""
    message = DBOS.recv(TOPIC, 0)
    if not is_answer(message, wait["wait"]):
        if float(wait["deadline"]) <= time.time():
            log.info("durable run %s: the wait for an answer expired", run_id)
            return {**dict(wait.get("summary") or {}), "expired": True}
        if bridge is not None:
            bridge.refused = DurableError(f"durable run {run_id!r}: its answer did not reach the workflow")
        elif finish is not None:
            finish()
        _detach(run_id)
        return None
    driver = _answer_driver if bridge is None and message.get("run") is not None else None
    if driver is not None:
        # The answer came with the run that goes on (a served POST): start it here.
        _start_adopting(run_id, driver, message, "hookstream-durable-answer")
    nxt = bridge if bridge is not None else _wait_for_bridge(run_id)
    if nxt is not None and nxt.answer != message.get("answers"):
        nxt.refused = AnswerRefused(f"durable run {run_id!r}: another answer to wait {wait['wait']} came first")
        nxt = None
    if nxt is None:
        _detach(run_id)
    return nxt


_finishing: dict[str, threading.Event] = {}
"""Run ids whose interrupted run :func:`_finish_interrupted` started again -> set when that run ends."""


def _finish_interrupted(run_id: str, meta: dict[str, Any], steps: list[tuple[str, Any]]) -> None:
    """A served run recovered waiting, with no answer: its worker died after it journaled its wait and
    before its run ended (the run's messages never saved to the thread, its event log without
    ``RUN_FINISHED``). The run of the segment that waits is started again here, from its kept input (the
    workflow's ``served`` input for the first segment, else the POST's input the segment's answer brought):
    it replays from the journal to its interrupt (nothing is sent, no tool runs, nothing is journaled),
    so the server saves its messages and ends its log as the dead worker would have (saving and logging
    what is there already are no-ops: stable message ids). Returns once that run's journal has ended
    (at most :data:`FINISH_TIMEOUT` seconds); the workflow then detaches, so an answer (which waits for
    the detach: ``serve_wait.find_waiting``) finds the thread whole."""
    last: dict[str, Any] | None = None
    waits = 0
    for name, output in steps:
        if name.startswith("wait:"):
            waits += 1
        elif name == "DBOS.recv" and is_answer(output, waits - 1):
            last = output
    with _lock:
        recover, driver = _recover, _answer_driver
    start: Callable[[str, dict[str, Any]], None] | None
    start, arg = (recover, meta) if last is None else (driver, last)
    if start is None or (last is not None and last.get("run") is None):
        return  # not a served run: nothing to finish here
    done = threading.Event()
    with _lock:
        _finishing[run_id] = done
    try:
        threading.Thread(target=start, args=(run_id, arg), name="hookstream-durable-finish").start()
        if not done.wait(FINISH_TIMEOUT):
            log.warning("durable run %s: its interrupted run did not end again within %.0f s", run_id, FINISH_TIMEOUT)
    finally:
        with _lock:
            _finishing.pop(run_id, None)


def _detach(run_id: str) -> None:
    """End this execution cancelled (resumable, a wait still waiting in the database)."""
    _cancel_outside(run_id)
    DBOS.run_step({"name": "detached"}, _payload, None)  # raises: the workflow is cancelled


_answer_driver: Callable[[str, dict[str, Any]], None] | None = None
"""Set by a server (``hookstream_dbos.serve_wait``): starts the run an answer brought (``message["run"]``)."""


def _items(bridge: Bridge) -> Iterator[Any]:
    """The bridge's steps until it finishes (a :class:`_Finish`) or detaches (the iterator ends). A run
    whose process is exiting while it is still open (its consumer left it without closing it: a stream
    still referenced at exit, a daemon thread's) detaches, so DBOS's worker threads, which the interpreter
    joins at exit, never keep a finished program alive."""
    while True:
        try:
            item = bridge.items.get(timeout=POLL)
        except queue.Empty:
            if not _exiting():
                continue
            bridge.refused = DurableError(f"durable run {bridge.run_id!r}: the process is exiting")
            _cancel_outside(bridge.run_id)
            _release(bridge)
            return
        if item is _DETACH:
            return
        yield item
        if isinstance(item, _Finish):
            return


_probe: ThreadPoolExecutor | None = None


def _exiting() -> bool:
    """Whether the interpreter has begun to exit. ``threading.main_thread().is_alive()`` cannot tell: the
    interpreter joins the executors' threads (DBOS's among them) before it marks the main thread stopped
    (Python 3.11's ``threading._shutdown``), so a workflow waiting for a run nobody will end would hold the
    exit for ever. From the moment that exit begins, :mod:`concurrent.futures` refuses new work (``submit``
    raises :class:`RuntimeError`), which this asks of an executor of its own (one idle thread a process)."""
    global _probe
    with _lock:
        if _probe is None:
            _probe = ThreadPoolExecutor(1, thread_name_prefix="hookstream-durable-exit")
        probe = _probe
    try:
        probe.submit(int)
    except RuntimeError:
        return True
    return False


def _wait_for_bridge(run_id: str, old: Bridge | None = None) -> Bridge | None:
    with _bridges_changed:
        _bridges_changed.wait_for(lambda: _bridges.get(run_id, old) is not old, timeout=START_TIMEOUT)
        found = _bridges.get(run_id)
        return found if found is not old else None


def _cancel(run_id: str) -> None:
    _cancelled.add(run_id)
    DBOS.cancel_workflow(run_id)


def queue_name() -> str:
    """This process's own DBOS queue (only it listens to it), where it resumes workflows."""
    assert _queue is not None
    return str(_queue.name)


def on_answer(drive: Callable[[str, dict[str, Any]], None] | None) -> None:
    """Have ``drive(run_id, message)`` start the run that an answer received by a waiting workflow of this
    process brought with it (``message["run"]``: a served POST's input); that run's :func:`open_run` then
    adopts the execution. ``None``: such an answer waits for a run of this process to open the id."""
    global _answer_driver
    with _lock:
        _answer_driver = drive


def _outside(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a fresh thread: called inside the workflow, DBOS would journal a DBOS call as one
    of the run's steps."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn(*args)), name="hookstream-durable-outside")
    t.start()
    t.join()
    if not out:
        raise DurableError(f"{getattr(fn, '__name__', fn)} failed outside the workflow (see the log)")
    return out[0]


def _cancel_outside(run_id: str) -> None:
    """Cancel the workflow from a fresh thread: called inside the workflow, DBOS would journal the
    cancel as one of the run's steps."""
    t = threading.Thread(target=_cancel, args=(run_id,), name="hookstream-durable-cancel")
    t.start()
    t.join()


def _release(bridge: Bridge) -> None:
    with _bridges_changed:
        if _bridges.get(bridge.run_id) is bridge:
            del _bridges[bridge.run_id]


# -- the run's side ------------------------------------------------------------------------------------


@attrs.define(slots=True, eq=False)
class Journal:
    """What one open run reads and writes: ``recorded`` (step name -> output, everything journaled
    before this run opened); ``bridge`` (``None``, with no ``attach``: nothing may be added, :attr:`closed`).

    Step names: ``model_call:N`` (the model call of step N; its output a dict with the raw ``body``,
    its ``key`` and the request), ``tool_started:N:ID`` and ``tool_call:N:ID`` (the start and the
    :class:`~hookstream.ToolResultPart` of tool call ``ID`` of step ``N``; when its tool streamed events,
    ``{"result": part, "stream": [...]}``, each event its AG-UI JSON text, each usage a
    :class:`~hookstream.events.Usage`), each behind ``prefix``: empty
    for the run's first segment, ``sK:`` for the run that answered its ``K``-th wait
    (``hookstream_dbos.waits``); ``wait:N`` for its waits."""

    run_id: str
    recorded: dict[str, Any]
    bridge: Bridge | None = None
    step: int = 0
    """The step whose model call came last (the tool calls that follow belong to it)."""
    prefix: str = ""
    waits: int = 0
    """The number of waits journaled before this run (the next one is ``wait:<waits>``)."""
    answer: Any = None
    attach: Any = None
    """For a run replaying the segment that waits: called (once) by its first new step, which answers the
    wait in place (the run got its approvals synchronously); returns the bridge."""
    _written: dict[str, Any] = attrs.Factory(dict)
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    @property
    def closed(self) -> bool:
        """Nothing may be added: every step of this run must come from the journal."""
        return self.bridge is None and self.attach is None

    def get(self, name: str) -> tuple[bool, Any]:
        """``(True, output)`` when step ``name`` was journaled, else ``(False, None)``."""
        name = self.prefix + name
        with self._lock:
            if name in self.recorded:
                return True, self.recorded[name]
            if name in self._written:
                return True, self._written[name]
        return False, None

    def _bridge(self) -> Bridge | None:
        with self._lock:
            if self.bridge is None and self.attach is not None:
                attach, self.attach = self.attach, None
                self.bridge = attach()
            return self.bridge

    def write(self, name: str, payload: Any) -> Any:
        """Journal step ``name`` (blocks until DBOS wrote it; returns what DBOS holds). Raises
        :class:`RunDivergedError` on a finished run, :class:`DurableError` when the workflow did not
        start within :data:`START_TIMEOUT` seconds, ``AnswerRefused`` when another answer won."""
        bridge = self._bridge()
        if bridge is None:
            raise RunDivergedError(f"durable run {self.run_id!r} has ended; its journal holds no {name}: "
                                   "the run changed since it was recorded (use another id for a new run)")
        step = _Step(self.prefix + name, payload)
        bridge.items.put(step)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if bridge.refused is not None:
                raise bridge.refused
            try:
                ok, value = step.reply.get(timeout=min(POLL, max(0.0, deadline - time.monotonic())))
                break
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise DurableError(f"durable run {self.run_id!r}: DBOS did not take step {name} within "
                                       f"{START_TIMEOUT:.0f} s") from None
        if not ok:
            raise DurableError(f"durable run {self.run_id!r}: DBOS could not journal {name}: {value}") from value
        with self._lock:
            self._written[self.prefix + name] = value
        return value

    def end(self, outcome: str, summary: dict[str, Any], pending: list[str] | None = None,
            wait: float | None = None, messages: list[str] | None = None) -> None:
        """The run ended: with an answer (``outcome`` ``success``), the workflow completes with ``summary``;
        waiting for approvals (``interrupt``, ``pending`` call ids), the workflow journals ``wait:N`` (the
        answer is due within ``wait`` seconds) and is cancelled, like a run that ends otherwise: it stays
        resumable under the same id, and the answer resumes it (no thread waits for it). ``messages``: the
        conversation at the interrupt (:func:`hookstream.stores.dumps_message` of each), kept with the
        wait: an answer whose thread lacks the pending calls continues from it."""
        with self._lock:
            bridge, self.bridge, self.attach = self.bridge, None, None
        with _lock:
            finishing = _finishing.get(self.run_id)
        if finishing is not None:
            finishing.set()  # the run _finish_interrupted started again has ended (it journals nothing)
        if bridge is None:
            return
        try:
            if outcome == "success":
                bridge.items.put(_Finish(summary))
                handle = bridge.handle or DBOS.retrieve_workflow(self.run_id)
                handle.get_result()  # SUCCESS is on disk before the run ends
                return
            if outcome == "interrupt" and pending and wait is not None:
                self._journal_wait(bridge, summary, pending, wait, messages)
            _cancel(self.run_id)  # before the run ends: an answer right after it resumes a detached workflow
            bridge.items.put(_DETACH)
        finally:
            _release(bridge)

    def _journal_wait(self, bridge: Bridge, summary: dict[str, Any], pending: list[str], wait: float,
                      messages: list[str] | None) -> None:
        payload = {"wait": self.waits, "pending": pending, "deadline": time.time() + wait, "prefix": self.prefix,
                   "answer": self.answer, "summary": summary, "messages": messages}
        step = _Step(f"wait:{self.waits}", payload)
        bridge.items.put(step)
        try:  # journaled before the run ends, so `hookstream runs list` says waiting from then on
            step.reply.get(timeout=START_TIMEOUT)
        except queue.Empty:
            log.warning("durable run %s: DBOS did not journal its wait within %.0f s", self.run_id, START_TIMEOUT)


def recorded_steps(run_id: str, source: Any = DBOS) -> list[tuple[str, Any]]:
    """``run_id``'s journal rows, ``(function_name, output)`` in order, read through ``source`` (``DBOS`` or
    a :class:`dbos.DBOSClient`)."""
    return [(str(s["function_name"]), s["output"]) for s in source.list_workflow_steps(run_id)]


def _register(bridge: Bridge) -> None:
    _cancelled.discard(bridge.run_id)
    with _bridges_changed:
        if bridge.run_id in _bridges:
            raise RunBusyError(f"durable run {bridge.run_id!r} is already running in this process")
        _bridges[bridge.run_id] = bridge
        _bridges_changed.notify_all()


def _adopted(run_id: str) -> bool:
    """Whether ``run_id``'s workflow was recovered in this process and waits for this run's bridge
    (nothing to start or resume then)."""
    with _lock:
        if run_id in _adopting:
            _adopting.discard(run_id)
            return True
        return False


def _resume(bridge: Bridge) -> None:
    assert _queue is not None
    try:
        if not _adopted(bridge.run_id):
            bridge.handle = DBOS.resume_workflow(bridge.run_id, queue_name=_queue.name)
    except BaseException:
        _release(bridge)
        raise


def _deliver(run_id: str, steps: list[tuple[str, Any]], wait: int, answer: Any, prefix: str) -> Bridge:
    """Answer wait ``wait`` of ``run_id`` and return the bridge of the segment the answer starts. The answer
    is sent first (``DBOS.send``, its idempotency key from the answered call ids: one message however many
    send it); then the workflow, detached since its run ended waiting, is resumed here: it replays its
    journal and finds the answer there (a stale execution elsewhere is fenced out by DBOS)."""
    bridge = Bridge(run_id, steps, answer=answer)
    _register(bridge)
    message = {"kind": "answer", "wait": wait, "answers": answer, "prefix": prefix}
    try:
        DBOS.send(run_id, message, TOPIC, idempotency_key=message_key(run_id, wait, answer))
    except BaseException:
        _release(bridge)
        raise
    _resume(bridge)
    return bridge


def open_run(run_id: str, meta: dict[str, Any], url: str | None = None, answer: Any = None) -> Journal:
    """Open run ``run_id``'s journal for a run about to start (``meta`` is kept as the workflow's input
    when the run is new; ``answer`` is the run's ``hookstream_dbos.waits.canonical_answer``). Raises
    :class:`RunBusyError` when the id is open in this process, :class:`DurableError` for a workflow that
    failed, :class:`DurableStoreError` (see :func:`ensure_dbos`), ``AnswerRefused`` and
    ``NotWaitingError`` for an answer the run does not take (``hookstream_dbos.waits.decide``)."""
    ensure_dbos(url)
    status = DBOS.get_workflow_status(run_id)
    state = status.status if status is not None else None
    if state is None:
        bridge = Bridge(run_id, [], answer=answer)
        _register(bridge)
        try:
            if not _adopted(run_id):
                with SetWorkflowID(run_id):
                    bridge.handle = DBOS.start_workflow(durable_run, {**meta, "answer": answer})
        except BaseException:
            _release(bridge)
            raise
        return Journal(run_id, {}, bridge=bridge, answer=answer)
    if state != "SUCCESS" and state not in RESUMABLE:
        raise DurableError(f"durable run {run_id!r} is {state}; it cannot be resumed (use another id)")
    assert status is not None
    steps = recorded_steps(run_id)
    history = read_history(first_answer(status), steps)
    output = status.output if isinstance(status.output, dict) else None
    expired = bool(output and output.get("expired")) or history.expired(time.time())
    plan = decide(run_id, history, answer, finished=state == "SUCCESS", expired=expired)
    journal = Journal(run_id, dict(steps), prefix=plan.prefix, waits=len(history.waits), answer=answer)
    if plan.kind == "answer":
        journal.bridge = _deliver(run_id, steps, plan.wait, answer, plan.prefix)
    elif plan.kind == "inline":
        journal.attach = lambda: _deliver(run_id, steps, plan.wait, answer, plan.prefix)
    elif plan.kind == "live":
        bridge = Bridge(run_id, steps, answer=answer)
        _register(bridge)
        _resume(bridge)
        journal.bridge = bridge
    return journal


def workflow_meta(status: Any) -> dict[str, Any]:
    """The ``meta`` a run's workflow was started with (its input; ``{}`` when there is none)."""
    inputs = status.input
    args = getattr(inputs, "args", None) if inputs is not None else None
    if args is None and isinstance(inputs, dict):
        args = inputs.get("args")
    meta = args[0] if args else {}
    return meta if isinstance(meta, dict) else {}


def first_answer(status: Any) -> Any:
    """The answer the run's first segment was started with (kept in the workflow's input)."""
    return workflow_meta(status).get("answer")
