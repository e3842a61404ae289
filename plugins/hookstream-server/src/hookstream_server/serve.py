"""``hookstream serve``: the AG-UI WSGI application (:func:`hookstream.server.make_app`) on waitress, or on
gunicorn worker processes with ``--workers N`` (``hookstream_server.workers``).

``--workers 1`` (the default) stays on waitress: one process, no fork, and it runs on Windows too;
gunicorn is Unix-only. ``--store URL`` keeps threads in a database (:func:`hookstream.stores.open_store`);
with several workers a store is what lets any worker serve any turn, so ``--workers N`` without one
uses ``sqlite:///hookstream-threads.db`` (not with ``--demo``, whose recording repeats its tool call ids
every turn).

Authentication (``docs/agui-server.md``, "Deployment"): ``--auth-tokens FILE`` (or
``$HOOKSTREAM_AUTH_TOKENS``, the same ``TOKEN PRINCIPAL`` pairs inline), ``--jwt-issuer`` with
``--jwt-audience`` (OIDC bearer JWTs), ``--auth NAME`` (a plugin's authenticator); several may be
given, the first that knows the caller wins. A non-loopback ``--host`` without one of them is refused
unless ``--no-auth`` says so. Limits per principal and per request: ``--max-concurrent-runs``,
``--max-runs-per-minute``, ``--max-messages``, ``--max-message-bytes``, ``--max-run-seconds``,
``--max-resume-streams``, ``--event-log-bytes``, ``--event-log-principal-bytes``, ``--ping-seconds``,
``--detached-run-seconds``;
``--cors-origin`` (repeatable) names the browser origins allowed to call. Without authentication, a
request from any other origin, or (on a loopback ``--host``) naming a ``Host`` other than this machine,
is refused with ``403`` (``hookstream_server.guard``: cross-site requests, DNS rebinding).

Slow clients (``docs/agui-server.md``, "Limits"): every request must be read within its deadline
(``hookstream_server.limits.request_read_deadline``: headers in 3 s, the body at 32 KiB/s, all of it
in 120 s) on either server; waitress holds up to 1,000 connections (``hookstream_server.waitress_channel``),
each gunicorn worker 1,000 (``hookstream_server.gthread_worker``).

Without a store the approvals the server hands out are signed (``--approval-secret`` /
``$HOOKSTREAM_APPROVAL_SECRET``, else a random key made once here, before gunicorn forks, so every worker
shares it), and the ids used are recorded in a SQLite file made here too, so a replay is refused on
every worker.

waitress is a well-kept, pure-Python, multi-threaded WSGI server; with its default ``send_bytes=1`` each
SSE frame the application yields is written to the socket at once (chunked transfer encoding), so events
reach the client as they are produced. It is an optional dependency: ``pip install 'hookstream[serve]'``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import click
from hookstream import RunSettings
from hookstream.plugin import RunCommand, configured, full_model_name, print_notes, run_settings
from hookstream.stores import ConversationStore, InMemoryStore, open_store

from .agui import make_app
from .auth import Authenticator, JWTAuthenticator, TokenAuthenticator, first_of
from .guard import is_loopback, local_only
from .hookspecs import serve_process, serve_stop
from .limits import ServerLimits

TOKENS_ENV = "HOOKSTREAM_AUTH_TOKENS"


def build_app(model: str | None, settings: RunSettings, base_url: str | None, demo: bool, delay: float,
              store: ConversationStore | None = None, *, authenticate: Authenticator | None = None,
              limits: ServerLimits | None = None, cors_origins: Sequence[str] = (),
              approval_secret: str | None = None, resumable: bool = True) -> Any:
    """The WSGI application ``serve`` runs: every run of ``model`` goes as ``settings`` say (the server's
    tools are ``settings.tools``). Raises :class:`click.UsageError`."""
    guard: dict[str, Any] = {"store": store, "authenticate": authenticate, "limits": limits,
                             "cors_origins": cors_origins, "approval_secret": approval_secret,
                             "resumable": resumable}
    try:
        if demo:
            from .demo import demo_factory

            return make_app(stream_factory=demo_factory(delay=delay), **guard)
        if not model:
            raise click.UsageError("--model PROVIDER:MODEL is required (or --demo for the offline demo)")
        if any(hasattr(p, "for_principal") for p in settings.plugins):
            return make_app(stream_factory=_per_principal(model, settings, base_url), **guard)
        # chat()'s tools= keyword (the server's tools and the request's) replaces settings.tools in each run.
        return make_app(model, tools=settings.tools, base_url=base_url, settings=settings, **guard)
    except (ValueError, LookupError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None


def _per_principal(model: str, settings: RunSettings, base_url: str | None) -> Any:
    """A stream factory whose runs use, for each run plugin with a ``for_principal(principal_id)`` method
    (the response cache of ``--cache``), the plugin it returns for the run's principal, so what one
    principal's runs leave (cached answers) is never served to another's. One provider (one connection
    pool) for every run, as :func:`chat_factory` has."""
    from hookstream import get_model

    from .agui import RunInput, chat_factory

    provider = get_model(model, base_url=base_url)

    def start(run: RunInput) -> Any:
        who = run.principal.id if run.principal is not None else None
        plugins = tuple(p.for_principal(who) if hasattr(p, "for_principal") else p for p in settings.plugins)
        return chat_factory(provider, settings=settings.evolve(plugins=plugins), tools=settings.tools)(run)

    return start


def authenticator(tokens_file: str | None, jwt_issuer: str | None, jwt_audience: tuple[str, ...],
                  jwks_url: str | None, plugin_names: tuple[str, ...]) -> Authenticator | None:
    """The server's authenticator from the flags (``None``: none given). Raises
    :class:`click.UsageError` naming the flag for an unreadable or malformed setting (never a token)."""
    chain: list[Authenticator] = []
    try:
        if tokens_file:
            chain.append(TokenAuthenticator.from_file(tokens_file))
        if os.environ.get(TOKENS_ENV):
            chain.append(TokenAuthenticator.parse(os.environ[TOKENS_ENV]))
    except (OSError, ValueError) as exc:
        raise click.UsageError(f"--auth-tokens / ${TOKENS_ENV}: {exc}") from None
    if jwt_issuer or jwt_audience:
        if not (jwt_issuer and jwt_audience):
            raise click.UsageError("--jwt-issuer and --jwt-audience go together")
        try:
            chain.append(JWTAuthenticator(jwt_issuer, jwt_audience, jwks_url=jwks_url))
        except (ImportError, ValueError) as exc:
            raise click.UsageError(f"--jwt-issuer: {exc}") from None
    if plugin_names:
        from hookstream import get_registry

        for name in plugin_names:
            try:
                chain.append(get_registry().authenticator(name)())
            except LookupError as exc:
                raise click.UsageError(f"--auth {name}: {exc}") from None
    if not chain:
        return None
    return chain[0] if len(chain) == 1 else first_of(*chain)


@click.command("serve", cls=RunCommand)
@click.option("-m", "--model", default=None, help="PROVIDER:MODEL, e.g. openai:gpt-4o-mini.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True, help="0 picks a free port.")
@click.option("--threads", type=int, default=8, show_default=True, help="Concurrent runs served (per worker).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (gunicorn, Unix); 1 serves in this process (waitress).")
@click.option("--store", "store_url", default=None,
              help="Keep threads in sqlite:///PATH or postgresql://... (default with --workers N: "
                   "sqlite:///hookstream-threads.db, except with --demo).")
@click.option("--demo", is_flag=True, help="Serve the bundled offline demo (no API key, no network).")
@click.option("--delay", type=float, default=0.03, show_default=True, help="--demo: seconds between SSE events.")
@click.option("--auth-tokens", "tokens_file", default=None, metavar="FILE",
              help=f"Static bearer tokens: one 'TOKEN PRINCIPAL' line each (TOKEN may be sha256:HEX). "
                   f"${TOKENS_ENV} holds the same pairs inline.")
@click.option("--jwt-issuer", default=None, metavar="URL", help="Accept bearer JWTs from this OIDC issuer.")
@click.option("--jwt-audience", multiple=True, metavar="AUD", help="The audience the JWTs must name (repeatable).")
@click.option("--jwks-url", default=None, metavar="URL",
              help="The issuer's JWKS (default: from its discovery document).")
@click.option("--auth", "auth_plugins", multiple=True, metavar="NAME", help="A plugin's authenticator (repeatable).")
@click.option("--no-auth", is_flag=True, help="Serve without authentication, even on a non-loopback --host.")
@click.option("--max-concurrent-runs", type=click.IntRange(min=1), default=4, show_default=True,
              help="Runs of one principal at once, and its requests whose body is being read (across workers).")
@click.option("--max-runs-per-minute", type=click.IntRange(min=1), default=60, show_default=True,
              help="Runs one principal may start per minute (across workers).")
@click.option("--max-messages", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Messages in one request (and in a conversation steering adds to).")
@click.option("--max-message-bytes", type=click.IntRange(min=1), default=16 * 1024 * 1024, show_default=True,
              help="Bytes of one request's messages (and of a run's request plus what steering adds).")
@click.option("--max-run-seconds", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Wall-clock seconds a run may take; then it is cancelled and ends with RUN_ERROR run_timeout.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="A browser origin allowed to call (repeatable; none by default).")
@click.option("--approval-secret", envvar="HOOKSTREAM_APPROVAL_SECRET", default=None, metavar="SECRET",
              help="Without --store: the key that signs the approvals handed out (at least 16 bytes; prefer "
                   "$HOOKSTREAM_APPROVAL_SECRET). Default: random per server (its --workers share it); give "
                   "one to several servers behind one address, or to keep approvals valid over a restart.")
@click.option("--resume-seconds", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Seconds a run's event log is kept after it ends, for a client that reconnects.")
@click.option("--no-resume", is_flag=True,
              help="No event log and no SSE ids: a client that disconnects cancels its run at once.")
@click.option("--ping-seconds", type=click.FloatRange(min=0, min_open=True), default=15.0, show_default=True,
              help="A quiet stream sends ': ping' this often, so a client that left is noticed and its thread freed.")
@click.option("--detached-run-seconds", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="How long a run whose client left goes on (logged, for a reconnect) before it is cancelled.")
@click.option("--max-resume-streams", type=click.IntRange(min=1), default=4, show_default=True,
              help="Resumed streams of one principal open at once (per worker).")
@click.option("--event-log-bytes", type=click.IntRange(min=1), default=256 * 1024 * 1024, show_default=True,
              help="Without a SQL --store: bytes the memory event log keeps of all runs (oldest ended dropped first).")
@click.option("--event-log-principal-bytes", type=click.IntRange(min=1), default=32 * 1024 * 1024,
              show_default=True, help="Without a SQL --store: bytes the memory event log keeps per principal.")
def command(model: str | None, base_url: str | None, host: str, port: int, threads: int, workers: int,
            store_url: str | None, demo: bool, delay: float, tokens_file: str | None, jwt_issuer: str | None,
            jwt_audience: tuple[str, ...], jwks_url: str | None, auth_plugins: tuple[str, ...], no_auth: bool,
            max_concurrent_runs: int, max_runs_per_minute: int, max_messages: int, max_message_bytes: int,
            max_run_seconds: float, cors_origins: tuple[str, ...], approval_secret: str | None,
            resume_seconds: float, no_resume: bool, ping_seconds: float, detached_run_seconds: float,
            max_resume_streams: int,
            event_log_bytes: int, event_log_principal_bytes: int, **run_options: Any) -> None:
    """Serve AG-UI runs over HTTP (POST a RunAgentInput), OpenAI Chat Completions at /v1, and a chat page at /."""
    model = full_model_name(model) if model else model
    authenticate = authenticator(tokens_file, jwt_issuer, jwt_audience, jwks_url, auth_plugins)
    if authenticate is not None and no_auth:
        raise click.UsageError("--no-auth contradicts the authentication settings given")
    if authenticate is None and not is_loopback(host):
        if not no_auth:
            raise click.UsageError(
                f"refusing to serve on {host} without authentication: anyone who can reach it would be every "
                f"user. Give --auth-tokens FILE (or ${TOKENS_ENV}), --jwt-issuer URL --jwt-audience AUD, or "
                "--auth PLUGIN; or --no-auth to serve openly anyway.")
        click.echo(f"warning: serving on {host} without authentication (--no-auth): anyone who can reach it can "
                   "read and continue every thread", err=True)
    limits = ServerLimits(max_concurrent_runs=max_concurrent_runs, runs_per_minute=max_runs_per_minute,
                          max_messages=max_messages, max_message_bytes=max_message_bytes,
                          max_run_seconds=max_run_seconds, event_log_seconds=resume_seconds,
                          ping_seconds=ping_seconds, detached_run_seconds=detached_run_seconds,
                          max_resume_streams=max_resume_streams,
                          event_log_total_bytes=event_log_bytes, event_log_principal_bytes=event_log_principal_bytes)
    if workers > 1 and store_url is None and not demo:
        # The demo is a recording: every question replays the same tool call ids, which a store would
        # take for messages it already holds. Without a store it stays stateless (full-history clients).
        store_url = "sqlite:///hookstream-threads.db"
    store = None
    if store_url is not None:
        try:
            store = open_store(store_url)
        except (ValueError, ImportError, OSError) as exc:
            raise click.UsageError(f"--store: {exc}") from None
        except Exception as exc:  # the database's own error (sqlite3.Error, psycopg.Error)
            raise click.UsageError(f"--store: cannot open the store: {type(exc).__name__}: {exc}") from None
    if workers > 1 and isinstance(store, InMemoryStore):
        raise click.UsageError("--store memory: lives in one process; with --workers use sqlite:/// or postgresql://")
    settings = run_settings(run_options)
    with configured("serve", settings) as run:
        print_notes(run)
        app = build_app(model, run.settings, base_url, demo, delay, store, authenticate=authenticate,
                        limits=limits, cors_origins=cors_origins, approval_secret=approval_secret,
                        resumable=not no_resume)
        served = app
        if authenticate is None:
            # Without a credential to ask for, a web page the user opens must not drive the server
            # (cross-site requests, DNS rebinding): hookstream_server.guard.
            app = local_only(app, bound_host=host, cors_origins=cors_origins)
        _serve(app, host, port, workers, threads, limits, served)


def _serve(app: Any, host: str, port: int, workers: int, threads: int, limits: ServerLimits,
           served: Any = None) -> None:
    """Serve ``app`` until Ctrl-C: on gunicorn worker processes, or waitress in this one. ``served`` is
    make_app's application inside ``app`` (what the serve hooks are given)."""
    served = app if served is None else served
    if workers > 1:
        from .workers import run_workers

        run_workers(app, host, port, workers, threads, served=served)
        return
    try:
        from .waitress_channel import make_server
    except ImportError:
        from hookstream.plugin import install_command

        raise click.ClickException(f"hookstream serve needs waitress: {install_command('hookstream[serve]')}") from None
    # An oversized body is refused from its Content-Length, before waitress buffers it (413); a slow
    # request is cut off at its read deadline (hookstream_server.waitress_channel).
    try:
        server = make_server(app, host, port, threads, limits.max_body_bytes)
    except OSError as exc:  # the port is taken, the host is not this machine's, a port below 1024...
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc} (another server "
                                   "there? give another --port, or --port 0 for any free one)") from None
    bound_host = f"[{server.effective_host}]" if ":" in server.effective_host else server.effective_host
    serve_process(served, 0)  # one process: slot 0, so a restarted server picks up what the last one left
    # One parseable line on stdout, flushed, so a parent process (tests, scripts) can read the port.
    click.echo(f"hookstream serve: listening on http://{bound_host}:{server.effective_port}/", nl=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    serve_stop(served, 0)
