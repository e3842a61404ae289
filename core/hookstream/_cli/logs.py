"""``hookstream logs``: the conversations ``hookstream chat`` kept, and where they are kept.

``hookstream chat`` saves every conversation in a SQLite store (:func:`logs_url`) unless ``--no-log``:
``$HOOKSTREAM_USER_DIR/logs.db``, by default under the user data directory platformdirs names
(``~/.local/share/hookstream`` on Linux, ``~/Library/Application Support/hookstream`` on macOS), with
each response's model, tokens and cost beside the messages (:mod:`.responses`). As in simonw/llm:
``hookstream chat -c`` continues the latest conversation (with its model when ``-m`` is not given),
``--cid ID`` a given one; ``hookstream logs`` lists them (``-n``, ``--json``) with model, tokens and
cost, ``hookstream logs --cid ID`` shows one (each response followed by its model, tokens and cost),
``hookstream logs path`` prints the file and ``hookstream logs delete ID`` forgets one.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import click

from .._userdir import user_dir  # shared with model aliases (hookstream._aliases)
from .responses import ResponseRow, Totals, forget, responses, totals, usage_text


def logs_url() -> str:
    """The SQLite URL of the conversation log (its directory is created)."""
    where = user_dir()
    where.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{where / 'logs.db'}"


def open_logs() -> Any:
    """The conversation log store. Raises :class:`click.ClickException` when it cannot be opened."""
    from .._stores.sql import open_store

    try:
        return open_store(logs_url())
    except Exception as exc:  # sqlite3.Error, OSError: say where, not a traceback
        raise click.ClickException(f"cannot open the conversation log {logs_url()}: {exc}") from None


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds")


@click.group("logs", invoke_without_command=True)
@click.option("-n", "count", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many conversations to list, newest first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@click.option("--cid", default=None, help="Show the messages of this conversation.")
@click.option("-q", "--query", "queries", multiple=True, metavar="TEXT",
              help="Only conversations whose messages contain TEXT (case-insensitive; repeat: all of them), "
                   "as simonw/llm's logs -q.")
@click.pass_context
def command(ctx: click.Context, count: int, as_json: bool, cid: str | None, queries: tuple[str, ...] = ()) -> None:
    """List the conversations hookstream chat kept, or show one (--cid)."""
    if ctx.invoked_subcommand is not None:
        return
    store = open_logs()
    if cid is not None:
        messages = store.load(cid)
        if not messages:
            raise click.ClickException(f"no conversation {cid!r} (hookstream logs lists them)")
        _show(cid, messages, responses(store, cid), as_json)
        return
    threads = _matching(store, queries, count) if queries else store.list_threads(limit=count)
    sums = totals(store, [t.id for t in threads])
    if as_json:
        click.echo(json.dumps([{"id": t.id, "title": t.title, "created": t.created, "updated": t.updated,
                                "messages": t.message_count, **_totals_json(sums.get(t.id, Totals()))}
                               for t in threads], ensure_ascii=False, indent=1))
        return
    if not threads:
        click.echo(f"no conversations yet ({logs_url()})")
    for t in threads:
        s = sums.get(t.id, Totals())
        used = usage_text(s.input_tokens, s.output_tokens, s.cost, s.currency)
        parts = [t.id, _when(t.updated), f"{t.message_count:>3} messages", s.model or "", used, t.title]
        click.echo("  ".join(p for p in parts if p))


def _matching(store: Any, queries: tuple[str, ...], count: int) -> list[Any]:
    """The newest ``count`` conversations whose messages (text, tool calls and results) hold every one of
    ``queries``, case-insensitively: the threads read newest first, a page at a time."""
    wanted = [q.casefold() for q in queries]
    found: list[Any] = []
    before: float | None = None
    while len(found) < count:
        page = store.list_threads(limit=100, before=before)
        for t in page:
            text = "\n".join(_searchable(m) for m in store.load(t.id)).casefold()
            if all(q in text for q in wanted):
                found.append(t)
                if len(found) == count:
                    break
        if len(page) < 100:
            break
        before = page[-1].updated
    return found


def _searchable(m: Any) -> str:
    calls = (f"{c.name} {json.dumps(c.arguments, ensure_ascii=False)}" for c in m.tool_calls)
    return " ".join([m.text, *calls, *(str(r.output) for r in m.tool_results)])


def _totals_json(s: Totals) -> dict[str, Any]:
    return {"model": s.model, "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
            "cost": None if s.cost is None else {"amount": float(s.cost), "currency": s.currency or "USD"}}


def _show(cid: str, messages: list[Any], rows: list[ResponseRow], as_json: bool) -> None:
    """One conversation: its messages, each response followed by its model, tokens and cost."""
    from .._stores.codec import dumps_message

    if as_json:
        click.echo(json.dumps({"id": cid, "messages": [json.loads(dumps_message(m)) for m in messages],
                               "responses": [r.to_json() for r in rows]}, ensure_ascii=False, indent=1))
        return
    by_message = {r.message_id: r for r in rows if r.message_id}
    for m in messages:
        body = m.text or " ".join(f"[tool call {c.name} {json.dumps(c.arguments)}]" for c in m.tool_calls) or \
            " ".join(f"[{r.tool_name} -> {str(r.output)[:200]}]" for r in m.tool_results)
        click.echo(f"## {m.role}\n{body}\n")
        row = by_message.get(m.id)
        if row is not None:
            used = usage_text(row.input_tokens, row.output_tokens, row.cost, row.currency)
            click.echo(f"({', '.join(p for p in (row.model, used) if p)})\n")


@command.command("path")
def path_command() -> None:
    """Print the path of the conversation log (a SQLite file)."""
    click.echo(logs_url().removeprefix("sqlite:///"))


@command.command("delete")
@click.argument("cid")
def delete(cid: str) -> None:
    """Forget conversation CID."""
    store = open_logs()
    forget(store, cid)
    if not store.delete(cid):
        raise click.ClickException(f"no conversation {cid!r}")
    click.echo(f"deleted {cid}")
