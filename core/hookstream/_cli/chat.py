"""``hookstream chat PROMPT -m PROVIDER:MODEL``: one run, rendered live; the prompt from stdin too, and an
interactive chat when no prompt is given on a terminal (:mod:`.interactive`)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import click

from .._chat import ChatStream, chat, get_model
from .._fake_models import REPLIES_ENV
from .._messages import FilePart, Message, ToolCallPart
from .._secrets import Secret
from .._settings import RunSettings
from .._stores.memory import InMemoryStore
from .defaults import chat_model, cli_key
from .interactive import read_prompt, repl
from .live import LiveRenderer
from .render import OUTPUT_CHOICES, print_run, report_waiting
from .responses import record_responses, thread_model
from .runs import EXIT_INTERRUPTED, RunCommand, configured, print_notes, run_settings


def _confirm(call: ToolCallPart) -> bool:
    """Ask on stderr/stdin whether ``call`` may run; no answer (EOF) denies."""
    args = json.dumps(call.arguments, ensure_ascii=False)[:200]
    try:
        return click.confirm(f"Run tool {call.name}({args})?", default=False, err=True)
    except click.Abort:
        return False


def _attachment(path: str) -> FilePart:
    """``--attach PATH`` as a file part; an unreadable file is a usage error."""
    try:
        return FilePart.from_path(path)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path!r}: {exc.strerror or exc}", param_hint="--attach") from None


def load_schema(path: str) -> dict[str, Any]:
    """The JSON Schema object in the file at ``path`` (the ``--schema`` option); raises
    :class:`click.BadParameter` for a file that cannot be read, is not JSON or is not a valid schema."""
    import jsonschema.exceptions
    import jsonschema.validators

    try:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read a JSON Schema from {path!r}: {exc}", param_hint="--schema") from None
    if not isinstance(schema, dict):
        raise click.BadParameter(f"{path!r} holds {type(schema).__name__}, not a JSON Schema object",
                                 param_hint="--schema")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise click.BadParameter(f"{path!r} is not a valid JSON Schema: {exc.message}", param_hint="--schema") from None
    return schema


@contextmanager
def _cancel_on_sigint(stream: ChatStream) -> Iterator[Callable[[], bool]]:
    """While the run streams, Ctrl-C cancels it (it then ends with ``RUN_FINISHED`` outcome
    ``cancelled``, text so far kept) instead of raising KeyboardInterrupt mid-stream; a second Ctrl-C
    raises it. Yields a function telling whether Ctrl-C was pressed."""
    pressed: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(True)
        stream.cancel()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield lambda: bool(pressed)
    finally:
        signal.signal(signal.SIGINT, previous)


def _steer_from(stream: ChatStream, lines: IO[str]) -> threading.Thread:
    """``--live``: a daemon thread that sends each non-blank line of ``lines`` to the running ``stream`` as
    a steering message (:meth:`ChatStream.add_message`), until end of input or the end of the run."""

    def read() -> None:
        for line in iter(lines.readline, ""):
            text = line.strip()
            if text and not stream.add_message(text):
                return  # the run has ended: the line is not sent (nor is anything typed later)

    reader = threading.Thread(target=read, name="hookstream-steering", daemon=True)
    reader.start()
    return reader


@click.command("chat", cls=RunCommand)
@click.argument("prompt", required=False)
@click.option("-m", "--model", default=None,
              help="PROVIDER:MODEL (openai:gpt-4o-mini) or an alias; default: the continued conversation's, "
                   "else hookstream models default.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--key", "api_key", default=None, metavar="KEY",
              help="The API key for this run, or the name of a stored key (hookstream keys set NAME), as "
                   "simonw/llm's --key; default: the provider's environment variable, else its stored key.")
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--approve", "ask_approval", is_flag=True,
              help="Ask y/N on the terminal before a tool that needs approval runs (always on with a terminal).")
@click.option("--strategy", default=None, help="Chunk strategy for --output text (immediate, word-boundary...).")
@click.option("--attach", "attachments", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A file (image, audio, PDF, text) sent with the prompt; media type from its bytes/name "
                   "(repeatable).")
@click.option("--schema", "schema_file", type=click.Path(dir_okay=False), default=None,
              help="Ask for structured output matching this JSON Schema file; --output final-json gains the "
                   "parsed object as \"output\".")
@click.option("--record", "record_dir", type=click.Path(file_okay=False), default=None,
              help="Record each model call (request without secrets, raw response) into DIR; "
                   "replay with --model replay:DIR.")
@click.option("-c", "--continue", "continue_latest", is_flag=True,
              help="Continue the latest conversation (hookstream logs lists them).")
@click.option("--cid", default=None, help="Continue conversation CID.")
@click.option("--no-log", is_flag=True, help="Keep no record of this conversation.")
@click.option("--live", "steer", is_flag=True,
              help="While the run streams, send each line typed on stdin to the model as a user message at the "
                   "next step boundary (steering); approvals are not asked on the terminal then.")
@click.option("--test-calls-plugin-tools", "test_plugin_tools", is_flag=True,
              help="Let the offline test model call the tools plugins add (--mcp servers' tools): it calls every "
                   "tool once, and those may write, move or delete for real. Refused without this flag.")
def command(
    prompt: str | None,
    model: str | None,
    base_url: str | None,
    output: str,
    strategy: str | None,
    record_dir: str | None,
    ask_approval: bool,
    attachments: tuple[str, ...] = (),
    schema_file: str | None = None,
    continue_latest: bool = False,
    cid: str | None = None,
    no_log: bool = False,
    steer: bool = False,
    test_plugin_tools: bool = False,
    api_key: str | None = None,
    **run_options: Any,
) -> None:
    """Chat with MODEL: PROMPT, else stdin (PROMPT "-" too; piped text and PROMPT are joined, stdin
    first), else, on a terminal, an interactive chat (exit, quit or Ctrl-D ends it). API keys come from
    the provider's environment variable (OPENAI_API_KEY...), else hookstream keys set PROVIDER.

    Exit codes: 0 done, 1 the run ended with an error, 2 usage error, 3 the run waits for a tool call's
    approval (see stderr), 130 cancelled with Ctrl-C."""
    if steer and ask_approval:
        raise click.UsageError("--live reads steering lines from stdin, where --approve would ask: give one of them")
    if steer and prompt in (None, "-"):
        raise click.UsageError("with --live stdin carries steering lines: give the prompt as an argument")
    # With --live stdin is left to the steering reader (never read for the prompt).
    text = read_prompt(prompt, sys.stdin, stdin_is_answers=ask_approval or steer)
    if text is not None and not text.strip():
        raise click.UsageError("PROMPT is empty: give the model something to answer")
    # Everything that can be a usage error is read before a plugin starts anything (an MCP server).
    files = [_attachment(a) for a in attachments]
    memory, thread_id = _conversation(continue_latest, cid, no_log)
    continued = thread_model(memory, thread_id) if (continue_latest or cid) and thread_id is not None else None
    model = chat_model(model, continued)
    if text is None and memory is None:  # --no-log: the interactive chat still remembers its own turns
        memory, thread_id = InMemoryStore(), f"cli-{uuid.uuid4().hex[:12]}"
    settings = run_settings(run_options, output=load_schema(schema_file) if schema_file is not None else None,
                            memory=memory)
    # What plugins start (MCP servers) runs for the whole command: stopped by the run's ExitStack whatever
    # way it ends (its exit code, an error, Ctrl-C while they start or during the run).
    key = cli_key(api_key)
    with configured("chat", settings) as run:
        if not test_plugin_tools:
            _refuse_test_model_on_plugin_tools(model, settings, run.settings)
        print_notes(run)

        def turn(line: str) -> int:
            parts = files[:]
            files.clear()  # --attach goes with the first turn only
            try:
                _run(Message.user(line, *parts), model, base_url, run.settings, thread_id, output=output,
                     strategy=strategy, record_dir=record_dir, ask_approval=ask_approval,
                     steer=steer, api_key=key)
            except SystemExit as done:  # _run ends every run with its exit code
                return done.code if isinstance(done.code, int) else 1
            return 0

        raise SystemExit(turn(text) if text is not None else repl(turn, model))


def _refuse_test_model_on_plugin_tools(model: str, own: RunSettings, configured_settings: RunSettings) -> None:
    """The test model calls every tool it is offered once, with made-up arguments (like pydantic-ai's
    TestModel): harmless for the user's own ``--tool`` functions it is meant to exercise, not for the
    tools a plugin brings in (an MCP server's ``write_file``, ``move_file``...). Raises
    :class:`click.UsageError` naming them unless the replies are scripted (``HOOKSTREAM_TEST_REPLIES``,
    which name the tools they call)."""
    if model.split(":", 1)[0] != "test" or os.environ.get(REPLIES_ENV, "").strip():
        return
    added = sorted({t.name for t in configured_settings.tools} - {t.name for t in own.tools})
    if added:
        shown = ", ".join(added[:8]) + (f" and {len(added) - 8} more" if len(added) > 8 else "")
        raise click.UsageError(
            f"the test model calls every tool it is offered once, and plugins offer {shown}: those run for real "
            "(an MCP server's tools may write, move or delete files). Give --test-calls-plugin-tools to let it, "
            f"or script the calls with ${REPLIES_ENV}")


def _conversation(continue_latest: bool, cid: str | None, no_log: bool) -> tuple[Any, str | None]:
    """chat()'s ``memory`` and ``thread_id`` for the conversation log (``hookstream._cli.logs``)."""
    if no_log:
        if continue_latest or cid:
            raise click.UsageError("--no-log keeps no conversation to continue: drop -c/--cid or --no-log")
        return None, None
    if continue_latest and cid:
        raise click.UsageError("give -c (the latest conversation) or --cid ID, not both")
    from .logs import open_logs

    store = open_logs()
    if continue_latest:
        latest = store.list_threads(limit=1)
        if not latest:
            raise click.UsageError("no conversation to continue yet")
        cid = latest[0].id
    elif cid is not None and not store.load(cid):
        raise click.UsageError(f"no conversation {cid!r} (hookstream logs lists them)")
    return store, cid or f"cli-{uuid.uuid4().hex[:12]}"


def _run(message: Message, model: str, base_url: str | None, settings: RunSettings, thread_id: str | None, *,
         output: str, strategy: str | None, record_dir: str | None, ask_approval: bool,
         steer: bool = False, api_key: Secret | None = None) -> None:
    """One run of ``hookstream chat`` with the command's ``settings``; always ends with
    :class:`SystemExit` carrying the exit code."""
    # On a terminal, text output is the live renderer (Markdown, spinners, y/N approval prompts).
    live = LiveRenderer() if output == "text" and sys.stdout.isatty() else None
    approve = live.approve if live is not None else (_confirm if ask_approval else None)
    if steer:
        approve = None  # stdin carries steering lines: a y/N prompt would compete for them
    settings = settings.evolve(approve=settings.approve or approve)
    try:
        session = None
        if record_dir is not None:
            from .._record import Recorder

            session = Recorder(record_dir, model, base_url).session()
        provider = get_model(model, base_url=base_url, session=session, api_key=api_key)
        stream = chat(provider, message, settings=settings, thread_id=thread_id)
    except (ValueError, LookupError, OSError) as exc:  # OSError: a recording directory (--record, replay:)
        raise click.UsageError(str(exc)) from None
    if steer:
        _steer_from(stream, sys.stdin)
    try:
        with _cancel_on_sigint(stream) as interrupted:
            code = live.render(stream) if live is not None else print_run(stream, output, strategy)
    except KeyboardInterrupt:  # the second Ctrl-C: give up at once
        click.echo("interrupted", err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    result = stream.result()
    record_responses(settings.memory, thread_id, result)  # model, tokens and cost for hookstream logs
    if result.stopped_by == "max_steps":
        click.echo(f"note: stopped after {settings.max_steps} step(s) (--max-steps) while the model still wanted "
                   "to call tools; the answer to their results was not asked for", err=True)
    if result.unsent_messages:
        click.echo(f"note: {len(result.unsent_messages)} line(s) typed during the run were not sent: the run ended "
                   "first", err=True)
    if result.outcome == "interrupt":
        code = report_waiting(stream)
    if interrupted() and result.outcome == "cancelled":
        click.echo("cancelled", err=True)
        raise SystemExit(EXIT_INTERRUPTED)
    raise SystemExit(code)
