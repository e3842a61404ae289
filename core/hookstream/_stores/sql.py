"""Conversation stores in a real database: SQLite (one machine) and PostgreSQL (several), by URL.

:func:`open_store` takes ``sqlite:///PATH`` (SQLAlchemy's spelling: ``sqlite:///rel/path.db``,
``sqlite:////abs/path.db``), ``postgresql://...`` / ``postgres://...`` (a libpq connection URI, used
through psycopg 3: ``pip install 'hookstream[postgres]'``) or ``memory:`` (an
:class:`~hookstream.stores.InMemoryStore`, one process only).

Both database stores keep one table, ``hookstream_messages``::

    seq        integer, increasing: the order messages were first saved in
    thread_id  text
    message_key text      the message's id (a fresh uuid for a message without one)
    body       text       the message as JSON (hookstream._stores.codec: cattrs, file bytes base64)
    created_at real       Unix seconds it was saved (NULL for rows of a store made before it was kept)
    UNIQUE (thread_id, message_key)

and a second, ``hookstream_threads`` (``thread_id`` primary key, ``owner`` text or NULL, ``created_at``
in Unix seconds), holding who owns each thread (:meth:`claim`). A database made before owners were kept
gets the table on open (``CREATE TABLE IF NOT EXISTS``: the migration); its threads get a row with a
NULL owner when first claimed, so they stay reachable only by an unauthenticated server. A third,
``hookstream_answers`` (``thread_id``, ``call_id``, ``answered_at``; primary key ``(thread_id,
call_id)``), holds the pending tool calls whose answer a request claimed (:meth:`claim_answers`): the
primary key is the check and the mark in one, so of several requests answering one call at once, on any
worker process, exactly one inserts its row.

:meth:`save` inserts with ``ON CONFLICT DO NOTHING``: saving a message whose id the thread already
holds does nothing, so a store holds each message once however many workers saved it, and
:meth:`load` returns a thread's messages in ``seq`` order.

SQLite runs in WAL mode (readers never wait for the writer) with a busy timeout (a writer waits for
another process's write instead of failing), writes in ``BEGIN IMMEDIATE`` transactions: safe for
several worker processes of one machine (SQLite docs, "Write-Ahead Logging" and "File Locking").
Within a process, writers also queue on a lock before ``BEGIN IMMEDIATE``: SQLite's busy handler
waits by sleeping (1 ms, 2 ms, ... up to 100 ms at a time), so threads of one process contending for
the write lock through it woke late; measured with 64 concurrent runs on ``serve --workers 2``, that
sleep was the tail of the time to first event (``benchmarks/bench_serve.py``).

Other tables in the same database (the server's run event log) go through :meth:`SQLiteStore.database`
and :meth:`PostgresStore.database`: a :class:`SQLDatabase` with the store's per-thread connection, its
write transaction and the driver's placeholder.

Thread safety: each thread uses its own connection (created on first use, and again after a fork, so a
gunicorn worker never shares its parent's connection) for one operation, then hands it back to the
process's idle connections, which the next operation of any thread takes before opening another: a
process holds as many connections as it ran operations at once. A thread that asks for its own
(``database().connect()``, as the run event log's reads do) keeps it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import attrs

from .._errors import AlreadyAnsweredError
from .._messages import Message
from .codec import dumps_message, loads_message
from .memory import ConversationStore, InMemoryStore, ThreadInfo, thread_title

__all__ = ["PostgresStore", "SQLDatabase", "SQLiteStore", "open_store"]

_TABLE = "hookstream_messages"
_THREADS = "hookstream_threads"
_ANSWERS = "hookstream_answers"
_ANSWERS_SCHEMA = (f"CREATE TABLE IF NOT EXISTS {_ANSWERS} (thread_id TEXT NOT NULL, call_id TEXT NOT NULL, "
                   "answered_at {real} NOT NULL, PRIMARY KEY (thread_id, call_id))")



@attrs.frozen
class SQLDatabase:
    """The database of a SQL store, for tables of an application beside the store's own (the server's run
    event log): ``connect()`` gives this thread's connection (a DB-API connection: ``sqlite3`` or
    psycopg 3), ``write()`` a write transaction on it (a context manager yielding the connection),
    ``placeholder`` the driver's parameter mark (``?`` or ``%s``), ``blob`` the column type of bytes
    (``BLOB`` or ``BYTEA``) and ``dialect`` ``sqlite`` or ``postgresql``. May be shared between threads
    (each gets its own connection)."""

    connect: Callable[[], Any]
    write: Callable[[], AbstractContextManager[Any]]
    placeholder: str
    blob: str
    dialect: str


_TITLE_ROWS = 8  # messages read to find a thread's first user message
_BUSY_TIMEOUT_S = 30.0


class _Taken(AlreadyAnsweredError):
    """A call of a :meth:`claim_answers` was claimed before: the transaction is rolled back."""


def _claim_answers(conn: Any, thread_id: str, call_ids: Sequence[str], mark: str) -> None:
    """Insert one row per call; raises :class:`_Taken` when one is there already (in a transaction)."""
    now = time.time()
    for call_id in dict.fromkeys(call_ids):
        cur = conn.execute(f"INSERT INTO {_ANSWERS} (thread_id, call_id, answered_at) VALUES ({mark}, {mark}, {mark}) "
                           "ON CONFLICT (thread_id, call_id) DO NOTHING", (thread_id, call_id, now))
        if cur.rowcount != 1:
            raise _Taken(f"tool call {call_id!r} of thread {thread_id!r} was answered already")


def _rows(thread_id: str, messages: Sequence[Message]) -> list[tuple[str, str, str, float]]:
    now = time.time()
    return [(thread_id, m.id or f"anon-{uuid.uuid4().hex}", dumps_message(m), now) for m in messages]


_LIST = (f"SELECT thread_id, COUNT(*), MIN(created_at), MAX(created_at), MAX(seq) FROM {_TABLE} GROUP BY thread_id "
         "HAVING ({before} IS NULL OR COALESCE(MAX(created_at), 0) < {before}) "
         "ORDER BY COALESCE(MAX(created_at), 0) DESC, MAX(seq) DESC LIMIT {limit}")


def _infos(rows: Sequence[tuple[Any, ...]], first_messages: Any) -> list[ThreadInfo]:
    return [ThreadInfo(t, thread_title(first_messages(t)), lo, hi, int(n)) for t, n, lo, hi, _ in rows]


def _messages(rows: Sequence[tuple[str, str]]) -> list[Message]:
    out = []
    for key, body in rows:
        m = loads_message(body)
        if m.id is None:
            m.id = key  # saved without an id: its key identifies it from now on
        out.append(m)
    return out


def _may_claim(conn: Any, thread_id: str, owner: str | None, mark: str) -> bool:
    """Whether a claim of ``thread_id`` by ``owner`` would succeed now (the rule of ``claim``: a thread
    with messages and no owner row is open to ``None`` only), reading only."""
    row = conn.execute(f"SELECT owner FROM {_THREADS} WHERE thread_id = {mark}", (thread_id,)).fetchone()
    if row is not None:
        return bool(row[0] == owner)
    if owner is None:
        return True
    return conn.execute(f"SELECT 1 FROM {_TABLE} WHERE thread_id = {mark} LIMIT 1", (thread_id,)).fetchone() is None


class _PerThread:
    """A connection per (process, thread) for the length of an operation (:meth:`_conn`); handed back
    after it to the process's idle ones, which the next operation takes before opening another."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._idle_lock = threading.Lock()
        self._idle: list[Any] = []
        self._idle_pid = os.getpid()

    def get(self) -> Any:
        conn = self._mine()
        if conn is None:
            conn = self._take_idle()
            if conn is None:
                conn = self._connect()
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _mine(self) -> Any:
        """This thread's connection if it holds one opened in this process, else ``None``."""
        conn = getattr(self._local, "conn", None)
        return conn if conn is not None and getattr(self._local, "pid", None) == os.getpid() else None

    def _idle_here(self) -> list[Any]:
        """The process's idle connections (under :attr:`_idle_lock`). A forked worker starts with none:
        the parent's connections are not its to use (nor to close)."""
        if self._idle_pid != os.getpid():
            self._idle_pid, self._idle = os.getpid(), []
        return self._idle

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """This thread's connection for one operation: a thread that held none before hands it back after,
        so a process holds as many connections as it ran operations at once, not one per thread that
        ever used the store (a server's request threads and the pool threads its runs end on: past
        PostgreSQL's ``max_connections`` under load). A thread that asked for its own
        (``database().connect()``) keeps it."""
        held = self._mine() is not None
        conn = self.get()
        try:
            yield conn
        finally:
            if not held:
                self._local.conn = None
                with self._idle_lock:
                    self._idle_here().append(conn)

    def _take_idle(self) -> Any:
        with self._idle_lock:
            idle = self._idle_here()
            while idle:
                conn = idle.pop()
                if not getattr(conn, "closed", False):  # psycopg's: a connection the server ended
                    return conn
        return None

    def _connect(self) -> Any:
        raise NotImplementedError

    def _release(self) -> None:
        # The connection opened to check the URL is closed: a worker process forked later must not
        # inherit an open database connection (neither SQLite nor libpq allows using one across fork).
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class SQLiteStore(_PerThread):
    """A :class:`~hookstream.stores.ConversationStore` in the SQLite file ``path`` (created when absent)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._write_lock = threading.Lock()
        self.get()  # fail now (bad path, not a database) rather than on the first request
        self._release()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                     "thread_id TEXT NOT NULL, message_key TEXT NOT NULL, body TEXT NOT NULL, "
                     "UNIQUE (thread_id, message_key))")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {_THREADS} (thread_id TEXT PRIMARY KEY, owner TEXT, "
                     "created_at REAL NOT NULL)")
        conn.execute(_ANSWERS_SCHEMA.format(real="REAL"))
        # The migration of a store made by the previous release: message times were not kept.
        if not any(row[1] == "created_at" for row in conn.execute(f"PRAGMA table_info({_TABLE})")):
            try:
                conn.execute(f"ALTER TABLE {_TABLE} ADD COLUMN created_at REAL")
            except sqlite3.OperationalError:  # another process added it first
                pass
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection inside a ``BEGIN IMMEDIATE`` transaction, committed on exit (rolled
        back on an exception), the process's other writers kept waiting on :attr:`_write_lock`."""
        with self._conn() as conn, self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def list_threads(self, limit: int = 50, before: float | None = None) -> list[ThreadInfo]:
        """See :meth:`hookstream.stores.InMemoryStore.list_threads`."""
        with self._conn() as conn:
            rows = conn.execute(_LIST.format(before="?", limit="?"), (before, before, int(limit))).fetchall()
            return _infos(rows, lambda t: _messages(conn.execute(
                f"SELECT message_key, body FROM {_TABLE} WHERE thread_id = ? ORDER BY seq LIMIT {_TITLE_ROWS}",
                (t,)).fetchall()))

    def delete(self, thread_id: str) -> bool:
        """Forget ``thread_id`` (its messages and owner); whether it had messages."""
        with self._write() as conn:
            gone = conn.execute(f"DELETE FROM {_TABLE} WHERE thread_id = ?", (thread_id,)).rowcount
            conn.execute(f"DELETE FROM {_THREADS} WHERE thread_id = ?", (thread_id,))
            conn.execute(f"DELETE FROM {_ANSWERS} WHERE thread_id = ?", (thread_id,))
        return bool(gone)

    def claim_answers(self, thread_id: str, call_ids: Sequence[str]) -> bool:
        """See :meth:`hookstream.stores.InMemoryStore.claim_answers` (one ``BEGIN IMMEDIATE`` transaction:
        atomic across worker processes)."""
        if not call_ids:
            return True
        try:
            with self._write() as conn:
                _claim_answers(conn, thread_id, call_ids, "?")
        except _Taken:
            return False
        return True

    def claim(self, thread_id: str, owner: str | None) -> bool:
        with self._conn() as conn:
            return self._claim(conn, thread_id, owner)

    @staticmethod
    def _claim(conn: sqlite3.Connection, thread_id: str, owner: str | None) -> bool:
        row = conn.execute(f"SELECT owner FROM {_THREADS} WHERE thread_id = ?", (thread_id,)).fetchone()
        if row is None:
            # One statement is one transaction (autocommit): the legacy check and the insert happen
            # together, and of two claims at once exactly one row gets in; both read it back. SQLite
            # holds its write lock only while the statement runs (without the GIL).
            conn.execute(f"INSERT INTO {_THREADS} (thread_id, owner, created_at) VALUES (?, CASE WHEN EXISTS "
                         f"(SELECT 1 FROM {_TABLE} WHERE thread_id = ?) THEN NULL ELSE ? END, ?) "
                         "ON CONFLICT (thread_id) DO NOTHING", (thread_id, thread_id, owner, time.time()))
            row = conn.execute(f"SELECT owner FROM {_THREADS} WHERE thread_id = ?", (thread_id,)).fetchone()
        return bool(row is not None and row[0] == owner)

    def may_claim(self, thread_id: str, owner: str | None) -> bool:
        """See :meth:`hookstream.stores.InMemoryStore.may_claim` (read only: adds no owner row)."""
        with self._conn() as conn:
            return _may_claim(conn, thread_id, owner, "?")

    def load(self, thread_id: str) -> list[Message]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT message_key, body FROM {_TABLE} WHERE thread_id = ? ORDER BY seq",
                                (thread_id,)).fetchall()
        return _messages(rows)

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        rows = _rows(thread_id, messages)
        insert = (f"INSERT INTO {_TABLE} (thread_id, message_key, body, created_at) VALUES (?, ?, ?, ?) "
                  "ON CONFLICT (thread_id, message_key) DO NOTHING")
        if len(rows) == 1:
            # One statement is its own transaction: SQLite holds its write lock only while the statement
            # runs (without the GIL), never across a wait for the GIL as a lock around it would.
            with self._conn() as conn:
                conn.execute(insert, rows[0])
            return
        with self._write() as conn:
            conn.executemany(insert, rows)

    def database(self) -> SQLDatabase:
        """This store's database, for an application's own tables beside the store's."""
        return SQLDatabase(self.get, self._write, "?", "BLOB", "sqlite")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


