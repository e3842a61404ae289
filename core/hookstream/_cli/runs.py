"""What the run commands (``chat``, ``batch``, ``serve``) share: the run options, declared once here
(``--tool``, ``--system``, ``--max-steps``, ``--max-tokens``, ``--plugin``), the options plugins add
(:func:`~hookstream._hookspecs.hookstream_cli_options`), one :class:`~hookstream.RunSettings` built from
them (:func:`run_settings`), and the plugins' :func:`~hookstream._hookspecs.hookstream_cli_configure`
call with its :class:`~hookstream.plugin.CLIRun` (:func:`configured`).

The core names no plugin here beyond install hints: a flag that a known plugin adds
(:data:`PLUGIN_FLAGS`), given without the plugin installed, says what to install.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from .._agentloop.tools import Tool, tool
from .._errors import ToolDefinitionError, UnknownPluginError
from .._registry import Registry, get_registry
from .._settings import CLIRun, RunSettings

__all__ = ["EXIT_INTERRUPTED", "PLUGIN_FLAGS", "RunCommand", "configured", "load_tool", "print_notes",
           "run_settings"]

log = logging.getLogger("hookstream.cli")

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a run stopped with Ctrl-C

_RUN_PLUGIN_FLAGS = {
    **dict.fromkeys(("--cache", "--cache-path"), ("hookstream-cache", "hookstream-cache")),
    **dict.fromkeys(("--compact", "--compact-window", "--compact-fraction", "--compact-summary-model"),
                    ("hookstream-compaction", "hookstream-compaction")),
    **dict.fromkeys(("--tool-search", "--tool-search-threshold"), ("hookstream-toolsearch", "hookstream-toolsearch")),
}
PLUGIN_FLAGS: dict[str, dict[str, tuple[str, str]]] = {
    "chat": {**_RUN_PLUGIN_FLAGS, **dict.fromkeys(("--mcp", "--mcp-auth"), ("hookstream-mcp", "hookstream-mcp")),
             "--timing": ("hookstream-timing", "hookstream-timing")},
    "batch": {**_RUN_PLUGIN_FLAGS, **dict.fromkeys(("--ray", "--workers"), ("hookstream-ray", "hookstream-ray[ray]")),
              "--provider-batch": ("hookstream-provider-batch", "hookstream-provider-batch")},
    "serve": {**_RUN_PLUGIN_FLAGS, "--cache-shared": ("hookstream-cache", "hookstream-cache")},
}
"""Command -> flag -> (distribution, requirement) of the first-party plugin that adds the flag: only
for the message when the flag is given without the plugin (the install command it names comes from
:func:`hookstream._install_hint.install_command`: the checkout's folder when there is one)."""


def load_tool(spec: str) -> Any:
    """The object named by ``MODULE:FUNC`` (the ``--tool`` option); raises :class:`click.BadParameter`,
    also for a function that cannot become a tool (a parameter annotation without JSON Schema) and for
    an object that is neither a function nor a tool.

    ``MODULE`` is found on ``sys.path`` with the current directory first, as ``python -m`` does (the
    ``hookstream`` console script does not put it there itself)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:FUNC, got {spec!r}", param_hint="--tool")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec!r}: {exc}", param_hint="--tool") from None
    if not callable(obj) and not isinstance(obj, Tool | dict):
        raise click.BadParameter(f"{spec!r} is {type(obj).__name__} {_short(obj)}, not a function or a tool",
                                 param_hint="--tool")
    if callable(obj) and not isinstance(obj, Tool):
        try:
            tool(obj)
        except ToolDefinitionError as exc:
            raise click.BadParameter(exc.message, param_hint="--tool") from None
    return obj


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def _run_options() -> list[click.Option]:
    # New objects for each command: a click parameter belongs to one command.
    return [
        click.Option(["--tool", "tool_specs"], multiple=True, metavar="MODULE:FUNC",
                     help="A tool as MODULE:FUNC (repeatable)."),
        click.Option(["-s", "--system"], default=None, help="System prompt."),
        click.Option(["--max-steps"], type=click.IntRange(min=1), default=10, show_default=True,
                     help="Most model calls per run (at least 1)."),
        click.Option(["--max-tokens"], type=click.IntRange(min=1), default=None,
                     help="Output token limit per model call."),
        click.Option(["--plugin", "plugin_names"], multiple=True, metavar="NAME",
                     help="Turn on a run plugin by name (repeatable; hookstream plugins lists them)."),
        click.Option(["-o", "--option", "model_options"], type=(str, str), multiple=True, metavar="NAME VALUE",
                     help="A model option, as simonw/llm's -o (repeatable): temperature, max_tokens, or any field "
                          "of the provider's request body (top_p, seed, reasoning_effort...); VALUE is read as "
                          "JSON when it is JSON (0.2, true, {...}), else as text."),
    ]


class RunCommand(click.Command):
    """A run command: its own options, then the shared run options, then the options plugins return
    from ``hookstream_cli_options(command)``, asked for the first time the command parses arguments or
    shows its help (again when the registry is replaced, as tests do). A plugin option whose name or
    flag the command already has is left out, with a warning logged."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.params.extend(_run_options())
        self._own = list(self.params)
        self._registry: Registry | None = None

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        registry = get_registry()
        if registry is not self._registry:
            self.params = [*self._own, *self._plugin_options(registry)]
            self._registry = registry
        return super().get_params(ctx)

    def _plugin_options(self, registry: Registry) -> list[click.Parameter]:
        try:
            answers = registry.pm.hook.hookstream_cli_options(command=self.name)
        except Exception as exc:  # a plugin's bug: say whose hook it was, never a traceback
            raise click.ClickException(f"a plugin's hookstream_cli_options({self.name!r}) failed: "
                                       f"{type(exc).__name__}: {exc}") from None
        taken = {flag for p in self._own for flag in (p.name, *p.opts, *p.secondary_opts)}
        added: list[click.Parameter] = []
        for options in answers:
            for option in options or ():
                if not isinstance(option, click.Option):
                    log.warning("hookstream %s: a plugin option that is not a click.Option is left out: %r",
                                self.name, option)
                    continue
                flags = {option.name, *option.opts, *option.secondary_opts}
                if flags & taken:
                    log.warning("hookstream %s: plugin option %s is left out: the command has %s already",
                                self.name, "/".join(option.opts), ", ".join(sorted(str(f) for f in flags & taken)))
                    continue
                taken |= flags
                added.append(option)
        return added

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            # `--cache=PATH` style: the flag is what comes before "=".
            known = PLUGIN_FLAGS.get(self.name or "", {}).get(exc.option_name.split("=", 1)[0])
            if known is None:
                raise
            from .._install_hint import install_command

            dist, requirement = known
            raise click.UsageError(f"{exc.option_name} needs the {dist} plugin: {install_command(requirement)}",
                                   ctx) from None


def run_settings(params: Mapping[str, Any], **fields: Any) -> RunSettings:
    """The one :class:`~hookstream.RunSettings` of a run command, from its shared run options in
    ``params`` (the command's parameter values) and the command's own ``fields`` (``None`` values left
    out). Raises :class:`click.UsageError` (or :class:`click.BadParameter`) for a tool that does not
    load, an unknown ``--plugin`` name (naming the installed ones) or settings that do not hold together
    (two tools of one name)."""
    tools = [load_tool(spec) for spec in params.get("tool_specs", ())]
    plugins = [_run_plugin(name) for name in params.get("plugin_names", ())]
    options = model_options(params.get("model_options", ()))
    # -o temperature / -o max_tokens are the settings' own fields (each provider maps them to its name).
    temperature, max_tokens = options.pop("temperature", None), options.pop("max_tokens", None)
    try:
        return RunSettings.of(RunSettings(tools=tools, plugins=plugins, options=options), system=params.get("system"),
                              max_steps=params.get("max_steps"), max_tokens=params.get("max_tokens") or max_tokens,
                              temperature=temperature, **fields)
    except (TypeError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None


def model_options(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """``-o NAME VALUE`` pairs as a dict: VALUE as JSON when it parses (``0.2``, ``true``, ``{"a": 1}``),
    else the text. Raises :class:`click.BadParameter` for a blank name or a ``temperature`` /
    ``max_tokens`` of the wrong type."""
    out: dict[str, Any] = {}
    for name, text in pairs:
        if not name.strip():
            raise click.BadParameter("an option needs a name: -o NAME VALUE", param_hint="-o")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        out[name] = value
    if "temperature" in out and (isinstance(out["temperature"], bool)
                                 or not isinstance(out["temperature"], (int, float))):
        raise click.BadParameter(f"temperature is a number, got {out['temperature']!r}", param_hint="-o")
    if "max_tokens" in out and (isinstance(out["max_tokens"], bool) or not isinstance(out["max_tokens"], int)
                                or out["max_tokens"] < 1):
        raise click.BadParameter(f"max_tokens is a whole number of at least 1, got {out['max_tokens']!r}",
                                 param_hint="-o")
    return out


def _run_plugin(name: str) -> str:
    registry = get_registry()
    if name not in registry.names("run_plugins"):
        try:
            registry.run_plugin(name)  # its error names the installed run plugins and what to do
        except UnknownPluginError as exc:
            raise click.UsageError(f"--plugin: {exc.message}") from None
    return name


@contextmanager
def configured(command: str, settings: RunSettings) -> Iterator[CLIRun]:
    """The command's :class:`~hookstream.plugin.CLIRun` after every plugin's
    ``hookstream_cli_configure(command, options, run)``; its ``stack`` closes when the ``with`` block
    ends, however it ends (also when a plugin fails halfway). A plugin's :class:`click.UsageError` is a
    usage error (exit code 2); a :class:`ValueError`, :class:`TypeError` or :class:`LookupError` from
    it becomes one; Ctrl-C while the plugins set up (MCP servers starting) exits with 130."""
    run = CLIRun(command, settings)
    with run.stack:
        options = dict(click.get_current_context().params)
        try:
            get_registry().pm.hook.hookstream_cli_configure(command=command, options=options, run=run)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except click.ClickException:
            raise
        except (ValueError, TypeError, LookupError) as exc:
            raise click.UsageError(str(exc)) from None
        yield run


def print_notes(run: CLIRun) -> None:
    """The plugins' notes to stderr, one line each, then forgotten (a later call prints only new ones)."""
    for note in run.notes:
        click.echo(note, err=True)
    run.notes.clear()
