"""Run the ``hookstream`` command line in-process, as click's own test runner does: for tests of the
commands and of plugins that add to them (``hookstream chat --mcp`` ...).

Thread safety: one call at a time per process (click's runner swaps ``sys.stdin``/``stdout``/``stderr``
and the environment for the call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from click.testing import Result

__all__ = ["run_cli"]


def run_cli(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
    catch_exceptions: bool = True,
) -> Result:
    """Invoke ``hookstream ARGS...`` (``args`` without the program name: ``["chat", "hi", "--model",
    "openai:gpt-4o-mini"]``) in this process and return click's :class:`~click.testing.Result`:
    ``exit_code``, ``output`` (what the command printed, text), ``exception``. ``input`` is the command's
    stdin; ``env`` sets environment variables for the call (``None`` unsets one). Installed plugins load as
    for the real command. With ``catch_exceptions=False`` an exception the command raises propagates."""
    # Imported here: the command line loads click and every command, which most tests never need.
    from click.testing import CliRunner

    from .._cli import main

    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=catch_exceptions,
                              prog_name="hookstream")
