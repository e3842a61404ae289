"""What of a served durable run's input its workflow keeps: the principal's claims, so that its recovered
copy sees the principal it had, and the client's ``state`` and ``forwardedProps``, without a credential
(``docs/durable.md``, "Serving durable runs").

The claims a server's authenticator verified (a JWT's payload: ``sub``, ``iss``, ``aud``, ``exp``, roles,
tenant...) are the server's own word about the caller, not a credential: a recovered run needs them for
the tools and plugins that authorize on them. A client's ``state`` and ``forwardedProps`` are its own
data, but some front ends put an API key or a bearer token there. The journal must never hold a
credential, so one rule, :func:`kept_json`, leaves out of a JSON value, at any depth:

* an entry whose name looks like a credential (:data:`CREDENTIAL_NAME`: ``token``, ``secret``,
  ``password``, ``passphrase``, ``passcode``, ``api_key``, ``private_key``, ``privkey``, ``signing_key``,
  ``credential``, ``authorization``, ``cookie``, ``jwt``, ``bearer``... anywhere in the name, any case:
  ``access_token``, ``idToken``, ``client_secret``, ``x-api-key``; not the counts of LLM tokens:
  ``max_tokens``, ``token_count``, ``token_budget``, ``tokenizer``, nor what says which token a token is:
  ``token_use``, ``token_type``), unless its value is ``true``, ``false`` or ``null``, which hold no
  credential (``has_password``, ``password_set``);
* a string that looks like a credential (:data:`CREDENTIAL_VALUE`): one holding a JWT, JWS or JWE
  (:data:`JWT_LIKE`), an ``Authorization`` value (``Bearer ...``), or a well-known API key's shape
  (``sk-...``, ``AIza...``, ``ghp_...``, ``xoxb-...``, ``AKIA...``, ``sk_live_...``, ``hf_...``,
  ``glpat-...``, ``npm_...``);
* what is not plain JSON (``None``, ``bool``, ``int``, ``float``, ``str``, lists and string-keyed dicts of
  them), and nesting deeper than 32.

:func:`kept_claims` keeps a claim whole or not at all (an authorization decision never sees a claim
changed): a claim from which :func:`kept_json` would leave anything out is left out.

A credential under another name and of no known shape (an opaque key in a field called ``x``) cannot be
told from data: an authenticator must not put one among its claims (the built-in ones never do: a static
token's principal has no claims, a JWT's claims are its payload, never the token), and a client that
sends one in ``state`` or ``forwardedProps`` has it journaled.

Thread safety: pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["CREDENTIAL_NAME", "CREDENTIAL_VALUE", "JWT_LIKE", "kept_claims", "kept_json"]

CREDENTIAL_NAME = re.compile(r"token(?!s|_?count|_?limit|_?usage|_?budget|_?use|_?type|i[sz])|secret|passw"
                             r"|pass_?(?:phrase|code)|pwd"
                             r"|api_?key|priv(ate)?_?key|signing_?key|credential|authoriz|cookie|jwt|bearer",
                             re.IGNORECASE)
"""A name (a claim's, a key's at any depth) that looks like a credential: ``-`` is read as ``_``."""

JWT_LIKE = re.compile(r"eyJ[A-Za-z0-9_-]{5,}\.(?:[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|\.[A-Za-z0-9_-]{8,}\.)")
"""A string that holds a compact JWT, JWS or JWE (base64url segments joined by dots, the first a JSON
object's: ``eyJ``). A JWE whose key is agreed, not sent (``alg`` ``dir``, ``ECDH-ES``: RFC 7516 section
7.1), has an empty second segment: ``header..iv.ciphertext.tag``."""

CREDENTIAL_VALUE = re.compile(
    JWT_LIKE.pattern
    # An Authorization header's value (RFC 6750 section 2.1's b64token).
    + r"|^\s*[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/-]+=*\s*$"
    # Well-known API key shapes: OpenAI and Anthropic, Google, GitHub, Slack, AWS access key ids, Groq.
    + r"|\bsk-[A-Za-z0-9_-]{20,}|\bAIza[0-9A-Za-z_-]{35}|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_\w{20,}"
      r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bgsk_[A-Za-z0-9]{20,}"
    # Stripe secret and restricted keys, Hugging Face, GitLab, npm.
      r"|\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}|\bhf_[A-Za-z0-9]{30,}|\bglpat-[A-Za-z0-9_-]{20,}|\bnpm_[A-Za-z0-9]{36}")
"""A string that looks like a credential, wherever it is in the string: :data:`JWT_LIKE`, a ``Bearer``
credential (the whole string), or a well-known API key's shape."""

_DEPTH = 32
"""Nesting deeper than this is not kept (a JWT's payload is never that deep)."""

_LEFT_OUT = object()


def kept_json(value: Any) -> Any:
    """``value`` (a JSON value: a client's ``state`` or ``forwardedProps``) without what the journal must not
    hold (see the module docstring): each dict entry and list item that is, or holds only, what is left out
    is removed; ``None`` when ``value`` itself is left out. A part from which nothing is left out is the
    same object; ``value`` is never changed."""
    kept = _kept(value, 0)
    return None if kept is _LEFT_OUT else kept


def kept_claims(claims: Mapping[str, Any]) -> dict[str, Any]:
    """``claims`` (a :class:`hookstream.server.Principal`'s) without what the journal must not hold: a new
    dict of the claims :func:`kept_json` leaves whole (the same objects), under names that do not look like
    a credential."""
    return {name: value for name, value in claims.items() if _kept_entry(name, value, 0) is value}


def _credential_name(name: str) -> bool:
    return CREDENTIAL_NAME.search(name.replace("-", "_")) is not None


def _kept_entry(name: Any, value: Any, depth: int) -> Any:
    """The entry ``name: value`` of a dict as :func:`_kept` keeps it, or :data:`_LEFT_OUT`."""
    if not isinstance(name, str):
        return _LEFT_OUT
    if _credential_name(name) and not (value is None or isinstance(value, bool)):
        return _LEFT_OUT
    return _kept(value, depth)


def _kept(value: Any, depth: int) -> Any:
    """``value`` with what is left out removed (the same object when nothing is), or :data:`_LEFT_OUT`."""
    if depth > _DEPTH:
        return _LEFT_OUT
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return _LEFT_OUT if CREDENTIAL_VALUE.search(value) else value
    if isinstance(value, (list, tuple)):
        items = [_kept(v, depth + 1) for v in value]
        if all(k is v for k, v in zip(items, value, strict=True)):
            return value
        return [k for k in items if k is not _LEFT_OUT]
    if isinstance(value, dict):
        entries = {k: _kept_entry(k, v, depth + 1) for k, v in value.items()}
        if all(entries[k] is v for k, v in value.items()):
            return value
        return {k: v for k, v in entries.items() if v is not _LEFT_OUT}
    return _LEFT_OUT
