"""The hooks ``hookstream serve`` offers other plugins (their specs:
:class:`hookstream_server.plugin.ServeHookSpecs`, declared through ``hookstream_addhooks``;
call them through ``hookstream.get_registry().pm.hook``).

* :func:`hookstream_serve_process`: each serving process, once, before it serves (waitress: the one
  process, slot 0; gunicorn: each worker after the fork, with its worker slot).
* :func:`hookstream_serve_stop`: each serving process stopped on purpose, once, before it exits (gunicorn:
  a worker after its graceful wait; waitress: after Ctrl-C).
* :func:`hookstream_serve_exited`: in gunicorn's arbiter, each worker reaped (killed or stopped), before
  any other worker takes its slot.
* :func:`hookstream_serve_run`: each run a POST starts, after every check and claim, before it runs
  (``protocol``: ``agui``, ``ui`` for the AI SDK route, ``responses`` for a background OpenAI response);
  a plugin may take the run over (it runs elsewhere: the server answers by tailing its event log).

What they are for: a plugin that keeps runs somewhere that outlives a process (hookstream-dbos's
``serve --durable``) sees every run's input, and starts a run with no client through the app's
``run_detached`` (``make_app``'s application: :meth:`hookstream_server.agui._App.run_detached`).

Thread safety: :func:`hookstream_serve_process` runs on the serving process's main thread before any
request, :func:`hookstream_serve_stop` on it after the last one it waited for;
:func:`hookstream_serve_run` runs on the request's thread, for several requests at once;
:func:`hookstream_serve_exited` on the arbiter's main thread.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["serve_exited", "serve_process", "serve_stop"]


def serve_process(app: Any, slot: int) -> None:
    """Tell the plugins this process is about to serve ``app`` (make_app's application) as worker
    ``slot`` (``hookstream_serve_process``, :mod:`hookstream_server.hookspecs`)."""
    hook = _hook("hookstream_serve_process")
    if hook is not None:
        hook(app=app, slot=slot)


def serve_stop(app: Any, slot: int) -> None:
    """Tell the plugins this process (worker ``slot``) stops serving ``app`` on purpose and is about to
    exit (``hookstream_serve_stop``); what a plugin raises is logged, not raised."""
    _tell("hookstream_serve_stop", app, slot)


def serve_exited(app: Any, slot: int) -> None:
    """Tell the plugins, in gunicorn's arbiter, that worker ``slot``'s process exited and no process holds
    the slot (``hookstream_serve_exited``); what a plugin raises is logged, not raised."""
    _tell("hookstream_serve_exited", app, slot)


def _tell(hook_name: str, app: Any, slot: int) -> None:
    """Call the plugins' ``hook_name(app, slot)``; what one raises is logged (logger ``hookstream_server``),
    not raised: the process exits, or the arbiter serves on, all the same."""
    hook = _hook(hook_name)
    if hook is None:
        return
    try:
        hook(app=app, slot=slot)
    except Exception:
        logging.getLogger("hookstream_server").exception("a %s hook failed", hook_name)


def _hook(hook_name: str) -> Any:
    """The plugins' hook ``hook_name``, ``None`` when no plugin declares it."""
    from hookstream import get_registry

    return getattr(get_registry().pm.hook, hook_name, None)
