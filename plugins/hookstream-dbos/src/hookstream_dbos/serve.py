"""``hookstream serve --durable``: every AG-UI run and AI SDK chat run (``POST /api/chat``) the server
streams is a durable run, and a run whose worker died (killed, crashed) is recovered by DBOS in a live
worker and goes on; the client that reconnects to the resume route reads the rest of it
(``docs/durable.md``, "Serving durable runs"; the AI SDK's ``GET /api/chat/{id}/stream``: the whole
stream, each part once).

How (on the server's public hooks, :mod:`hookstream_server.hookspecs`):

* each serving process takes a stable DBOS executor id per worker slot, ``hookstream-serve-NAME-SLOT``
  (``hookstream_serve_process``; NAME: ``--durable-name``, default the host name), and launches DBOS
  there, after the fork. DBOS recovers at launch the runs its executor id left PENDING: the worker that
  replaces a dead one takes its slot, so its runs are recovered (by whichever live worker dequeues them);
* each POSTed run's input (``hookstream_serve_run``) becomes its workflow's input: the messages (the
  store's codec, :func:`hookstream.stores.dumps_message`), frontend tools, resume, state, forwarded
  props, the principal's id and verified claims (never a credential: :mod:`hookstream_dbos.claims`) and
  the route (``protocol``: the AI SDK run's framing is made from its input alone, ``RunInput.message_id``).
  Its id is derived from ``(threadId, runId)`` (:func:`served_id`; a thread belongs to one principal);
* a recovered workflow with no run in the process rebuilds the :class:`~hookstream.server.RunInput` and
  starts it with the application's ``run_detached``: the run adopts the executing workflow, its
  completed model and tool calls replay from the journal and regenerate the frames already logged (the
  message ids the adapter makes up are derived from the run and step: ``durable._stable_ids``), which
  are not logged again; the rest is logged as new;
* the application sends a frame only once it is in the event log (``log_then_send``), so a client
  never holds a frame the recovered run does not continue from;
* a process stopped on purpose (``hookstream_serve_stop``: a reload, ``--max-requests``, Ctrl-C) with
  runs still going on hands them to the server's live workers (the server's shared DBOS queue,
  :func:`shared_queue`, which every worker dequeues from; :func:`~hookstream_dbos.journal.hand_over`)
  and ends at once: a live worker (or the restarted server) recovers each as after a kill;
* gunicorn's arbiter, once it reaped a worker (``hookstream_serve_exited``: killed, or its hand-over
  failed), hands the runs that worker's slot left ``PENDING`` to the shared queue through a
  ``DBOSClient`` (:func:`~hookstream_dbos.journal.hand_over_left`), before any worker takes the slot.

Thread safety: ``hookstream_serve_run`` runs on any request thread at once; the inputs waiting for their
run are kept under a lock. ``hookstream_serve_process`` and ``hookstream_serve_stop`` run on the worker's
main thread, ``hookstream_serve_exited`` on the arbiter's (no DBOS launched there: the client it opens, on a
thread of its own, is closed before it returns, unless the hand-over outlasted ``hand_over_wait``).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import re
import socket
import threading
from typing import Any

import attrs
from hookstream.plugin import RunContext, hookimpl

from .durable import Durable
from .journal import (
    default_url,
    ensure_dbos,
    hand_over,
    hand_over_left,
    log,
    on_recovery,
    open_runs,
    redact_url,
    scrubbed,
)
from .serve_wait import SERVED_PROTOCOLS, ServeAnswers, answered_run, decode_run, encode_run, thread_prefix

__all__ = ["ServeDurable", "ServedDurable", "executor_id", "served_id", "shared_queue"]

HAND_OVER_WAIT = 15.0
"""Seconds gunicorn's arbiter waits for a dead worker's runs to be handed over (``hookstream_serve_exited``)
before it goes on and leaves them to the slot's next worker (more than ``journal.CONNECT_TIMEOUT``)."""
_MAX_INPUTS = 10_000
"""Inputs of runs POSTed but not started yet that are kept at most (the oldest are dropped)."""


def served_id(thread_id: str, run_id: str) -> str:
    """The durable run id of a served run: :func:`thread_prefix` and the SHA-256 of its ids (safe for
    any database, the same in every worker)."""
    return thread_prefix(thread_id) + hashlib.sha256(f"{thread_id}\0{run_id}".encode()).hexdigest()[:24]


