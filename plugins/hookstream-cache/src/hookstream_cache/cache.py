"""The response cache as a run plugin: :class:`Cache` and the request key it files responses under.

A model call whose canonical provider request (:func:`request_key`: the provider's name, the request URL
without its query string, the JSON body with sorted keys, an HMAC fingerprint of the credential and, on a
server, the principal; never a header or an API key itself) was
answered before is answered from the stored provider body, run through the same adapter by
``ModelCallContext.parse_body``: the same events and result as the live call (the ids the adapter
makes up, such as message ids, are new). Otherwise the call goes to the provider and its raw body is
stored once the call is known to have ended well:

* the events the cache saw end with ``RUN_FINISHED`` (not ``RUN_ERROR``: an HTTP error such as 429 or
  500, an in-stream error, a body cut off before the provider's final event, a call stopped by the
  consumer), and
* the body itself, replayed through the adapter, ends with ``RUN_FINISHED`` (so the body of an earlier
  failed attempt of a retried call is never the one stored).

A stored body that no longer replays to ``RUN_FINISHED`` (an adapter changed) is deleted and the call
goes to the provider. A hit's events are parsed before they are returned (in memory, at once).

Hooks (``docs/hooks.rst``): a ``tryfirst`` :func:`hookstream_model_call` answers hits before the
built-in HTTP call; a wrapper of the same hook adds an ``on_body`` tap and watches the events of misses.

Thread safety: a :class:`Cache` holds only its path and may be shared by any number of runs and threads;
per-call values live in ``ModelCallContext.state``; the store is thread-safe (:mod:`hookstream_cache.store`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Generator, Iterable, Iterator
from urllib.parse import urlsplit

import attrs
from hookstream.events import BaseEvent, RunError, RunFinished
from hookstream.plugin import SECRET_HEADERS, ModelCallContext, hookimpl

from .store import ResponseStore, StoredResponse, store_for

__all__ = ["Cache", "credential_of", "request_key"]

log = logging.getLogger("hookstream_cache")

STATE = "hookstream_cache"
"""The key of this plugin's values in ``ModelCallContext.state``."""

KEY_VERSION = 2
"""Part of every key: a change to what a key covers starts a new set of keys instead of misreading old rows."""


def credential_of(call: ModelCallContext) -> str | None:
    """What authenticates ``call``'s request, as one string, or ``None`` when nothing does: the provider's
    API key, the secret headers (:data:`~hookstream.plugin.SECRET_HEADERS`: ``Authorization``,
    ``x-api-key``...) and the URL's query string (Gemini's ``key=``). Only ever fed to an HMAC."""
    http = call.http_request()
    key = call.provider.api_key.reveal() if call.provider.api_key else ""
    headers = sorted((k.lower(), v) for k, v in http.headers.items() if k.lower() in SECRET_HEADERS)
    query = urlsplit(http.url).query
    if not (key or headers or query):
        return None
    return json.dumps([key, headers, query], separators=(",", ":"))


