"""``hookstream plugins``: what is installed, what each plugin registers, and what failed to load."""

from __future__ import annotations

import json
from typing import Any

import click

from .. import __version__
from .._registry import KINDS, Registry, get_registry


def plugins_document(reg: Registry) -> dict[str, Any]:
    """The registry as one JSON-ready document, for scripts (``hookstream plugins --json``)::

        {"core": {"distribution": "hookstream", "version": "0.1.0"},
         "plugins": [{"name": "openai", "distribution": "hookstream-openai", "version": "0.1.0",
                      "hooks": ["hookstream_register_providers"],
                      "registered": {"providers": ["openai", "openai-responses"], "chunk_strategies": [],
                                     "tool_executors": [], "stop_conditions": []}}, ...],
         "failures": [{"name": "broken", "error": "RuntimeError: ..."}]}

    ``plugins`` is sorted by entry-point name; ``distribution`` and ``version`` are ``null`` for a plugin
    added without a distribution; ``registered`` always has every kind, in the order of ``KINDS``.
    """
    plugins = [
        {
            "name": name,
            "distribution": info.distribution,
            "version": info.version,
            "hooks": list(info.hooks),
            "registered": {kind: list(info.registered.get(kind, [])) for kind in KINDS},
        }
        for name, info in sorted(reg.plugins.items())
    ]
    failures = [{"name": f.name, "error": f.error} for f in reg.failures]
    return {"core": {"distribution": "hookstream", "version": __version__}, "plugins": plugins,
            "failures": failures}


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document (core version, plugins, failures) instead of text.")
def command(as_json: bool) -> None:
    """List loaded plugins with their version, hooks and registrations, then any that failed."""
    reg = get_registry()
    if as_json:
        click.echo(json.dumps(plugins_document(reg), indent=2))
        return
    for name, info in sorted(reg.plugins.items()):
        dist = f"{info.distribution} {info.version}" if info.distribution else "(not installed)"
        click.echo(f"{name}  [{dist}]")
        click.echo(f"  hooks: {', '.join(info.hooks) or 'none'}")
        for kind in KINDS:
            if kind in info.registered:
                click.echo(f"  {kind.replace('_', ' ')}: {', '.join(info.registered[kind])}")
    for failure in reg.failures:
        click.echo(f"FAILED {failure.name}: {failure.error}")
