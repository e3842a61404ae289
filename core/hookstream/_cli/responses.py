"""What each model response of a ``hookstream chat`` conversation was: model, tokens, cost.

The conversation log (:mod:`.logs`) keeps messages; this module keeps, beside them in the same SQLite
file, one row per model call (a run's step) in the table ``hookstream_cli_responses``::

    id            integer primary key (the order calls were recorded in)
    thread_id     text     the conversation
    message_id    text     the assistant message the call produced (NULL when it was not saved)
    model         text     "PROVIDER:MODEL" as asked (with a fallback model, the entry that answered)
    input_tokens  integer  NULL when the provider did not report it
    output_tokens integer
    cost          text     a decimal amount (genai-prices' list price of the tokens), NULL when not known
    currency      text     "USD" for every price hookstream computes
    created_at    real     Unix seconds

``hookstream logs`` shows them (:func:`responses`, :func:`totals`) and ``hookstream chat -c`` without
``-m`` continues with the model of the conversation's last response (:func:`thread_model`), as simonw/llm
does. A log made before this table existed gets it on first use (``CREATE TABLE IF NOT EXISTS``); its
older conversations have no rows, so they show no model and need ``-m`` to continue.

The table holds no message text and no key: what a response said stays in the messages table.

Thread safety: one connection per call, closed before returning; SQLite serialises the writers.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from decimal import Decimal
from typing import Any

import attrs

__all__ = ["ResponseRow", "Totals", "forget", "record_responses", "responses", "thread_model", "totals", "usage_text"]

_TABLE = "hookstream_cli_responses"
_CREATE = (f"CREATE TABLE IF NOT EXISTS {_TABLE} (id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, "
           "message_id TEXT, model TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER, cost TEXT, "
           "currency TEXT, created_at REAL NOT NULL)")


@attrs.frozen
class ResponseRow:
    """One recorded model call (see the module docstring); ``cost`` in ``currency``, ``None``: not known."""

    thread_id: str
    message_id: str | None
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cost: Decimal | None
    currency: str | None
    created_at: float

    def to_json(self) -> dict[str, Any]:
        """``{"message_id", "model", "input_tokens", "output_tokens", "cost": {"amount", "currency"} | null}``."""
        cost = None if self.cost is None else {"amount": float(self.cost), "currency": self.currency or "USD"}
        return {"message_id": self.message_id, "model": self.model, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost": cost, "created": self.created_at}


@attrs.frozen
class Totals:
    """A conversation's responses summed: the last one's ``model``, tokens (``None``: none reported) and
    ``cost`` (``None`` unless every response that reported tokens has a price, in one currency, as
    :class:`~hookstream.events.Usage` sums costs)."""

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: Decimal | None = None
    currency: str | None = None


@contextmanager
def _connect(path: str) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as conn:
        conn.execute(_CREATE)
        yield conn


def _path(store: Any) -> str | None:
    # Only the SQLite log of the command line (SQLiteStore.path) has the table; another store has none.
    path = getattr(store, "path", None)
    return path if isinstance(path, str) else None


def record_responses(store: Any, thread_id: str | None, result: Any) -> None:
    """Record each step of ``result`` (a :class:`~hookstream.RunResult`) of conversation ``thread_id`` in
    ``store``'s file; nothing for another store or no thread. A database error is not the run's: it
    is swallowed (the conversation itself was saved by the store)."""
    path = _path(store)
    if path is None or thread_id is None:
        return
    now = time.time()
    rows = []
    for step in result.steps:
        usage = step.usage
        cost = usage.cost if usage is not None else None
        rows.append((thread_id, step.message.id, step.provider or "?",
                     usage.input_tokens if usage is not None else None,
                     usage.output_tokens if usage is not None else None,
                     None if cost is None else f"{cost.amount:f}", None if cost is None else cost.currency, now))
    if not rows:
        return
    try:
        with _connect(path) as conn:
            conn.executemany(f"INSERT INTO {_TABLE} (thread_id, message_id, model, input_tokens, output_tokens, cost, "
                             "currency, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    except sqlite3.Error:
        pass


def forget(store: Any, thread_id: str) -> None:
    """Delete the recorded responses of conversation ``thread_id`` (``hookstream logs delete``)."""
    path = _path(store)
    if path is not None:
        with _connect(path) as conn:
            conn.execute(f"DELETE FROM {_TABLE} WHERE thread_id = ?", (thread_id,))


def _rows(store: Any, where: str, args: Sequence[Any]) -> list[ResponseRow]:
    path = _path(store)
    if path is None:
        return []
    with _connect(path) as conn:
        found = conn.execute(f"SELECT thread_id, message_id, model, input_tokens, output_tokens, cost, currency, "
                             f"created_at FROM {_TABLE} WHERE {where} ORDER BY id", args).fetchall()
    return [ResponseRow(t, m, model, i, o, None if c is None else Decimal(c), cur, at)
            for t, m, model, i, o, c, cur, at in found]


def responses(store: Any, thread_id: str) -> list[ResponseRow]:
    """The recorded responses of conversation ``thread_id``, oldest first."""
    return _rows(store, "thread_id = ?", (thread_id,))


def thread_model(store: Any, thread_id: str) -> str | None:
    """The model of the conversation's last recorded response, ``None`` when it has none."""
    rows = responses(store, thread_id)
    return rows[-1].model if rows else None


def _add(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def totals(store: Any, thread_ids: Sequence[str]) -> dict[str, Totals]:
    """Each of ``thread_ids``' responses summed (:class:`Totals`); a thread without rows is left out."""
    if not thread_ids:
        return {}
    out: dict[str, Totals] = {}
    priced: dict[str, bool] = {}
    marks = ", ".join("?" * len(thread_ids))
    for row in _rows(store, f"thread_id IN ({marks})", list(thread_ids)):
        t = out.get(row.thread_id, Totals())
        counted = row.input_tokens is not None or row.output_tokens is not None
        ok = priced.get(row.thread_id, True) and (not counted or row.cost is not None) and (
            t.currency is None or row.cost is None or row.currency == t.currency)
        priced[row.thread_id] = ok
        cost = t.cost if row.cost is None else (t.cost or Decimal(0)) + row.cost
        out[row.thread_id] = Totals(row.model, _add(t.input_tokens, row.input_tokens),
                                    _add(t.output_tokens, row.output_tokens), cost, t.currency or row.currency)
    return {k: v if priced[k] else attrs.evolve(v, cost=None, currency=None) for k, v in out.items()}


def usage_text(input_tokens: int | None, output_tokens: int | None, cost: Decimal | None, currency: str | None) -> str:
    """``"12 in / 5 out tokens, $0.0000048"``: the parts that are known (``""`` when none is)."""
    parts = []
    if input_tokens is not None or output_tokens is not None:
        parts.append(f"{input_tokens if input_tokens is not None else '?'} in / "
                     f"{output_tokens if output_tokens is not None else '?'} out tokens")
    if cost is not None:
        parts.append(f"${cost:f}" if (currency or "USD") == "USD" else f"{cost:f} {currency}")
    return ", ".join(parts)