def request_key(call: ModelCallContext, *, fingerprint: str | None = None,
                principal: str | None = None) -> tuple[str, str]:
    """``(key, url)`` for ``call``'s current request: ``key`` is the SHA-256 hex digest of the canonical
    JSON (sorted keys, no whitespace) of ``{"v", "provider", "url", "body", "credential", "principal"}``;
    ``url`` is the request URL without its query string (Gemini's ``key=``), as
    :meth:`HTTPRequest.redacted_url` gives it. ``credential`` is ``fingerprint``, a keyed fingerprint of
    the call's credential (:meth:`ResponseStore.fingerprint` of :func:`credential_of`), never the
    credential itself: a response is served only to a caller holding the credential it was asked with.
    ``principal`` (the server's authenticated caller) keeps one principal's entries from another's."""
    http = call.http_request()
    url = http.redacted_url()
    canonical = json.dumps({"v": KEY_VERSION, "provider": call.provider.name, "url": url, "body": http.json,
                            "credential": fingerprint, "principal": principal},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest(), url


@attrs.define(slots=True, eq=False)
class _Pending:
    """A miss on its way to being stored: the key, the body once the tap had it and a replay of it ended
    well, and whether the call's own events ended with ``RUN_FINISHED``."""

    key: str
    url: str
    body: bytes | None = None
    finished: bool = False
    stored: bool = False


def _fspath(path: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(path) if path is not None else None


@attrs.define(slots=True, eq=False)
class Cache:
    """A response cache keyed on the canonical provider request, stored in SQLite at ``path`` (default:
    ``responses.sqlite3`` in the user cache directory, :func:`hookstream_cache.default_path`).

    Use it per run: ``chat(..., plugins=["cache"])`` (the default file), ``plugins=[("cache", {"path":
    p})]`` or ``plugins=[Cache(p)]``; on the CLI ``--cache`` (``--cache-path PATH``). Only complete
    responses are stored (see the module docstring); a hit sends nothing to the provider.
    """

    path: str | None = attrs.field(default=None, converter=_fspath)
    principal: str | None = None
    """The principal whose entries these are (``None``: shared by every caller of the process)."""
    per_principal: bool = False
    """On a server: :meth:`for_principal` gives each principal a cache of their own entries."""

    @property
    def store(self) -> ResponseStore:
        """The process's store for :attr:`path` (opened on first use)."""
        return store_for(self.path)

    def for_principal(self, principal: str | None) -> Cache:
        """The cache a server's run for ``principal`` (its authenticated caller's id) uses: one whose
        entries are that principal's alone when :attr:`per_principal` is set (``hookstream serve
        --cache``), else this one (``--cache-shared``: one principal may learn from the answer's speed
        whether another asked the same question)."""
        return attrs.evolve(self, principal=principal) if self.per_principal else self

    # -- hooks ------------------------------------------------------------------------------------------
    @hookimpl(tryfirst=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Iterable[BaseEvent] | None:
        """A hit: the stored body's events through the call's adapter. A miss: ``None`` (the call goes on)."""
        store = self.store
        credential = credential_of(call)
        fingerprint = store.fingerprint(credential) if credential is not None else None
        key, url = request_key(call, fingerprint=fingerprint, principal=self.principal)
        stored = store.get(key)
        if stored is not None:
            events = list(call.parse_body(stored.body))  # in memory: as quick as the first event
            if events and type(events[-1]) is RunFinished:
                store.count_hit(key)
                return events
            # Stored well but no longer replays (the adapter changed): ask the provider and store anew.
            log.warning("cached response %s no longer replays (%s); asking the provider", key[:12],
                        getattr(events[-1], "code", None) if events else "no events")
            store.delete(key)
        store.count_miss()
        call.state[STATE] = _Pending(key, url)
        return None

    @hookimpl(wrapper=True, specname="hookstream_model_call")
    def watch_model_call(
        self, call: ModelCallContext
    ) -> Generator[None, Iterable[BaseEvent], Iterable[BaseEvent]]:
        """Tap the raw body of a miss and store it once both the body and the events ended well."""
        call.on_body.append(lambda body: self._tapped(call, body))
        events = yield
        pending = call.state.get(STATE)
        if not isinstance(pending, _Pending):
            return events  # a hit, or another plugin answered first
        return self._watch(call, pending, events)

    # -- storing ----------------------------------------------------------------------------------------
    def _watch(self, call: ModelCallContext, pending: _Pending, events: Iterable[BaseEvent]) -> Iterator[BaseEvent]:
        for ev in events:
            if type(ev) is RunFinished:
                pending.finished = True
                self._store(call, pending)
            elif isinstance(ev, RunError):
                pending.finished = False
            yield ev

    def _tapped(self, call: ModelCallContext, body: bytes) -> None:
        """The tap: ``body`` is the whole raw body of one HTTP response of the call (every attempt of a
        retried call has one). Kept when it replays to ``RUN_FINISHED``."""
        pending = call.state.get(STATE)
        if not isinstance(pending, _Pending) or pending.stored or not call.replays_to_finish(body):
            return
        pending.body = body
        self._store(call, pending)

    def _store(self, call: ModelCallContext, pending: _Pending) -> None:
        if pending.stored or not pending.finished or pending.body is None:
            return  # the other half (the body, or the events' end) is still to come
        pending.stored = True
        response = StoredResponse(pending.body, call.provider.framing.media_type)
        self.store.put(pending.key, response, call.provider.name, pending.url)

