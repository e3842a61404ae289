"""``hookstream install`` and ``hookstream uninstall``: pip, run in the environment hookstream runs in.

A plugin is found through its entry points only when it is installed next to the core, so these commands
run ``sys.executable -m pip`` rather than whatever ``pip`` comes first on ``PATH`` (which may belong to
another Python). pip's own output and exit code pass through unchanged.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys

import click

_PASS_THROUGH = {"ignore_unknown_options": True, "help_option_names": ["-h", "--help"]}


def _no_pip_message(command: str, args: tuple[str, ...]) -> str:
    # A venv made by uv (or `python -m venv --without-pip`) has no pip; say how to get one for this Python,
    # or how to run the same thing with uv (whose `pip uninstall` asks nothing, so it takes no -y).
    exe = shlex.quote(sys.executable)
    return (
        f"this environment ({sys.prefix}) has no pip, which `hookstream {command}` runs.\n"
        f"Add pip to it:     {exe} -m ensurepip --upgrade\n"
        f"or, with uv:       uv pip {command} --python {exe} {shlex.join(args)}"
    )


def _run_pip(command: str, args: tuple[str, ...], pip_flags: tuple[str, ...] = ()) -> None:
    if importlib.util.find_spec("pip") is None:
        raise click.ClickException(_no_pip_message(command, args))
    # Not captured: pip's progress, warnings and resolver errors reach the terminal as pip prints them.
    code = subprocess.call([sys.executable, "-m", "pip", command, *pip_flags, *args])
    raise SystemExit(code)


@click.command("install", context_settings=_PASS_THROUGH)
@click.argument("specs", nargs=-1, required=True, type=click.UNPROCESSED, metavar="SPEC...")
def install_command(specs: tuple[str, ...]) -> None:
    """Install plugins (or anything else) with pip into the environment hookstream runs in.

    SPEC is anything `pip install` accepts: a distribution name (hookstream-gemini), a plugin folder
    (./plugins/hookstream-gemini), a wheel or sdist file, a URL. Options such as --upgrade or
    --find-links DIR are passed to pip too. Exits with pip's exit code; check the result with
    `hookstream plugins`.

    Run from a checkout of the repository, a first-party plugin's name (hookstream-ollama,
    'hookstream-ray[ray]') installs the checkout's folder: nothing is on the package index yet.
    """
    from .._install_hint import first_party_spec

    args = []
    for spec in specs:
        folder = first_party_spec(spec)
        if folder is not None:
            click.echo(f"hookstream install: {spec} from this checkout: {folder}", err=True)
        args.append(folder or spec)
    _run_pip("install", tuple(args))


@click.command("uninstall", context_settings=_PASS_THROUGH)
@click.argument("names", nargs=-1, required=True, type=click.UNPROCESSED, metavar="NAME...")
def uninstall_command(names: tuple[str, ...]) -> None:
    """Uninstall distributions (hookstream-gemini) with `pip uninstall -y`: no confirmation asked.

    Exits with pip's exit code.
    """
    _run_pip("uninstall", names, ("-y",))
