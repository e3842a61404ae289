"""The ``hookstream`` entry point: registers the ``agui`` provider (hookstream as an AG-UI client), adds
``hookstream serve`` to the command line and declares its hooks (:class:`ServeHookSpecs`, documented in
:mod:`hookstream_server.hookspecs`). Importing this module
imports neither the WSGI app nor waitress: the command's module loads when the command list is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import ProviderRegistrar, hookimpl, hookspec

if TYPE_CHECKING:
    import click

    from .agui import RunInput


@hookimpl
def hookstream_addhooks(pluginmanager: Any) -> None:
    # ``hookstream serve``'s hooks (hookstream_server.hookspecs), for plugins such as hookstream-dbos.
    pluginmanager.add_hookspecs(ServeHookSpecs)


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .serve import command

    cli.add_command(command, "serve")


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    register("agui", "hookstream_server._agui_client:AGUIProvider")


# Here, not in hookspecs.py: loading the entry point imports no other module of the package.
class ServeHookSpecs:
    """The hook specs of ``hookstream serve`` (the module docstring says what each is for)."""

    @staticmethod
    @hookspec
    def hookstream_serve_process(app: Any, slot: int) -> None:
        """This process is about to serve ``app`` (the application :func:`hookstream.server.make_app`
        returned) as worker slot ``slot``.

        Called once in each serving process: ``hookstream serve`` on waitress calls it in its one process
        with slot ``0``; with ``--workers N`` (gunicorn), in each worker after it forked, before it
        accepts a connection, with the worker's slot: ``0`` to ``N - 1``, the smallest slot no live worker
        holds, so the worker that replaces a dead one (killed, crashed) takes the dead one's slot. A
        plugin starts its per-process machinery here (threads do not survive a fork: never in the parent)
        and picks up what a dead holder of the slot left.

        :param app: the WSGI application (has ``run_detached``).
        :param slot: the worker slot, from 0.
        :returns: nothing. Raising stops the process from serving (gunicorn restarts the worker).
        """

    @staticmethod
    @hookspec
    def hookstream_serve_stop(app: Any, slot: int) -> None:
        """This process, worker slot ``slot``, stops serving ``app`` on purpose (a graceful stop: gunicorn's
        worker after its graceful wait for the requests in flight, when told to stop or past
        ``--max-requests``; waitress after Ctrl-C) and is about to exit. Runs still going on are ended by
        the exit; a plugin that keeps runs somewhere that outlives the process leaves them there for the
        slot's next holder. Not called when the process is killed or crashes.

        :param app: the WSGI application.
        :param slot: the worker slot, from 0.
        :returns: nothing (an exception is logged; the process exits all the same).
        """

    @staticmethod
    @hookspec
    def hookstream_serve_exited(app: Any, slot: int) -> None:
        """The process of worker slot ``slot`` exited, however it ended (killed, crashed, or stopped on
        purpose after :func:`hookstream_serve_stop`), and no process holds the slot now.

        Called with ``--workers N`` (gunicorn) only, in the arbiter (the parent of the workers), once the
        worker is reaped and before any worker takes the slot again (gunicorn starts no replacement while a
        reload's new workers run under other slots): a plugin hands what the dead holder of the slot left to
        the live workers. Keep it short (the arbiter waits for it) and start no thread (the arbiter forks).

        :param app: the WSGI application, as the arbiter built it (no worker state).
        :param slot: the worker slot, from 0.
        :returns: nothing (an exception is logged; the server goes on).
        """

    @staticmethod
    @hookspec(firstresult=True)
    def hookstream_serve_run(app: Any, run: RunInput, protocol: str) -> bool | None:
        """A POST is about to start ``run`` (its input as the server parsed it: the thread's history and
        the request's new messages in ``run.messages``, the frontend tools, ``resume``, ``state``,
        ``forwarded_props``, the ``principal``), after authentication, limits, the trust rule, the
        thread's claim and the answers' claims; its event log entry is open (written, for a shared log)
        and the request's new messages are in the store.

        Return ``True`` to take the run over: it will run elsewhere (this process or another, through
        ``app.run_detached(run, protocol)``), its frames logged under ``(run.thread_id, run.run_id)``; the
        server then answers the POST with the run's log as it fills (as the resume route does) and does not
        run it. ``None`` (or ``False``): the server runs it as usual (a plugin may keep the input). The
        POST counts toward its principal's ``max_concurrent_runs`` until its answer ends; a run the plugin
        starts in this process under the same ids is that POST's run and shares its count (one, dropped
        when the later of the two is done); started in another process, it counts there.

        :param app: the WSGI application.
        :param run: the run's :class:`~hookstream.server.RunInput` (do not change it).
        :param protocol: ``"agui"`` (AG-UI SSE), ``"ui"`` (the AI SDK UI message stream) or
            ``"responses"`` (a background OpenAI response, ``POST /v1/responses`` with ``"background": true``).
        :returns: ``True`` when the plugin took the run over, else ``None``.
        """
