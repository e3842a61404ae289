"""Elicitation: an MCP server asking the user a question in the middle of a tool call.

MCP spec, "Client Features" > "Elicitation": the server sends ``elicitation/create`` with a message and
either a flat JSON schema of primitive fields to fill (form mode) or a URL to visit (URL mode, 2025-11-25);
the client answers ``accept`` (with the filled ``content`` in form mode), ``decline`` or ``cancel``.

hookstream surfaces it the way it surfaces a tool approval: a plain synchronous callback
(``elicitation=`` on :class:`~hookstream_mcp.MCPServer`) gets an :class:`Elicitation` and returns an
:class:`ElicitationAnswer` (or a dict: accept with that content; None: decline). It runs on a worker
thread, so it may block on a person (the CLI's terminal prompt does). Without a callback the client does
not declare the elicitation capability and servers do not ask. On accept, fields the answer leaves out
get the schema's ``default`` (SEP-1034), so "accept the defaults" is an empty dict.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any, Literal

import attrs

__all__ = ["Elicitation", "ElicitationAnswer", "ElicitationHandler", "apply_defaults", "terminal_elicitation"]

Action = Literal["accept", "decline", "cancel"]


@attrs.define(slots=True, frozen=True)
class Elicitation:
    """One question from a server. ``server``: its name; ``message``: the question for the user;
    ``mode``: ``"form"`` (fill ``schema``: a JSON object schema whose ``properties`` are strings,
    numbers, integers, booleans, or enums of them, each maybe with a ``title``, ``description`` and
    ``default``) or ``"url"`` (visit ``url``; consent is the answer, nothing is sent back)."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: dict[str, Any] = attrs.field(factory=dict)
    url: str | None = None

    @property
    def fields(self) -> dict[str, dict[str, Any]]:
        """The form's fields: ``schema["properties"]`` (name -> field schema)."""
        props = self.schema.get("properties")
        return dict(props) if isinstance(props, Mapping) else {}

    @property
    def required(self) -> list[str]:
        """Names of the fields the answer must fill."""
        req = self.schema.get("required")
        return [str(r) for r in req] if isinstance(req, list) else []


@attrs.define(slots=True, frozen=True)
class ElicitationAnswer:
    """The user's answer: ``action`` ``"accept"`` (with ``content``, the filled fields, in form mode),
    ``"decline"`` (an explicit no) or ``"cancel"`` (dismissed without a choice)."""

    action: Action
    content: dict[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationAnswer:
        return cls("accept", dict(content or {}))

    @classmethod
    def decline(cls) -> ElicitationAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationAnswer:
        return cls("cancel")


ElicitationHandler = Callable[[Elicitation], "ElicitationAnswer | Mapping[str, Any] | None"]


def apply_defaults(request: Elicitation, content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` with each field it leaves out set to the schema's ``default`` (SEP-1034)."""
    out = dict(content)
    for name, field in request.fields.items():
        if name not in out and isinstance(field, Mapping) and "default" in field:
            out[name] = field["default"]
    return out


def normalize(request: Elicitation, answer: ElicitationAnswer | Mapping[str, Any] | None) -> ElicitationAnswer:
    """``answer`` as a handler gives it, as the :class:`ElicitationAnswer` sent: a dict accepts, None
    declines; accept gets the schema's defaults (form mode) or no content (URL mode)."""
    if answer is None:
        return ElicitationAnswer.decline()
    if not isinstance(answer, ElicitationAnswer):
        answer = ElicitationAnswer.accept(answer)
    if answer.action != "accept":
        return ElicitationAnswer(answer.action)
    if request.mode == "url":
        return ElicitationAnswer("accept")
    return ElicitationAnswer("accept", apply_defaults(request, answer.content or {}))


# One question on the terminal at a time, whichever server or tool call asks.
_TERMINAL = threading.Lock()


def _parse(field: Mapping[str, Any], text: str) -> Any:
    """The typed value of ``text`` for a field schema; raises ValueError when it does not fit."""
    kind = field.get("type")
    choices = field.get("enum") or [o.get("const") for o in field.get("oneOf", ()) if isinstance(o, Mapping)]
    if choices and text not in [str(c) for c in choices]:
        raise ValueError(f"one of: {', '.join(str(c) for c in choices)}")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("yes or no")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    return text


def _ask_field(name: str, field: Mapping[str, Any], required: bool, ask: Callable[[str], str],
               out: IO[str]) -> tuple[bool, Any]:
    """One field's value: (True, value), or (False, None) when left empty and optional."""
    label = field.get("title") or name
    hint = f" ({field['description']})" if field.get("description") else ""
    choices = field.get("enum")
    options = f" [{'/'.join(str(c) for c in choices)}]" if choices else ""
    default = f" (default {field['default']})" if "default" in field else ""
    while True:
        text = ask(f"  {label}{hint}{options}{default}: ").strip()
        if not text:
            if "default" in field:
                return True, field["default"]
            if not required:
                return False, None
            print("    required", file=out)
            continue
        try:
            return True, _parse(field, text)
        except ValueError as exc:
            print(f"    expected {exc}" if str(exc).startswith(("one of", "yes")) else "    expected a number",
                  file=out)


def _ask_on_stderr(prompt: str) -> str:
    """``input()`` with the prompt on stderr (stdout carries the command's answer); EOFError at the end."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def terminal_elicitation(ask: Callable[[str], str] = _ask_on_stderr, out: IO[str] | None = None,
                         open_url: Callable[[str], object] | None = None) -> ElicitationHandler:
    """A handler that asks on the terminal: prints the server's message on ``out`` (stderr), asks
    ``accept? [Y/n/c]`` (n declines, c cancels), then each form field (Enter takes the default);
    in URL mode it shows the URL and opens it with ``open_url`` (default :func:`webbrowser.open`) on
    yes. End of input (Ctrl-D) cancels."""
    def handler(request: Elicitation) -> ElicitationAnswer:
        stream = out if out is not None else sys.stderr
        with _TERMINAL:
            print(f"\nMCP server {request.server} asks: {request.message}", file=stream)
            try:
                if request.mode == "url":
                    print(f"  {request.url}", file=stream)
                    choice = ask("Open this page? [Y/n/c] ").strip().lower()
                else:
                    choice = ask("Answer? [Y/n/c] ").strip().lower()
                if choice in ("n", "no"):
                    return ElicitationAnswer.decline()
                if choice in ("c", "cancel"):
                    return ElicitationAnswer.cancel()
                if request.mode == "url":
                    import webbrowser

                    (open_url or webbrowser.open)(request.url or "")
                    return ElicitationAnswer.accept()
                content: dict[str, Any] = {}
                for name, field in request.fields.items():
                    given, value = _ask_field(name, field, name in request.required, ask, stream)
                    if given:
                        content[name] = value
                return ElicitationAnswer.accept(content)
            except EOFError:
                return ElicitationAnswer.cancel()
    return handler


def refuse_elicitation(out: IO[str] | None = None) -> ElicitationHandler:
    """A handler for a command whose stdin is not a terminal: says on ``out`` (stderr) that the
    server's question was declined, and declines it."""
    def handler(request: Elicitation) -> ElicitationAnswer:
        print(f"hookstream: MCP server {request.server} asked {request.message!r}; declined: stdin is not a "
              "terminal to answer on", file=out if out is not None else sys.stderr)
        return ElicitationAnswer.decline()
    return handler