def executor_id(name: str, slot: int) -> str:
    """The DBOS executor id of worker slot ``slot`` of the server ``name``."""
    return f"hookstream-serve-{name}-{slot}"


def shared_queue(name: str) -> str:
    """The DBOS queue every worker of the server ``name`` dequeues from (a stopping worker's runs go there)."""
    return f"hookstream-serve-{name}"


def default_name() -> str:
    """This machine's host name, as an executor id may hold it."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"


@attrs.define(slots=True, eq=False)
class ServeDurable:
    """The server side of ``serve --durable`` (registered in the registry by the command): DBOS in each
    worker under its slot's executor id, each run's input kept, recovered runs started again."""

    db: str | None
    name: str
    app: Any = None
    hand_over_wait: float = HAND_OVER_WAIT
    """Seconds the arbiter waits for a dead worker's hand-over (``hookstream_serve_exited``)."""
    _inputs: collections.OrderedDict[tuple[str, str], dict[str, Any]] = attrs.Factory(collections.OrderedDict)
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    @hookimpl
    def hookstream_serve_process(self, app: Any, slot: int) -> None:
        self.app = app
        app.log_then_send(True)
        on_recovery(self._recover)
        # Recovers this slot's runs now, with no request.
        ensure_dbos(self.db, executor_id(self.name, slot), shared_queue(self.name))

    @hookimpl
    def hookstream_serve_run(self, app: Any, run: Any, protocol: str) -> bool | None:
        if protocol in SERVED_PROTOCOLS:  # not the OpenAI endpoints: no resume route to continue
            self.keep(run, protocol)
        return None

    def keep(self, run: Any, protocol: str) -> None:
        """Keep ``run``'s input (a :class:`~hookstream.server.RunInput`) and its route's ``protocol`` for
        its run plugin to take."""
        with self._lock:
            self._inputs[(run.thread_id, run.run_id)] = encode_run(run, protocol)
            while len(self._inputs) > _MAX_INPUTS:
                self._inputs.popitem(last=False)

    @hookimpl(trylast=True)
    def hookstream_serve_stop(self, app: Any, slot: int) -> None:
        """A graceful stop (a reload or deploy, ``--max-requests``, Ctrl-C) while durable runs go on: the
        process hands them to the server's live workers and ends at once, as a killed one does, instead
        of cancelling them or waiting for them (their tools may run for hours; gunicorn would kill the
        worker anyway). Their workflows go to the server's shared queue, where a live worker (a reload's
        new ones, the replacement, the restarted server) takes each and recovers it; their clients
        reconnect to the resume route. Should the hand-over fail, they stay ``PENDING`` under this
        slot's executor id for the slot's next holder. Nothing is lost that a kill would keep: every
        frame a client got is in the run event log, every step in the journal."""
        left = open_runs()
        if not left:
            return
        # Logged first: once handed, a live worker may take a run at once, and this process must be gone.
        log.warning("durable runs handed to the live workers by worker slot %d: %d", slot, left)
        url = self.db or default_url()
        try:
            hand_over(shared_queue(self.name))
        except Exception as exc:  # as the arbiter's: no traceback, whose driver text may hold the URL
            log.warning("durable runs left to worker slot %d's next holder instead: %d (system database %s: "
                        "%s: %s)", slot, left, redact_url(url), type(exc).__name__, scrubbed(str(exc), url))
        logging.shutdown()  # flush what is logged; nothing else of this process may wait
        os._exit(0)

    @hookimpl
    def hookstream_serve_exited(self, app: Any, slot: int) -> None:
        """In gunicorn's arbiter, a worker reaped (killed, or stopped and its hand-over failed): the runs
        it left ``PENDING`` under its slot's executor id go to the server's shared queue at once, where a
        live worker recovers each; no replacement need take the slot (none does while a reload's new
        workers run). Nothing else runs under that executor id until the slot is given again, after this.

        The arbiter must go on reaping and forking whatever the database does, so the hand-over runs on a
        daemon thread that connects within ``journal.CONNECT_TIMEOUT`` seconds, gives up each statement
        after ``journal.STATEMENT_TIMEOUT`` seconds (a lock wait too) and retries nothing, so it ends, and
        this waits for it at most ``hand_over_wait`` seconds (:data:`HAND_OVER_WAIT`). A hand-over that
        fails or is late is logged (the URL's password never) and left to DBOS: the slot's next holder
        recovers the runs at launch; a late one hands no run once given up (the next holder may be running
        it)."""
        url = self.db or default_url()
        done, late = threading.Event(), threading.Event()
        handed: list[str] = []

        def hand() -> None:
            try:
                handed.extend(hand_over_left(url, executor_id(self.name, slot), shared_queue(self.name), late))
            except Exception as exc:  # the database unreachable: its runs wait for the slot's next holder
                log.warning("durable runs of dead worker slot %d not handed over (system database %s: %s: %s); "
                            "the slot's next worker recovers them", slot, redact_url(url), type(exc).__name__,
                            scrubbed(str(exc), url))
            finally:
                done.set()

        threading.Thread(target=hand, name=f"hookstream-dbos-hand-over-{slot}", daemon=True).start()
        if not done.wait(self.hand_over_wait):
            late.set()
            log.warning("durable runs of dead worker slot %d: the hand-over (system database %s) took more than "
                        "%.0f s; the slot's next worker recovers them", slot, redact_url(url), self.hand_over_wait)
        elif handed:
            log.warning("durable runs of dead worker slot %d handed to the live workers: %d", slot, len(handed))

    def take(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """The kept input of the run about to start, once."""
        with self._lock:
            return self._inputs.pop((thread_id, run_id), None)

    def _recover(self, run_id: str, meta: dict[str, Any]) -> None:
        served = meta.get("served")
        if not isinstance(served, dict) or self.app is None:
            return  # not a served run: its workflow cancels itself (it stays resumable)
        run, protocol = decode_run(served)
        with self._lock:
            self._inputs[(run.thread_id, run.run_id)] = served
        try:
            self.app.run_detached(run, protocol)
        except Exception:  # its workflow waits for it, then cancels itself: resumable, never lost
            log.exception("durable run %s could not be started again", run_id)


@attrs.define(slots=True, eq=False)
class ServedDurable(Durable):
    """The run plugin of ``serve --durable``: a run whose input the server kept (an AG-UI or AI SDK POST,
    or a recovered run) is the durable run :func:`served_id` of its ids; any other run (the OpenAI
    endpoints') is not durable."""

    server: ServeDurable | None = None

    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        served = self.server.take(run.thread_id, run.run_id) if self.server is not None else None
        if served is None:
            return
        # A POST that answers a waiting run continues that run.
        durable_id = answered_run(run.thread_id, run.run_id) or served_id(run.thread_id, run.run_id)
        self._open(run, durable_id, {"thread_id": run.thread_id, "served": served})


SQL_STORES = ("sqlite:", "postgresql:", "postgres:")


def configure(options: dict[str, Any], run: Any) -> None:
    """``serve --durable``: checks the options (a SQL ``--store``, the event log on), registers
    :class:`ServeDurable` in the registry for the command's life and adds :class:`ServedDurable` to the
    runs' plugins. Raises :class:`click.UsageError`."""
    import click
    from hookstream import get_registry

    store = options.get("store_url")
    if not isinstance(store, str) or not store.startswith(SQL_STORES):
        raise click.UsageError("--durable needs --store sqlite:///PATH or postgresql://...: the run event log a "
                               "recovered run continues, and its thread, must outlive the worker")
    if options.get("no_resume"):
        raise click.UsageError("--durable needs the run event log: drop --no-resume")
    server = ServeDurable(options.get("durable_db"), options.get("durable_name") or default_name())
    pm = get_registry().pm
    pm.register(server, name="hookstream-dbos-serve")
    run.stack.callback(pm.unregister, server)
    answers = ServeAnswers(server.keep)  # a POST that answers a waiting run goes to the worker holding it
    pm.register(answers, name="hookstream-dbos-serve-answers")
    run.stack.callback(pm.unregister, answers)
    run.settings = run.settings.evolve(plugins=(*run.settings.plugins,
                                                ServedDurable("served", options.get("durable_db"), server=server)))
