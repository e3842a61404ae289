"""``hookstream serve --durable``: a served run that ends waiting for approvals is a durable wait, and the
POST that answers it (the same route as ever, ``resume``) continues the same durable run in the worker
it reaches (``docs/durable.md``, "Approvals").

How, on the server's public hooks (:mod:`hookstream_server.hookspecs`):

* the server refuses a second answer (409) and claims the answers before anything here runs;
* :meth:`ServeAnswers.hookstream_serve_run` looks, among the thread's durable runs (their ids start with
  the thread's digest: :func:`thread_prefix`), for the one that waits for the calls
  the POST answers. Found, it takes the run over: ``DBOS.send`` delivers the answer with the POST's
  input to the waiting workflow (the idempotency key from the answered call ids: delivered once), then
  this worker resumes the workflow, which detached when its run ended waiting (no worker holds a wait);
* the resumed workflow replays, takes the answer and starts the answering run in this worker with
  ``app.run_detached`` under the POST's run id (:meth:`ServeAnswers.drive`); that run opens the same
  durable run as the segment its answer starts, and the POST's client reads it through the run event log.

A POST whose answers match no waiting durable run is left to the server (a run of its own, as before).
A waiting workflow still ``PENDING`` or ``ENQUEUED`` (its worker died between journaling the wait and
detaching; a live worker recovers it, ends its interrupted run again and detaches it) is resumed only once
detached (:func:`find_waiting`, up to :data:`RECOVERY_SETTLE` seconds); when the POST's messages lack a
call the wait is for, the answer continues the conversation journaled with the wait.

Thread safety: the hook runs on request threads at once; the runs an answer is about to start are kept
under a lock.
"""

from __future__ import annotations

import collections
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
from hookstream.plugin import hookimpl
from hookstream.stores import dumps_message, loads_message

from .claims import kept_claims, kept_json
from .journal import RESUMABLE, WORKFLOW_NAME, first_answer, log, queue_name, recorded_steps
from .waits import TOPIC, canonical_answer, message_key, read_history

__all__ = ["SERVED_PROTOCOLS", "ServeAnswers", "answered_run", "decode_run", "encode_run", "find_waiting",
           "live_input", "thread_prefix"]

_lock = threading.Lock()
_starting: dict[tuple[str, str], str] = {}
"""``(thread id, run id)`` of an answering run about to start in this process -> its durable run id."""
_posted: collections.OrderedDict[tuple[str, str], Any] = collections.OrderedDict()
"""``(thread id, run id)`` of an answering POST of this process -> its :class:`~hookstream.server.RunInput`:
the answering run started here gets the client's ``state`` and ``forwardedProps`` whole, as any live run
does (the journaled answer holds them without a credential: :func:`encode_run`)."""
_MAX_POSTED = 1_000
"""Answering POSTs whose input is kept at most (the oldest go: their runs get the journaled input)."""


def thread_prefix(thread_id: str) -> str:
    """What the durable run ids of a thread's served runs start with (``serve-``, a digest of the thread
    id, ``-``): the answer route finds a thread's waiting run by it."""
    return "serve-" + hashlib.sha256(thread_id.encode()).hexdigest()[:16] + "-"


SERVED_PROTOCOLS = frozenset({"agui", "ui", "responses"})
"""The routes whose runs ``serve --durable`` makes durable (``hookstream_serve_run``'s ``protocol``): AG-UI,
the AI SDK's UI message stream and background OpenAI responses, all resumed from the run event log."""


