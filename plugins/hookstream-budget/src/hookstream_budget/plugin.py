"""The ``hookstream`` entry point: registers the ``budget`` run plugin, the ``--max-input-tokens`` and
``--max-cost-usd`` options of the run commands, and ``hookstream tokens`` (the input tokens a prompt would
take). Importing this module does not import the plugin itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookstream.plugin import RunPluginRegistrar, hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

# The CLI commands that run chats, and so take the budget's limits.
_RUN_COMMANDS = ("chat", "batch", "serve")


@hookimpl
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    # Off until a run asks for it (plugins=["budget"] or ("budget", {limits})): other runs never load it.
    register("budget", "hookstream_budget._budget:Budget")


@hookimpl
def hookstream_register_commands(cli: click.Group) -> None:
    from .tokens import command

    cli.add_command(command, "tokens")


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    if command not in _RUN_COMMANDS:
        return None
    import click

    return [
        click.Option(["--max-input-tokens"], type=click.IntRange(min=0), default=None, metavar="N",
                     help="End a run before a model request of more than N input tokens (budget plugin, "
                          "docs/tokens.md)."),
        click.Option(["--max-cost-usd"], type=click.FloatRange(min=0), default=None, metavar="USD",
                     help="End a run before a model request that would take its cost past USD (budget "
                          "plugin; prices from hookstream[prices])."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    limits = {k: options[k] for k in ("max_input_tokens", "max_cost_usd") if options.get(k) is not None}
    if "max_cost_usd" in limits:
        from hookstream.plugin import install_command, prices_available

        if not prices_available():
            import click

            # Without prices every cost is unknown and the limit would never stop a run: say so at start-up.
            raise click.UsageError(f"--max-cost-usd needs model prices: {install_command('hookstream[prices]')}")
    if limits:
        run.settings = run.settings.evolve(plugins=(*run.settings.plugins, ("budget", limits)))
