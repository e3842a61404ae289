"""Who may call a server that has no authentication: no cross-site requests, no DNS rebinding.

A server without authentication serves whoever reaches it, and a web page the user opens reaches a
loopback server too: a browser sends a cross-origin "simple" request (a ``text/plain`` POST) without a
preflight, so any site could start runs (and answer their approvals); and DNS rebinding (a site's name
re-resolved to ``127.0.0.1``) makes such requests same-origin for the browser. :func:`local_only`
refuses both, as Jupyter's server does (``check_origin`` and ``check_host``):

* a request with an ``Origin`` header (RFC 6454; browsers send it on every cross-origin request and on
  same-origin POSTs) is served only when that origin is one of ``cors_origins`` (``"*"``: any) or is
  the server's own (``scheme://`` plus the request's ``Host``);
* on a loopback bind, a request whose ``Host`` is not ``localhost``, a loopback address
  (``127.0.0.0/8``, ``[::1]``) or the bound address, with any port, is refused; a request without
  ``Host`` (HTTP/1.0, never a browser) is served.

A refusal is ``403 Forbidden`` with ``{"error": {"message": ...}}``, before the application sees the
request (no body read, no run, nothing stored). A server with authentication does not need this: a
page cannot send the user's bearer token, and its CORS answers are the application's
(``make_app(cors_origins=...)``).

Thread safety: the middleware keeps no state.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["is_loopback", "local_only"]

_App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is ``localhost`` or a
    loopback address (127.0.0.0/8, ``::1``)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """``Host`` without its port: ``[::1]:8000`` -> ``[::1]``, ``localhost:8000`` -> ``localhost``."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def local_only(app: _App, *, bound_host: str, cors_origins: Iterable[str] = ()) -> _App:
    """``app`` behind the checks of the module docstring: ``bound_host`` is the address the server
    listens on (the ``Host`` check applies when it is a loopback one), ``cors_origins`` the browser
    origins allowed to call (``"*"``: any)."""
    origins = frozenset(cors_origins)
    check_host = is_loopback(bound_host)
    bound = bound_host.strip("[]").lower()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refusal = _refusal(environ, origins, check_host, bound)
        if refusal is None:
            return app(environ, start_response)
        body = json.dumps({"error": {"message": refusal}}).encode()
        start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return guarded


def _refusal(environ: Mapping[str, Any], origins: frozenset[str], check_host: bool, bound: str) -> str | None:
    """Why the request is refused, or ``None``."""
    host = environ.get("HTTP_HOST")
    if check_host and isinstance(host, str):
        name = _host_name(host.strip())
        if not (is_loopback(name) or name.strip("[]").lower() == bound):
            return (f"Host {host!r:.100} is not this machine: a server without authentication answers only "
                    "localhost, 127.0.0.1 and [::1]")
    origin = environ.get("HTTP_ORIGIN")
    if origin is None or "*" in origins or origin in origins:
        return None
    scheme = environ.get("wsgi.url_scheme", "http")
    if isinstance(host, str) and origin.lower() == f"{scheme}://{host.strip()}".lower():
        return None  # the server's own page
    return (f"Origin {origin!r:.100} may not call a server without authentication "
            "(serve --cors-origin ORIGIN allows one)")
