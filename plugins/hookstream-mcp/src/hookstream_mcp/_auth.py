"""Logging in to an MCP server over HTTP: OAuth 2.1 through the MCP SDK's own client providers.

MCP spec, "Basic" > "Authorization": a server that needs a login answers 401 with a
``WWW-Authenticate`` header; the client discovers the protected resource metadata (RFC 9728) and the
authorization server's metadata (RFC 8414), registers (RFC 7591, a client ID metadata document, or a
pre-registered client), gets a token and retries. The SDK does all of that
(``mcp.client.auth.OAuthClientProvider``, an ``httpx2.Auth``); this module gives it what only an
application can: where tokens are kept (:class:`FileTokenStorage`, in hookstream's user directory, mode
0600), how the user is sent to the authorization page and how the ``code`` comes back (a one-shot
``http.server`` on 127.0.0.1, :class:`LoopbackRedirect`), and for scripts the client-credentials grant
(``mcp.client.auth.extensions.client_credentials.ClientCredentialsOAuthProvider``).

Tokens and secrets are never printed or logged: the reprs of :class:`OAuth` and
:class:`ClientCredentials` hide them, and the storage file is created 0600 in a 0700 directory.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import http.server
import json
import os
import threading
import webbrowser
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import attrs
from hookstream.plugin import user_dir

__all__ = ["ClientCredentials", "FileTokenStorage", "LoopbackRedirect", "OAuth", "build_provider", "token_path"]

# Seconds the loopback redirect waits for the browser to come back with the code; a person logs in
# meanwhile, so this bounds an abandoned login, not an expected duration.
_LOGIN_WAIT = 300.0
_PAGE = (b"<!doctype html><meta charset=utf-8><title>hookstream</title>"
         b"<p>Logged in: you can close this tab and go back to hookstream.</p>")


def token_path(server_url: str) -> Path:
    """The file that holds the tokens and client registration for ``server_url``:
    ``<user dir>/mcp-oauth/<sha256 of the URL, 24 hex digits>.json`` (the URL itself is not in the name,
    its query may hold credentials)."""
    digest = hashlib.sha256(server_url.encode()).hexdigest()[:24]
    return user_dir() / "mcp-oauth" / f"{digest}.json"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` protocol over one JSON file (:func:`token_path`): ``tokens`` (an
    ``OAuthToken``) and ``client_info`` (an ``OAuthClientInformationFull``, the registration).

    The file is written atomically (a temporary file renamed over it), created with mode 0600 in a
    directory made 0700; a file that cannot be read or parsed counts as empty (the next login rewrites
    it). Thread-safe for one process."""

    __slots__ = ("_lock", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            data = self._read()
            data[key] = value
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))


class _MemoryStorage:
    """Tokens kept for this process only (``OAuth(store=False)``)."""

    __slots__ = ("client_info", "tokens")

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def open_in_browser(url: str) -> None:
    """The default ``open_url``: says on stderr where to log in (a machine without a browser, or over
    SSH, still shows the URL to copy), then opens it with :func:`webbrowser.open`."""
    import sys

    print(f"hookstream-mcp: log in at {url}", file=sys.stderr, flush=True)
    webbrowser.open(url)