class PostgresStore(_PerThread):
    """A :class:`~hookstream.stores.ConversationStore` in PostgreSQL at ``url`` (a libpq URI), through psycopg 3.
    Raises :class:`ImportError` naming the extra when psycopg is not installed."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            from .._install_hint import install_command

            raise ImportError(f"a postgresql:// store needs psycopg 3: {install_command('hookstream[postgres]')}"
                              ) from None
        super().__init__()
        self._url = url
        conn = self.get()
        with conn.transaction():
            # Two workers creating the table at once would both pass IF NOT EXISTS; the advisory lock
            # serialises them.
            conn.execute("SELECT pg_advisory_xact_lock(4242015)")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (seq BIGSERIAL PRIMARY KEY, "
                         "thread_id TEXT NOT NULL, message_key TEXT NOT NULL, body TEXT NOT NULL, "
                         "UNIQUE (thread_id, message_key))")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_THREADS} (thread_id TEXT PRIMARY KEY, owner TEXT, "
                         "created_at DOUBLE PRECISION NOT NULL)")
            conn.execute(f"ALTER TABLE {_TABLE} ADD COLUMN IF NOT EXISTS created_at DOUBLE PRECISION")
            conn.execute(_ANSWERS_SCHEMA.format(real="DOUBLE PRECISION"))
        self._release()

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._conn() as conn, conn.transaction():
            yield conn

    def database(self) -> SQLDatabase:
        """This store's database, for an application's own tables beside the store's."""
        return SQLDatabase(self.get, self._transaction, "%s", "BYTEA", "postgresql")

    def list_threads(self, limit: int = 50, before: float | None = None) -> list[ThreadInfo]:
        """See :meth:`hookstream.stores.InMemoryStore.list_threads`."""
        with self._conn() as conn:
            rows = conn.execute(_LIST.format(before="%s::double precision", limit="%s"),
                                (before, before, int(limit))).fetchall()
            return _infos(rows, lambda t: _messages(conn.execute(
                f"SELECT message_key, body FROM {_TABLE} WHERE thread_id = %s ORDER BY seq LIMIT {_TITLE_ROWS}",
                (t,)).fetchall()))

    def delete(self, thread_id: str) -> bool:
        """Forget ``thread_id`` (its messages and owner); whether it had messages."""
        with self._transaction() as conn:
            gone = conn.execute(f"DELETE FROM {_TABLE} WHERE thread_id = %s", (thread_id,)).rowcount
            conn.execute(f"DELETE FROM {_THREADS} WHERE thread_id = %s", (thread_id,))
            conn.execute(f"DELETE FROM {_ANSWERS} WHERE thread_id = %s", (thread_id,))
        return bool(gone)

    def claim_answers(self, thread_id: str, call_ids: Sequence[str]) -> bool:
        """See :meth:`hookstream.stores.InMemoryStore.claim_answers` (one transaction; the primary key
        decides between concurrent claims on any connection)."""
        if not call_ids:
            return True
        try:
            with self._transaction() as conn:
                _claim_answers(conn, thread_id, call_ids, "%s")
        except _Taken:
            return False
        return True

    def claim(self, thread_id: str, owner: str | None) -> bool:
        with self._transaction() as conn:
            # The legacy check and the insert are one statement: of two claims at once, the primary key
            # lets exactly one row in and both read it back.
            conn.execute(f"INSERT INTO {_THREADS} (thread_id, owner, created_at) SELECT %s, CASE WHEN EXISTS "
                         f"(SELECT 1 FROM {_TABLE} WHERE thread_id = %s) THEN NULL ELSE %s END, %s "
                         "ON CONFLICT (thread_id) DO NOTHING", (thread_id, thread_id, owner, time.time()))
            row = conn.execute(f"SELECT owner FROM {_THREADS} WHERE thread_id = %s", (thread_id,)).fetchone()
        return bool(row is not None and row[0] == owner)

    def may_claim(self, thread_id: str, owner: str | None) -> bool:
        """See :meth:`hookstream.stores.InMemoryStore.may_claim` (read only: adds no owner row)."""
        with self._conn() as conn:
            return _may_claim(conn, thread_id, owner, "%s")

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self._url, autocommit=True)

    def load(self, thread_id: str) -> list[Message]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT message_key, body FROM {_TABLE} WHERE thread_id = %s ORDER BY seq",
                                (thread_id,)).fetchall()
        return _messages(rows)

    def save(self, thread_id: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self._transaction() as conn, conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {_TABLE} (thread_id, message_key, body, created_at) "
                            "VALUES (%s, %s, %s, %s) ON CONFLICT (thread_id, message_key) DO NOTHING",
                            _rows(thread_id, messages))

    def __repr__(self) -> str:  # the URL may hold a password
        return "PostgresStore(<url>)"


def open_store(url: str) -> ConversationStore:
    """The store ``url`` names (see the module docstring). Raises :class:`ValueError` for another
    scheme, :class:`ImportError` when psycopg is missing for ``postgresql://``, :class:`sqlite3.Error`
    when the SQLite file cannot be opened."""
    if url == "memory:":
        return InMemoryStore()
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not path:
            raise ValueError("sqlite:///PATH needs a path")
        return SQLiteStore(path)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url)
    scheme = url.split(":", 1)[0]
    raise ValueError(f"unknown store {scheme!r}: use sqlite:///PATH, postgresql://... or memory:")
