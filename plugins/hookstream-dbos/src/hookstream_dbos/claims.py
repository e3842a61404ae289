"""What of a principal's claims a served durable run keeps in its workflow input, so that its recovered
copy sees the principal it had (``docs/durable.md``, "Serving durable runs").

The claims a server's authenticator verified (a JWT's payload: ``sub``, ``iss``, ``aud``, ``exp``, roles,
tenant...) are the server's own word about the caller, not a credential: a recovered run needs them for
the tools and plugins that authorize on them. The journal must never hold a credential, so
:func:`kept_claims` drops, whatever the authenticator put there:

* a claim whose name looks like a credential (:data:`CREDENTIAL_NAME`: ``token``, ``secret``,
  ``password``, ``passphrase``, ``api_key``, ``private_key``, ``privkey``, ``signing_key``, ``credential``,
  ``authorization``, ``cookie``, ``jwt``, ``bearer``... anywhere in the name, any case: ``access_token``,
  ``idToken``, ``client_secret``);
* a claim that holds, at any depth, a string shaped like a JWT, JWS or JWE (:data:`JWT_LIKE`), or a key
  of such a name;
* a claim whose value is not plain JSON (``None``, ``bool``, ``int``, ``float``, ``str``, lists and
  string-keyed dicts of them).

A credential under another name (an opaque API key in a claim called ``x``) cannot be told from data:
an authenticator must not put one among its claims (the built-in ones never do: a static token's
principal has no claims, a JWT's claims are its payload, never the token).

Thread safety: pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["CREDENTIAL_NAME", "JWT_LIKE", "kept_claims"]

CREDENTIAL_NAME = re.compile(r"token|secret|passw|pass_?phrase|pwd|api_?key|priv(ate)?_?key|signing_?key"
                             r"|credential|authoriz|cookie|jwt|bearer", re.IGNORECASE)
"""A claim (or nested key) name that looks like a credential: ``-`` is read as ``_``."""

JWT_LIKE = re.compile(r"eyJ[A-Za-z0-9_-]{5,}\.(?:[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|\.[A-Za-z0-9_-]{8,}\.)")
"""A string that holds a compact JWT, JWS or JWE (base64url segments joined by dots, the first a JSON
object's: ``eyJ``). A JWE whose key is agreed, not sent (``alg`` ``dir``, ``ECDH-ES``: RFC 7516 section
7.1), has an empty second segment: ``header..iv.ciphertext.tag``."""

_DEPTH = 32
"""Nesting deeper than this is not kept (a JWT's payload is never that deep)."""


def kept_claims(claims: Mapping[str, Any]) -> dict[str, Any]:
    """``claims`` (a :class:`hookstream.server.Principal`'s) without what the journal must not hold (see
    the module docstring): a new dict of JSON values, the claims kept as they are."""
    return {name: value for name, value in claims.items()
            if isinstance(name, str) and not _credential_name(name) and _plain(value, 0)}


def _credential_name(name: str) -> bool:
    return CREDENTIAL_NAME.search(name.replace("-", "_")) is not None


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is plain JSON with nothing credential-like in it."""
    if depth > _DEPTH:
        return False
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return JWT_LIKE.search(value) is None
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and not _credential_name(k) and _plain(v, depth + 1) for k, v in value.items())
    return False