class LoopbackRedirect:
    """The authorization-code redirect for a program on the user's machine (RFC 8252 §7.3): an HTTP
    server on ``127.0.0.1:port`` whose handler, during a login, takes the first request to ``/callback``
    carrying that login's ``state`` and a ``code`` (or an ``error``), and answers it with a short page.

    :meth:`reserve` binds the port (0: a free one the system picks) and keeps listening on it until
    :meth:`close`: the redirect URI is registered with the authorization server before the login starts,
    and a port given back in between could be taken by another program (then the login could not
    come back). :meth:`redirect` (the SDK's ``redirect_handler``) starts answering, then hands the
    authorization URL to ``open_url`` (default :func:`open_in_browser`); :meth:`callback` (the SDK's
    ``callback_handler``) waits up to ``timeout`` seconds for the redirect and returns its ``code``,
    ``state`` and ``iss``. A request between logins waits for the next one, or is refused at
    :meth:`close`. One login at a time (the SDK's provider holds its lock around a login); :meth:`close`
    is safe from any thread.
    """

    __slots__ = ("_done", "_port", "_result", "_server", "_state", "_thread", "open_url", "timeout")

    def __init__(self, port: int = 0, open_url: Callable[[str], object] | None = None,
                 timeout: float = _LOGIN_WAIT) -> None:
        self._port = port
        self.open_url = open_url
        self.timeout = timeout
        self._result: dict[str, str] | None = None
        self._state: str | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: http.server.HTTPServer | None = None

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:<port>/callback``."""
        return f"http://127.0.0.1:{self._port}/callback"

    def reserve(self) -> bool:
        """Bind and listen on the port now (port 0: pick a free one, then :attr:`redirect_uri` names it).
        Returns False when a given port is in use (:meth:`redirect` tries again at the login); raises
        :class:`OSError` when no port can be had at all."""
        if self._server is None:
            try:
                self._server = self._bind()
            except OSError:
                if self._port == 0:
                    raise
                return False
            self._port = int(self._server.server_address[1])
        return True

    def close(self) -> None:
        """Stop listening; the port is given back. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.server_close()

    def _bind(self) -> http.server.HTTPServer:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path != "/callback" or not ({"code", "error"} & query.keys()):
                    self.send_error(404)
                    return
                if owner._state is not None and query.get("state") != owner._state:
                    # Another login's redirect (an old tab, a reload): it must not end this one.
                    self.send_error(400, "Not the login in progress")
                    return
                body = _PAGE if "code" in query else b"<!doctype html><p>The login was refused.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if owner._result is None:
                    owner._result = query
                    owner._done.set()

            def log_message(self, format: str, *args: Any) -> None:  # the query holds the code: no log
                pass

        # HTTPServer binds with SO_REUSEADDR (a previous login's closed connections do not hold the
        # port) and listens at once: no other socket can bind a port in LISTEN.
        server = http.server.HTTPServer(("127.0.0.1", self._port), Handler)
        server.timeout = 0.2  # how often the serving thread looks whether the login was abandoned
        return server

    def _serve(self, server: http.server.HTTPServer) -> None:
        """Answer requests until one brings the code (or an error), or ``timeout`` seconds pass."""
        try:
            for _ in range(max(1, int(self.timeout / 0.2))):
                if self._done.is_set() or self._server is not server:
                    break
                server.handle_request()
        except (OSError, ValueError):  # closed meanwhile (close() from another thread)
            pass
        finally:
            self._done.set()

    async def redirect(self, authorization_url: str) -> None:
        """Answer on the loopback port, then open ``authorization_url`` (the SDK's ``redirect_handler``).
        Raises :class:`OSError` when the port was not reserved and is now in use."""
        self._result = None
        self._done.clear()
        self._state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]
        if not self.reserve():
            raise OSError(errno.EADDRINUSE, f"the login's redirect port {self._port} is in use by another program "
                                            "(OAuth(redirect_port=...), or the one registered in the token file)")
        assert self._server is not None
        self._thread = threading.Thread(target=self._serve, args=(self._server,), name="hookstream-mcp login",
                                        daemon=True)
        self._thread.start()
        await asyncio.to_thread(self.open_url or open_in_browser, authorization_url)

    def _wait(self) -> dict[str, str]:
        self._done.wait(self.timeout + 1)
        if self._thread is not None:
            self._thread.join()
        if self._result is None:
            raise TimeoutError(f"no login came back to {self.redirect_uri} within {self.timeout} s")
        return self._result

    async def callback(self) -> Any:
        """Wait for the redirect; the SDK's ``callback_handler``. Raises the SDK's ``OAuthFlowError``
        when the authorization server sent an ``error`` back, :class:`TimeoutError` past ``timeout``."""
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        query = await asyncio.to_thread(self._wait)
        if "code" not in query:
            detail = query.get("error_description") or ""
            raise OAuthFlowError(f"the authorization server refused the login: {query.get('error')} {detail}".strip())
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


@attrs.define(slots=True, frozen=True)
class OAuth:
    """Log in with OAuth 2.1 (authorization code + PKCE), as the MCP spec's "Authorization" section says.

    On the first 401 the MCP SDK discovers the server's authorization server, registers this client
    (dynamic registration, or ``client_metadata_url`` when the server takes a client ID metadata
    document, or the pre-registered ``client_id``/``client_secret``), opens the login page with
    ``open_url`` (default: prints the URL on stderr and opens the browser) and takes the ``code`` on a loopback redirect
    (``http://127.0.0.1:<redirect_port>/callback``; a free port is picked once, held while the session
    lasts, and kept with the registration). Tokens are refreshed by the SDK and kept in hookstream's user directory
    (:func:`token_path`, mode 0600) unless ``store=False``; the next run uses them without a login.

    ``scope``: the scopes to ask for (space-separated; default: what the server's ``WWW-Authenticate``
    or metadata says). ``login_timeout``: seconds to wait for the browser to come back.
    """

    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    client_name: str = "hookstream"
    client_metadata_url: str | None = None
    redirect_port: int | None = None
    open_url: Callable[[str], object] | None = attrs.field(default=None, repr=False)
    store: bool = True
    login_timeout: float = _LOGIN_WAIT


