"""Who is asking: principals, and the authenticators a server uses to find them.

An *authenticator* is any callable ``authenticate(request) -> Principal | None`` where ``request`` is
the WSGI environ of the HTTP request (PEP 3333: ``HTTP_AUTHORIZATION``, ``REMOTE_ADDR``...). ``None``
means "not authenticated": the server answers ``401`` with ``WWW-Authenticate: Bearer``. Built in:

* :class:`TokenAuthenticator`: static bearer tokens / API keys, one ``TOKEN PRINCIPAL`` pair per line
  of a file (``hookstream serve --auth-tokens FILE``) or of ``$HOOKSTREAM_AUTH_TOKENS``. A token may be
  stored hashed, ``sha256:HEX``; tokens are compared by SHA-256 digest in constant time
  (:func:`hmac.compare_digest`), and never kept in a repr or log.
* :class:`JWTAuthenticator`: OpenID Connect / OAuth 2.0 bearer JWTs (RFC 7519, RFC 9068) checked by
  PyJWT against the issuer's JSON Web Key Set (RFC 7517): signature, ``exp``, ``nbf``, ``iss`` and
  ``aud`` required and verified; keys fetched through ``PyJWKClient`` and cached (refetched for an
  unknown ``kid``). The JWKS address comes from the issuer's OpenID discovery document
  (``ISSUER/.well-known/openid-configuration``, ``jwks_uri``) unless given.
* Plugins register their own under a name (``hookstream_register_authenticators``); ``hookstream
  serve --auth NAME`` uses one.

:func:`first_of` chains several: the first principal found wins.

Thread safety: authenticators are called from every request thread at once. The built-in ones hold
immutable tables and PyJWT's key client (its cache is thread-safe); a plugin's must be too.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hookstream.server import Authenticator, Principal

__all__ = ["Authenticator", "JWTAuthenticator", "Principal", "TokenAuthenticator", "bearer_token", "first_of"]

log = logging.getLogger("hookstream.auth")


def bearer_token(environ: Mapping[str, Any]) -> str | None:
    """The credential of a request: ``Authorization: Bearer TOKEN`` (RFC 6750 section 2.1), else an
    ``X-API-Key`` header; ``None`` when neither is there."""
    auth = environ.get("HTTP_AUTHORIZATION")
    if isinstance(auth, str):
        scheme, _, token = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    key = environ.get("HTTP_X_API_KEY")
    return key.strip() if isinstance(key, str) and key.strip() else None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenAuthenticator:
    """Static bearer tokens. ``tokens`` maps a token (or ``sha256:HEX``, its SHA-256 in hex) to the
    principal id it stands for. Raises :class:`ValueError` for an empty table, an empty token or
    principal, or a malformed hash. Thread-safe (immutable)."""

    __slots__ = ("_by_digest",)

    def __init__(self, tokens: Mapping[str, str]) -> None:
        by_digest: dict[bytes, str] = {}
        for token, principal in tokens.items():
            if not isinstance(token, str) or not token or not isinstance(principal, str) or not principal:
                raise ValueError("every token needs a non-empty token and principal")
            if token.startswith("sha256:"):
                try:
                    digest = bytes.fromhex(token[7:])
                except ValueError:
                    raise ValueError("a sha256: token needs 64 hex digits") from None
                if len(digest) != 32:
                    raise ValueError("a sha256: token needs 64 hex digits")
            else:
                digest = _digest(token)
            by_digest[digest] = principal
        if not by_digest:
            raise ValueError("no tokens")
        self._by_digest = by_digest

    @classmethod
    def parse(cls, text: str) -> TokenAuthenticator:
        """From ``TOKEN PRINCIPAL`` pairs, one per line (or separated by ``;``); ``#`` starts a
        comment. Raises :class:`ValueError` naming the line (never the token) for a malformed one."""
        tokens: dict[str, str] = {}
        for n, line in enumerate(text.replace(";", "\n").splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 2:
                raise ValueError(f"line {n}: expected 'TOKEN PRINCIPAL'")
            tokens[fields[0]] = fields[1]
        return cls(tokens)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TokenAuthenticator:
        """:meth:`parse` of the file at ``path``. Raises :class:`OSError` or :class:`ValueError`."""
        return cls.parse(Path(path).read_text("utf-8"))

    def __call__(self, environ: Mapping[str, Any]) -> Principal | None:
        token = bearer_token(environ)
        if token is None:
            return None
        digest = _digest(token)
        found = None
        for known, principal in self._by_digest.items():  # every entry, so timing says nothing
            if hmac.compare_digest(known, digest):
                found = principal
        return Principal(found) if found is not None else None

    def __repr__(self) -> str:
        return f"TokenAuthenticator({len(self._by_digest)} tokens)"


class JWTAuthenticator:
    """Bearer JWTs from ``issuer`` for ``audience`` (see the module docstring).

    ``jwks_url`` defaults to the issuer's discovery document's ``jwks_uri``; ``algorithms`` are the
    accepted signature algorithms (asymmetric only by default: a token can never choose ``none`` or
    an HMAC keyed by the public key); ``leeway`` is the clock skew allowed on ``exp``/``nbf``, in
    seconds; ``principal_claim`` names the claim that becomes :attr:`Principal.id` (``sub``).
    ``cache_seconds`` is how long fetched keys are trusted before the JWKS is read again. A token
    that fails any check, or whose keys cannot be fetched, authenticates nobody (``None``, logged at
    debug level without the token). Raises :class:`ImportError` naming the extra when PyJWT is
    missing, :class:`ValueError` for an empty issuer or audience.
    """

    def __init__(
        self,
        issuer: str,
        audience: str | Iterable[str],
        *,
        jwks_url: str | None = None,
        algorithms: Iterable[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        leeway: float = 30.0,
        principal_claim: str = "sub",
        cache_seconds: float = 300.0,
    ) -> None:
        try:
            import jwt
        except ImportError:
            from hookstream.plugin import install_command

            raise ImportError(f"JWT authentication needs PyJWT: {install_command('hookstream[serve]')}") from None
        if not issuer:
            raise ValueError("issuer must be given")
        aud = [audience] if isinstance(audience, str) else list(audience)
        if not aud or not all(aud):
            raise ValueError("audience must be given")
        self.issuer = issuer.rstrip("/") if issuer.endswith("/") and issuer.count("/") > 3 else issuer
        self.audience = aud
        self.algorithms = list(algorithms)
        self.leeway = float(leeway)
        self.principal_claim = principal_claim
        self._jwt = jwt
        self._jwks_url = jwks_url
        self._cache_seconds = cache_seconds
        self._client: Any = None
        self._lock = threading.Lock()

    def _keys(self) -> Any:
        with self._lock:
            if self._client is None:
                url = self._jwks_url or self._discover()
                self._client = self._jwt.PyJWKClient(url, cache_keys=True, lifespan=self._cache_seconds)
            return self._client

    def _discover(self) -> str:
        import requests

        doc = requests.get(self.issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=10).json()
        url = doc.get("jwks_uri") if isinstance(doc, dict) else None
        if not isinstance(url, str):
            raise ValueError(f"{self.issuer} publishes no jwks_uri")
        return url

    def __call__(self, environ: Mapping[str, Any]) -> Principal | None:
        token = bearer_token(environ)
        if token is None or token.count(".") != 2:
            return None
        jwt = self._jwt
        try:
            key = self._keys().get_signing_key_from_jwt(token).key
            claims = jwt.decode(token, key, algorithms=self.algorithms, audience=self.audience, issuer=self.issuer,
                                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except Exception as exc:  # jwt.PyJWTError, a JWKS fetch that failed: nobody is authenticated
            log.debug("JWT rejected: %s", type(exc).__name__)
            return None
        subject = claims.get(self.principal_claim)
        if not isinstance(subject, str) or not subject:
            return None
        return Principal(subject, claims)

    def __repr__(self) -> str:
        return f"JWTAuthenticator(issuer={self.issuer!r}, audience={self.audience!r})"


def first_of(*authenticators: Authenticator) -> Authenticator:
    """One authenticator asking each of ``authenticators`` in turn; the first principal wins. Raises
    :class:`TypeError` for one that is not callable."""
    for a in authenticators:
        if not callable(a):
            raise TypeError(f"an authenticator must be callable, not {type(a).__name__}")

    def authenticate(environ: Mapping[str, Any]) -> Principal | None:
        for a in authenticators:
            principal = a(environ)
            if principal is not None:
                return principal
        return None

    return authenticate
