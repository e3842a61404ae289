"""``hookstream serve --workers N``: the WSGI application in N worker processes under gunicorn.

gunicorn's ``gthread`` worker class serves each process's requests on a pool of ``threads`` threads, as
the engine expects (one engine per request, tools on threads; no asyncio), with a deadline on reading
each request so that slow senders cannot hold those threads (``hookstream._cli.gthread_worker``).
The application is built once
in the arbiter before the workers fork (``preload_app``), so a bad ``--model`` or ``--store`` stops the
command instead of every worker failing to boot; each worker opens its own database connections
(``hookstream._stores.sql`` reconnects after a fork). gunicorn runs on Unix only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["run_workers"]


def run_workers(app: Callable[..., Any], host: str, port: int, workers: int, threads: int) -> None:
    """Serve ``app`` on ``host:port`` (0 picks a free port) with ``workers`` gthread workers of ``threads``
    threads each, until interrupted. Prints the ``listening on`` line once the socket is bound. Raises
    :class:`click.ClickException` when gunicorn is not installed."""
    try:
        from gunicorn.app.base import BaseApplication

        from .gthread_worker import read_deadline
    except ImportError:
        from hookstream.plugin import install_command

        raise click.ClickException(
            f"hookstream serve --workers needs gunicorn: {install_command('hookstream[serve]')}") from None
    app = read_deadline(app)

    def when_ready(server: Any) -> None:
        bound = server.LISTENERS[0].sock.getsockname()
        click.echo(f"hookstream serve: listening on http://{bound[0]}:{bound[1]}/ ({workers} workers)")

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
        "loglevel": "warning",
    }

    class _Application(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Callable[..., Any]:
            return app

    _Application().run()