@attrs.define(slots=True, frozen=True)
class ClientCredentials:
    """Log in as a program, with no person (OAuth client-credentials grant, the MCP authorization
    extension for machine-to-machine access): ``client_id`` and either ``client_secret``, sent as HTTP
    Basic (``client_secret_basic``, default) or in the form body (``client_secret_post``), or
    ``private_key`` (PEM), which signs a JWT assertion instead (``private_key_jwt``, RFC 7523; algorithm
    ``signing_algorithm``). ``issuer`` names the authorization server the credentials belong to (then
    they are sent nowhere else). The token is kept like :class:`OAuth`'s unless ``store=False``.
    Raises :class:`ValueError` unless exactly one of ``client_secret`` and ``private_key`` is given."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    private_key: str | None = attrs.field(default=None, repr=False, kw_only=True)
    signing_algorithm: str = attrs.field(default="RS256", kw_only=True)
    issuer: str | None = None
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    store: bool = True

    def __attrs_post_init__(self) -> None:
        if (self.client_secret is None) == (self.private_key is None):
            raise ValueError("ClientCredentials: give either client_secret or private_key")


def _storage(server_url: str, store: bool) -> Any:
    return FileTokenStorage(token_path(server_url)) if store else _MemoryStorage()


def _redirect_port(storage: Any, wanted: int | None) -> int:
    """The loopback port: the one given, else the one of the stored registration (an authorization
    server compares the redirect URI with the registered one), else 0 (a free one, picked by binding it)."""
    if wanted is not None:
        return wanted
    if isinstance(storage, FileTokenStorage):
        for uri in (storage._read().get("client_info") or {}).get("redirect_uris") or ():
            parts = urlsplit(str(uri))
            if parts.hostname == "127.0.0.1" and parts.port:
                return parts.port
    return 0


async def build_provider(server_url: str, auth: OAuth | ClientCredentials, stack: AsyncExitStack) -> Any:
    """On the loop thread: the SDK's ``httpx2.Auth`` for ``auth`` against the MCP endpoint ``server_url``;
    what it holds (the login's loopback port) is given back when ``stack`` closes."""
    import warnings

    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    storage = _storage(server_url, auth.store)
    if isinstance(auth, ClientCredentials):
        from mcp.client.auth.extensions import client_credentials as cc

        with warnings.catch_warnings():
            # Without an issuer the SDK warns that 3.0 will need one; the user chose to trust discovery.
            warnings.simplefilter("ignore")
            if auth.private_key is not None:
                signer = cc.SignedJWTParameters(issuer=auth.client_id, subject=auth.client_id,
                                                signing_key=auth.private_key, signing_algorithm=auth.signing_algorithm)
                return cc.PrivateKeyJWTOAuthProvider(server_url, storage, auth.client_id,
                                                     signer.create_assertion_provider(), scope=auth.scope,
                                                     issuer=auth.issuer)
            assert auth.client_secret is not None
            return cc.ClientCredentialsOAuthProvider(
                server_url, storage, auth.client_id, auth.client_secret,
                token_endpoint_auth_method=auth.token_endpoint_auth_method, scope=auth.scope, issuer=auth.issuer)
    port = _redirect_port(storage, auth.redirect_port)
    loopback = LoopbackRedirect(port, auth.open_url, auth.login_timeout)
    stack.callback(loopback.close)
    if port == 0:
        # A new port goes into the registration: hold it from now on, or another program's bind could
        # take it before the login listens there (seen as a login that never reached the authorization
        # page when many clients start at once).
        loopback.reserve()
    metadata = OAuthClientMetadata(
        client_name=auth.client_name, redirect_uris=[loopback.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=auth.scope)
    if auth.client_id is not None:
        # Pre-registered: the SDK skips registration when the storage already holds the client.
        pre = OAuthClientInformationFull(
            client_id=auth.client_id, client_secret=auth.client_secret,
            redirect_uris=[loopback.redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic" if auth.client_secret else "none")
        await storage.set_client_info(pre)
    return OAuthClientProvider(server_url, metadata, storage, redirect_handler=loopback.redirect,
                               callback_handler=loopback.callback, client_metadata_url=auth.client_metadata_url)

