"""The SQLite file a response cache keeps its provider bodies in: :class:`ResponseStore`.

One row per canonical provider request (its key, a SHA-256 hex digest, see :func:`hookstream_cache.request_key`):
the provider's raw response body as it came off the wire, its media type, the provider name and the
request URL without its query string (for ``hookstream cache stats`` and for people reading the file;
never a header or an API key), when it was stored and how often it was served. Two counters (hits,
misses) are kept beside the rows.

The file is in WAL mode (readers never wait for a writer; several processes, such as ``hookstream batch``
workers or ``serve`` workers, may share it) with a busy timeout for writers.

Thread safety: a :class:`ResponseStore` is shared by every run of a process that uses the same path
(:func:`store_for`); it holds one connection per process, used under a lock, so any thread may call any
method. The connection is opened on first use, in the process that uses it (a store built before a fork
or unpickled in a worker opens its own).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

import attrs
from hookstream.plugin import private_dirs

__all__ = ["CacheStats", "ResponseStore", "StoredResponse", "default_path", "store_for"]

APP = "hookstream"
FILE_NAME = "responses.sqlite3"
BUSY_TIMEOUT = 30.0
"""Seconds a writer waits for another process's write to finish before SQLite gives up."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, provider TEXT NOT NULL, url TEXT NOT NULL, content_type TEXT NOT NULL,"
    " body BLOB NOT NULL, stored_at REAL NOT NULL, hits INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
)


def default_path() -> Path:
    """``responses.sqlite3`` in platformdirs' user cache directory for ``hookstream``
    (``$XDG_CACHE_HOME/hookstream``, else ``~/.cache/hookstream`` on Linux; ``~/Library/Caches/hookstream``
    on macOS; ``%LOCALAPPDATA%\\hookstream\\Cache`` on Windows)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP, appauthor=False)) / FILE_NAME


@attrs.frozen(slots=True)
class StoredResponse:
    """One cached provider response: the raw ``body`` bytes and their ``content_type``."""

    body: bytes
    content_type: str


@attrs.frozen(slots=True)
class CacheStats:
    """What ``hookstream cache stats`` prints: ``entries`` (stored responses), ``bytes`` (their bodies'
    total size), ``hits`` and ``misses`` (lookups answered from the file or not, since it was created or
    last cleared), ``file_bytes`` (the database file's size on disk, WAL file included) and ``path``."""

    path: str
    entries: int
    bytes: int
    hits: int
    misses: int
    file_bytes: int

    def as_dict(self) -> dict[str, int | str]:
        return attrs.asdict(self)


class ResponseStore:
    """Provider response bodies by request key, in the SQLite file at ``path`` (created with its parent
    directories on first use). Raises :class:`sqlite3.Error` (``OSError`` for the directory) when the
    file cannot be opened or written.

    The bodies are other people's answers, so the file is the user's alone: created ``0600`` (an
    existing file of the user is set to ``0600`` when opened; SQLite gives its ``-wal`` and ``-shm``
    files the same mode) and the directories it creates ``0700``. The file also keeps a random
    secret (:meth:`fingerprint`'s HMAC key) that never leaves it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held. A connection never crosses a fork: the child opens its own.
        if self._conn is None or self._pid != os.getpid():
            private_dirs(self.path.parent)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            if os.name == "posix" and self.path.stat().st_mode & 0o077:
                try:
                    self.path.chmod(0o600)  # a file made before the cache kept its bodies private
                except OSError:
                    pass  # not the user's file: SQLite reads it as it can
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                conn.execute(statement)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> StoredResponse | None:
        """The response stored under ``key``, or ``None``. Counts nothing: the caller says whether it
        served it (:meth:`count_hit`) or not (:meth:`count_miss`)."""
        with self._lock:
            row = self._connection().execute("SELECT body, content_type FROM responses WHERE key = ?",
                                             (key,)).fetchone()
        if row is None:
            return None
        return StoredResponse(bytes(row[0]), str(row[1]))

    def fingerprint(self, credential: str) -> str:
        """A keyed fingerprint of ``credential`` (an API key): the hex HMAC-SHA256 of it under this file's
        random secret (made on first use, 32 bytes). The same credential gives the same fingerprint in
        every process sharing the file; the credential cannot be read back from it, nor tested against
        a guess without the file."""
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('hmac_key', ?)",
                             (secrets.token_bytes(32),))
                (key,) = conn.execute("SELECT value FROM meta WHERE name = 'hmac_key'").fetchone()
        return hmac.new(bytes(key), credential.encode("utf-8"), hashlib.sha256).hexdigest()

    def count_hit(self, key: str) -> None:
        """Count a lookup answered with the response under ``key``."""
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("UPDATE responses SET hits = hits + 1 WHERE key = ?", (key,))
                self._count(conn, "hits")

    def count_miss(self) -> None:
        """Count a lookup that went to the provider."""
        with self._lock:
            conn = self._connection()
            with conn:
                self._count(conn, "misses")

    def delete(self, key: str) -> None:
        """Forget the response under ``key`` (one that no longer replays, say after an adapter changed)."""
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("DELETE FROM responses WHERE key = ?", (key,))

    def put(self, key: str, response: StoredResponse, provider: str, url: str) -> None:
        """Store ``response`` under ``key`` (replacing an older one): ``provider`` and ``url`` (which must
        hold no secret: pass a URL without its query string) are kept beside it for people reading the file."""
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO responses (key, provider, url, content_type, body, stored_at, hits)"
                    " VALUES (?, ?, ?, ?, ?, ?, 0)",
                    (key, provider, url, response.content_type, response.body, time.time()),
                )

    def stats(self) -> CacheStats:
        """The file's :class:`CacheStats`."""
        with self._lock:
            conn = self._connection()
            entries, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM responses").fetchone()
            counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
        file_bytes = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return CacheStats(str(self.path), int(entries), int(size), int(counters.get("hits", 0)),
                          int(counters.get("misses", 0)), file_bytes)

    def clear(self) -> int:
        """Delete every stored response and reset the counters; returns how many responses were deleted.
        The file shrinks (``VACUUM``) so nothing of the old bodies stays on disk."""
        with self._lock:
            conn = self._connection()
            with conn:
                deleted = conn.execute("DELETE FROM responses").rowcount
                conn.execute("DELETE FROM counters")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(deleted)

    def close(self) -> None:
        """Close this process's connection (the next call opens a new one)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    @staticmethod
    def _count(conn: sqlite3.Connection, name: str) -> None:
        conn.execute("INSERT INTO counters (name, value) VALUES (?, 1)"
                     " ON CONFLICT(name) DO UPDATE SET value = value + 1", (name,))



_stores: dict[Path, ResponseStore] = {}
_stores_lock = threading.Lock()


def store_for(path: str | os.PathLike[str] | None = None) -> ResponseStore:
    """The process's one :class:`ResponseStore` for ``path`` (default: :func:`default_path`), so every run
    that uses the same file shares one connection and its lock."""
    resolved = Path(path).expanduser().resolve() if path is not None else default_path()
    with _stores_lock:
        store = _stores.get(resolved)
        if store is None:
            store = _stores[resolved] = ResponseStore(resolved)
        return store
