"""``hookstream runs list``, ``hookstream runs resume ID`` and ``hookstream runs export ID DIR``: durable
runs from the command line (added by :func:`hookstream_dbos.plugin.hookstream_register_commands`)."""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["argv_of", "runs"]

_DB = click.option("--durable-db", "db", default=None, metavar="URL",
                   help="The DBOS system database (default: $DBOS_SYSTEM_DATABASE_URL, else SQLite in "
                        "$HOOKSTREAM_USER_DIR or the user data directory).")

_SECRET_WORDS = ("key", "token", "secret", "password", "auth")
"""An option whose name holds one of these is never kept with a run (the journal is no place for a
secret; the resumed command finds it where the first one did, in the environment or the key store)."""


def argv_of(command: click.Command, values: dict[str, Any]) -> list[str]:
    """The command-line arguments that give ``command`` the parameter ``values`` (those that differ from
    their defaults), leaving out any option whose name looks like a secret."""
    args: list[str] = []
    for param in command.params:
        name = param.name or ""
        value = values.get(name)
        if value is None or value == param.default or value == () or any(w in name for w in _SECRET_WORDS):
            continue
        if isinstance(param, click.Argument):
            args += [str(v) for v in value] if isinstance(value, tuple | list) else [str(value)]
            continue
        if not isinstance(param, click.Option) or not param.opts:
            continue
        opt = max(param.opts, key=len)
        if param.is_flag and isinstance(value, bool):
            if value:
                args.append(opt)
            elif param.secondary_opts:
                args.append(param.secondary_opts[0])
        elif param.multiple:
            for v in value:
                args += [opt, str(v)]
        else:
            args += [opt, str(value)]
    return args


@click.group()
def runs() -> None:
    """Durable runs (hookstream-dbos): `hookstream chat PROMPT --durable ID` runs one."""


@runs.command("list")
@_DB
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_command(db: str | None, limit: int, as_json: bool) -> None:
    """The durable runs, newest first: id, state, steps done, started (UTC), model."""
    from .runs import list_runs

    found = list_runs(db, limit=limit)
    if as_json:
        for info in found:
            click.echo(json.dumps(info.as_dict(), ensure_ascii=False))
        return
    rows = [("ID", "STATE", "STEPS", "STARTED", "MODEL")]
    rows += [(r.id, r.state, str(r.steps), r.started.strftime("%Y-%m-%d %H:%M:%S") if r.started else "-", r.model)
             for r in found]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


@runs.command("resume")
@click.argument("run_id", metavar="ID")
@_DB
@click.option("--approve", is_flag=True,
              help="Add --approve: a run waiting for approvals asks y/N (on stdin when it is not a terminal) "
                   "and the answers continue it.")
@click.pass_context
def resume_command(ctx: click.Context, run_id: str, db: str | None, approve: bool = False) -> None:
    """Run the `hookstream chat` command that started run ID again: completed model calls and tool calls
    replay from the journal, the rest runs (a finished run prints its recorded answer; a waiting one
    waits again, or with --approve takes its answers)."""
    from .runs import list_runs

    found = list_runs(db, run_id=run_id)
    if not found:
        raise click.UsageError(f"no durable run {run_id!r}; see `hookstream runs list`")
    argv = found[0].argv
    if argv is None:
        raise click.UsageError(f"run {run_id!r} was started from Python: resume it by running the same chat() "
                               f"with plugins=[Durable({run_id!r})] again")
    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    if approve and "--approve" not in argv:
        argv = [*argv, "--approve"]
    with root.make_context("hookstream", list(argv), parent=None) as sub:
        root.invoke(sub)


@runs.command("export")
@click.argument("run_id", metavar="ID")
@click.argument("directory", type=click.Path(file_okay=False), metavar="DIR")
@_DB
@click.option("--force", is_flag=True, help="Replace a recording already in DIR.")
def export_command(run_id: str, directory: str, db: str | None, force: bool) -> None:
    """Write run ID's model calls to DIR as a `--record` recording: `hookstream chat PROMPT --model
    replay:DIR` (with the same prompt and tools) replays the run with no network."""
    from .errors import DurableError
    from .runs import export_run

    try:
        out = export_run(run_id, directory, db, overwrite=force)
    except (DurableError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    calls = len(json.loads((out / "manifest.json").read_text("utf-8"))["calls"])
    click.echo(f"wrote {calls} model call{'s' if calls != 1 else ''} of run {run_id} to {out}")
