"""Entry point of the ``hookstream-ray`` distribution: registers the ``ray`` tool executor and adds
``--ray [ADDRESS]`` and ``--workers N`` to ``hookstream batch`` (the chats in Ray worker processes).

Every hookstream process loads this module, so it imports neither Ray nor click at the top: the
executor, the batch runner and the options load in the hook functions that need them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    import click
    from hookstream.plugin import CLIRun

    from .executor import RayExecutor


def ray_executor(*args: Any, **kwargs: Any) -> RayExecutor:
    """A new :class:`hookstream_ray.executor.RayExecutor` (same arguments)."""
    # Imported here, on the first run that uses it: every hookstream process builds the registry, and
    # most never run a tool on Ray.
    from .executor import RayExecutor

    return RayExecutor(*args, **kwargs)


@hookimpl
def hookstream_register_tool_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register :func:`ray_executor` (a :class:`hookstream_ray.executor.RayExecutor`) as ``ray``."""
    register("ray", ray_executor)


@hookimpl
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    """``--ray [ADDRESS]`` and ``--workers N`` for ``hookstream batch``."""
    if command != "batch":
        return None
    import click

    return [
        click.Option(["--ray", "ray_address"], is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
                     help="Run the chats on a Ray cluster (hookstream-ray): ADDRESS, else RAY_ADDRESS, else a "
                          "local one. Put it after INPUT.jsonl when giving no ADDRESS."),
        click.Option(["--workers"], type=click.IntRange(min=1), default=None,
                     help="With --ray: worker processes (default: one per CPU of the cluster); "
                          "--concurrency is split among them."),
    ]


@hookimpl
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    """With ``--ray``: the batch's runner is a :class:`hookstream_ray.batch.RayRunner`, which notes
    ``ray: N worker processes on M nodes`` once its workers run. Raises :class:`click.UsageError` for
    ``--workers`` without ``--ray`` and for ``--ray`` without Ray installed."""
    if command != "batch":
        return
    import importlib.util

    import click

    address, workers = options.get("ray_address"), options.get("workers")
    if address is None:
        if workers is not None:
            raise click.UsageError("--workers is for --ray (threads: --concurrency)")
        return
    if importlib.util.find_spec("ray") is None:
        from hookstream.plugin import install_command  # only for the message: start-up stays as it was

        raise click.UsageError(f"--ray needs Ray: {install_command('hookstream-ray[ray]')}")
    from .batch import RayRunner

    run.runner = RayRunner(address=address or None, workers=workers, notes=run.notes)
