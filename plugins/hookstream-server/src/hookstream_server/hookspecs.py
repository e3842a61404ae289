"""The hooks ``hookstream serve`` offers other plugins (declared through ``hookstream_addhooks`` by
:mod:`hookstream_server.plugin`; call them through ``hookstream.get_registry().pm.hook``).

* :func:`hookstream_serve_process`: each serving process, once, before it serves (waitress: the one
  process, slot 0; gunicorn: each worker after the fork, with its worker slot).
* :func:`hookstream_serve_run`: each run a POST starts, after every check and claim, before it runs;
  a plugin may take the run over (it runs elsewhere: the server answers by tailing its event log).

What they are for: a plugin that keeps runs somewhere that outlives a process (hookstream-dbos's
``serve --durable``) sees every run's input, and starts a run with no client through the app's
``run_detached`` (``make_app``'s application: :meth:`hookstream_server.agui._App.run_detached`).

Thread safety: :func:`hookstream_serve_process` runs on the serving process's main thread before any
request; :func:`hookstream_serve_run` runs on the request's thread, for several requests at once.
"""

from __future__ import annotations

from .plugin import ServeHookSpecs

__all__ = ["ServeHookSpecs"]
