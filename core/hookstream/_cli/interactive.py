"""Where ``hookstream chat`` takes its prompt from, and its interactive mode, as simonw/llm's CLI does.

* ``hookstream chat PROMPT``: the argument.
* ``echo hi | hookstream chat`` or ``hookstream chat -``: stdin.
* ``cat notes.txt | hookstream chat "summarise"``: stdin, a space, then the argument (llm's order: "the
  resulting prompt will consist of the piped content followed by the arguments").
* ``hookstream chat`` on a terminal with no prompt: an interactive chat (:func:`repl`), each line a turn of
  one conversation; ``exit``, ``quit`` or Ctrl-D ends it, ``!multi`` ... ``!end`` sends several lines as
  one turn (``!multi abc`` ... ``!end abc`` when the text itself holds a ``!end`` line).

With ``--approve`` stdin answers the approval questions, so it is never read as the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

import click

__all__ = ["EXIT_WORDS", "read_prompt", "repl"]

EXIT_WORDS = frozenset({"exit", "quit"})


def read_prompt(prompt: str | None, stdin: TextIO | None, *, stdin_is_answers: bool = False) -> str | None:
    """The prompt of a one-shot run from the ``PROMPT`` argument and ``stdin`` (see the module docstring);
    ``None`` when there is none and stdin is a terminal: the caller starts :func:`repl`. Raises
    :class:`click.UsageError` for ``-`` or no prompt when stdin, not a terminal, answers approvals.
    ``stdin`` is ``None`` when the process has none (``sys.stdin`` of a process started with fd 0
    closed): the prompt is the argument alone."""
    if stdin is None:
        return "" if prompt in (None, "-") else prompt
    if prompt == "-":
        if stdin_is_answers:
            raise click.UsageError("with --approve stdin answers the approvals: give the prompt as an argument")
        return stdin.read()
    if stdin.isatty():
        return prompt
    if stdin_is_answers:
        if prompt is None:
            raise click.UsageError("with --approve stdin answers the approvals: give the prompt as an argument")
        return prompt
    piped = stdin.read()
    if not piped:
        return prompt if prompt is not None else ""
    return piped if prompt is None else f"{piped} {prompt}"


def _read_turn(read_line: Callable[[str], str]) -> str | None:
    """One turn's text: a line, or the lines between ``!multi`` and ``!end``; ``None`` to end the chat
    (``exit``, ``quit``, end of input)."""
    try:
        line = read_line("> ")
    except EOFError:
        return None
    words = line.strip().split()
    if words[:1] == ["!multi"]:
        end = " ".join(["!end", *words[1:]])
        lines: list[str] = []
        while True:
            try:
                more = read_line("")
            except EOFError:
                return "\n".join(lines) if lines else None
            if more.strip() == end:
                return "\n".join(lines)
            lines.append(more)
    if line.strip() in EXIT_WORDS:
        return None
    return line


def repl(turn: Callable[[str], int], model: str, *, read_line: Callable[[str], str] = input,
         err: TextIO | None = None) -> int:
    """Hold an interactive chat with ``model``: each turn's text goes to ``turn`` (which runs it as one
    run of the conversation and returns its exit code) until ``exit``/``quit``/Ctrl-D. ``read_line``
    reads one line after showing its prompt (raising :class:`EOFError` at the end of input); ``err``
    receives the banner (stderr by default). Returns the exit code: 0, or 130 when Ctrl-C ended the
    chat (at the prompt, or during a turn: that run ends cancelled, its text so far kept). A turn that
    fails (exit code 1) is reported by ``turn`` and the chat goes on."""
    def say(text: str) -> None:
        click.echo(text, err=err is None, file=err)

    if read_line is input:
        try:  # line editing and history for input(), as llm chat has (absent on Windows)
            import readline  # noqa: F401
        except ImportError:
            pass

    say(f"Chatting with {model}")
    say("Type 'exit' or 'quit' to exit")
    say("Type '!multi' to enter multiple lines, then '!end' to finish")
    while True:
        try:
            text = _read_turn(read_line)
        except KeyboardInterrupt:
            say("")
            return 130
        if text is None:
            return 0
        if not text.strip():
            continue
        if turn(text) == 130:
            return 130
