"""``hookstream serve --workers N``: the WSGI application in N worker processes under gunicorn.

gunicorn's ``gthread`` worker class serves each process's requests on a pool of ``threads`` threads, as
the engine expects (one engine per request, tools on threads; no asyncio), with a deadline on reading
each request so that slow senders cannot hold those threads (``hookstream_server.gthread_worker``).
The application is built once
in the arbiter before the workers fork (``preload_app``), so a bad ``--model`` or ``--store`` stops the
command instead of every worker failing to boot; each worker opens its own database connections
(``hookstream._stores.sql`` reconnects after a fork). gunicorn runs on Unix only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["SLOT", "run_workers"]

SLOT = "hookstream_slot"
"""The attribute of a gunicorn worker object that holds its worker slot."""


def run_workers(app: Callable[..., Any], host: str, port: int, workers: int, threads: int, *,
                served: Any = None) -> None:
    """Serve ``app`` on ``host:port`` (0 picks a free port) with ``workers`` gthread workers of ``threads``
    threads each, until interrupted. Prints the ``listening on`` line once the socket is bound. Each
    worker, once forked and before it accepts a connection, calls ``hookstream_serve_process(served,
    slot)`` (``served``: make_app's application, default ``app``) with its worker slot: the smallest of
    ``0..workers-1`` no live worker holds, given in the arbiter before the fork, so the worker replacing a
    dead one takes its slot; a worker that stops on purpose calls ``hookstream_serve_stop`` before it
    exits, and the arbiter calls ``hookstream_serve_exited(served, slot)`` once it reaped a worker, before
    another takes its slot. Raises :class:`click.ClickException` when gunicorn is not installed."""
    try:
        from gunicorn.app.base import BaseApplication

        from .gthread_worker import read_deadline
    except ImportError:
        from hookstream.plugin import install_command

        raise click.ClickException(
            f"hookstream serve --workers needs gunicorn: {install_command('hookstream[serve]')}") from None
    served = app if served is None else served
    app = read_deadline(app)

    def when_ready(server: Any) -> None:
        bound = server.LISTENERS[0].sock.getsockname()
        click.echo(f"hookstream serve: listening on http://{bound[0]}:{bound[1]}/ ({workers} workers)")

    def pre_fork(server: Any, worker: Any) -> None:
        # In the arbiter: the worker about to fork is not in WORKERS yet, and a reaped one is gone from it.
        held = {getattr(w, SLOT, None) for w in server.WORKERS.values()}
        setattr(worker, SLOT, next(s for s in range(len(held) + 1) if s not in held))

    def post_worker_init(worker: Any) -> None:
        from .hookspecs import serve_process

        serve_process(served, getattr(worker, SLOT, 0))

    def worker_exit(server: Any, worker: Any) -> None:
        import os

        if worker.pid == os.getpid():  # gunicorn calls it in the arbiter too, for a worker already gone
            from .hookspecs import serve_stop

            serve_stop(served, getattr(worker, SLOT, 0))

    def child_exit(server: Any, worker: Any) -> None:
        # In the arbiter, after the reap and before manage_workers forks a worker into the free slot.
        from .hookspecs import serve_exited

        serve_exited(served, getattr(worker, SLOT, 0))

    options: dict[str, Any] = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": "hookstream_server.gthread_worker.HookstreamWorker",
        "threads": threads,
        "preload_app": True,
        # A gthread worker keeps sending heartbeats while its threads stream, so this bounds a stuck
        # worker, not a long run.
        "timeout": 120,
        "graceful_timeout": 10,
        # An idle kept-alive connection is closed after 5 s; each worker holds at most 1,000 connections
        # (gunicorn's default worker_connections), idle, kept alive or being read under the read deadline.
        "keepalive": 5,
        "worker_connections": 1000,
        "when_ready": when_ready,
        "pre_fork": pre_fork,
        "post_worker_init": post_worker_init,
        "worker_exit": worker_exit,
        "child_exit": child_exit,
        "loglevel": "warning",
    }

    class _Application(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Callable[..., Any]:
            return app

    _Application().run()
