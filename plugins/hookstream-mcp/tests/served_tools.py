"""Tools ``hookstream mcp serve --tool served_tools:NAME`` offers in the tests (a module on sys.path)."""

from __future__ import annotations

import json

from hookstream import ToolContext, tool


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def test_error_handling() -> str:
    """Always fails (the MCP conformance suite's tools-call-error scenario calls a tool of this name)."""
    raise RuntimeError("This tool intentionally returns an error for testing")


def _delete_file(path: str) -> str:
    """Delete a file (pretend).

    Args:
        path: the file.
    """
    return f"deleted {path}"


delete_file = tool(_delete_file, name="delete_file", needs_approval=True)
"""A tool that needs approval: ``ask`` asks the client (MCP elicitation) before the agent may run it."""


def whoami(ctx: ToolContext, note: str = "") -> str:
    """Say who calls: the id and claims of ``ctx.principal`` as JSON, ``null`` without one.

    Args:
        note: anything; ignored.
    """
    who = ctx.principal
    return json.dumps(None if who is None else {"id": who.id, "claims": dict(who.claims)})