def encode_run(run: Any, protocol: str = "agui") -> dict[str, Any]:
    """What rebuilds ``run`` (a :class:`~hookstream.server.RunInput`) in another process, and the route
    (``protocol``) whose frames it sends: JSON values. The principal's verified claims go with it, and the
    client's ``state`` and ``forwardedProps``, never a credential (:func:`~hookstream_dbos.claims.kept_claims`,
    :func:`~hookstream_dbos.claims.kept_json`): a run rebuilt from it gets them without one."""
    return {"thread_id": run.thread_id, "run_id": run.run_id, "messages": [dumps_message(m) for m in run.messages],
            "tools": run.tools, "state": kept_json(run.state), "resume": run.resume,
            "forwarded_props": kept_json(run.forwarded_props),
            "principal": run.principal.id if run.principal is not None else None, "protocol": protocol,
            "message_id": run.message_id,
            "claims": kept_claims(run.principal.claims) if run.principal is not None else {}}


def decode_run(doc: dict[str, Any]) -> tuple[Any, str]:
    """The :class:`~hookstream.server.RunInput` :func:`encode_run` kept (the principal with the claims
    :func:`~hookstream_dbos.claims.kept_claims` kept), and its protocol."""
    from hookstream.server import Principal, RunInput

    who = doc.get("principal")
    run = RunInput(doc["thread_id"], doc["run_id"], [loads_message(m) for m in doc["messages"]], list(doc["tools"]),
                   doc.get("state"), doc.get("resume"), doc.get("forwarded_props"),
                   Principal(who, dict(doc.get("claims") or {})) if isinstance(who, str) else None,
                   doc.get("message_id"))
    return run, str(doc.get("protocol", "agui"))


def live_input(run: Any, posted: Any) -> Any:
    """``run`` (rebuilt by :func:`decode_run`) with the ``state`` and ``forwarded_props`` of ``posted``, the
    :class:`~hookstream.server.RunInput` its POST brought to this process (``None``: ``run`` as it is)."""
    if posted is None:
        return run
    return attrs.evolve(run, state=posted.state, forwarded_props=posted.forwarded_props)


def answered_run(thread_id: str, run_id: str) -> str | None:
    """The durable run id that the run ``(thread_id, run_id)`` about to start answers (once), or ``None``."""
    with _lock:
        return _starting.pop((thread_id, run_id), None)


def _answered_ids(answer: dict[str, Any]) -> set[str]:
    return {*answer.get("approvals", {}), *answer.get("tool_outputs", {})}


SETTLE = 3.0
"""Seconds an answer looks again for its wait while a run of the thread is still ending: the interrupted
run journals its wait when it ends, just after its client read ``RUN_FINISHED``."""
RECOVERY_SETTLE = 60.0
"""Seconds an answer waits for its wait's workflow to detach when it has not (its worker died between
journaling the wait and detaching): DBOS recovers it in a live worker (handed over by gunicorn's
arbiter, or by the slot's next holder), which ends the interrupted run again and detaches it. Past
this (no live worker recovered it) the answer resumes it itself."""


def find_waiting(thread_id: str, answer: dict[str, Any]) -> tuple[str, int, str, dict[str, Any]] | None:
    """The durable run of thread ``thread_id`` that waits for the calls ``answer`` answers: ``(run id, wait
    number, the answering segment's prefix, what the wait journaled)``, or ``None``. Reads the thread's runs
    (their ids share the thread's digest), newest first; looks again for up to :data:`SETTLE` seconds while
    one of them is still ending (about to journal its wait), and up to :data:`RECOVERY_SETTLE` seconds while
    the waiting one has not detached (``PENDING`` or ``ENQUEUED``: being recovered). It is resumed only once
    detached: ``DBOS.resume_workflow`` of a workflow another process executes does not stop that execution (it
    re-enqueues the workflow, and the older execution is fenced out only at its next step write), so an
    earlier resume could run the answer twice."""
    pause = threading.Event()
    start = time.monotonic()
    found = None
    while True:
        found, ending = _find(thread_id, _answered_ids(answer))
        if not ending or time.monotonic() - start >= (SETTLE if found is None else RECOVERY_SETTLE):
            return found
        pause.wait(0.1)


def _find(thread_id: str, ids: set[str]) -> tuple[tuple[str, int, str, dict[str, Any]] | None, bool]:
    from dbos import DBOS

    statuses = DBOS.list_workflows(workflow_id_prefix=thread_prefix(thread_id), name=WORKFLOW_NAME,
                                   status=sorted(RESUMABLE), sort_desc=True, load_output=False)
    ending = False
    for status in statuses:
        history = read_history(first_answer(status), recorded_steps(status.workflow_id))
        if history.waiting and ids <= set(history.waits[-1].get("pending", ())):
            # A run detaches (CANCELLED) as it ends: until then its answer would race its own cancel, or
            # the execution recovering it.
            return (status.workflow_id, *history.next_segment(), history.waits[-1]), status.status != "CANCELLED"
        ending = ending or (status.status == "PENDING" and not history.waiting)
    return None, ending


def _conversation(payload: dict[str, Any], messages: list[Any]) -> list[str] | None:
    """The conversation the answer to a wait (``payload``: what it journaled) continues, when ``messages``
    (the answering POST's, from the thread in the store) lack a call the wait is pending for: the one
    journaled with the wait (the run that waited never saved its messages: its worker died first).
    ``None`` when ``messages`` hold every pending call."""
    held = {call.id for m in messages for call in m.tool_calls}
    journaled = payload.get("messages")
    if set(payload.get("pending", ())) <= held or not isinstance(journaled, list):
        return None
    return [str(m) for m in journaled]


@attrs.define(slots=True, eq=False)
class ServeAnswers:
    """The answer route of ``serve --durable`` (registered next to :class:`ServeDurable`)."""

    keep: Callable[[Any, str], None]
    """Keeps a run's input (and protocol) for its run plugin (``hookstream_dbos.serve.ServeDurable.keep``)."""
    app: Any = None

    @hookimpl(tryfirst=True)
    def hookstream_serve_process(self, app: Any, slot: int) -> None:
        from .journal import on_answer

        self.app = app
        on_answer(self.drive)  # before DBOS launches and recovers this slot's waits

    @hookimpl(tryfirst=True)
    def hookstream_serve_run(self, app: Any, run: Any, protocol: str) -> bool | None:
        if protocol not in SERVED_PROTOCOLS or not run.resume:
            return None
        from dbos import DBOS
        from hookstream import Resume

        answer = canonical_answer(Resume.coerce(run.resume))
        found = find_waiting(run.thread_id, answer) if answer is not None else None
        if found is None:
            return None
        run_id, wait, prefix, payload = found
        doc = encode_run(run, protocol)
        # The wait as find_waiting read it: the journal is not read again.
        journaled = _conversation(payload, run.messages)
        if journaled is not None:
            log.warning("durable run %s: the thread lacks the calls wait %d is for; the answer continues the "
                        "journaled conversation", run_id, wait)
            doc["messages"] = journaled
        message = {"kind": "answer", "wait": wait, "answers": answer, "prefix": prefix, "run": doc}
        with _lock:
            _posted[(run.thread_id, run.run_id)] = run
            while len(_posted) > _MAX_POSTED:
                _posted.popitem(last=False)
        DBOS.send(run_id, message, TOPIC, idempotency_key=message_key(run_id, wait, answer))
        # Then this worker resumes the detached workflow: it replays, takes the answer and starts its run.
        DBOS.resume_workflow(run_id, queue_name=queue_name())
        log.info("durable run %s: wait %d answered by run %s", run_id, wait, run.run_id)
        return True

    def drive(self, run_id: str, message: dict[str, Any]) -> None:
        """Start the run ``message`` brought (a waiting workflow of this process received it)."""
        run, protocol = decode_run(message["run"])
        with _lock:
            _starting[(run.thread_id, run.run_id)] = run_id
            posted = _posted.pop((run.thread_id, run.run_id), None)
        run = live_input(run, posted)
        self.keep(run, protocol)  # for its run plugin
        try:
            self.app.run_detached(run, protocol)
        except Exception:  # the workflow waits for the run, then detaches: still answered, resumable
            log.exception("durable run %s: the answering run %s could not start", run_id, run.run_id)
