"""A real stdio MCP server with 200 generated tools (the MCP SDK's ``MCPServer``, formerly FastMCP), for
the tool-search tests: 20 kinds of record times 10 actions, each with its own description and arguments.
``get_weather(city)`` answers ``Sunny in CITY``; every other tool echoes its name and arguments.

Run as ``python many_tools_server.py`` (stdio transport).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

ACTIONS = {
    "get": "Get the current {noun} for one {key}.",
    "list": "List every {noun} known, newest first, filtered by {key}.",
    "create": "Create a new {noun} from the given {key}.",
    "update": "Update an existing {noun} found by its {key}.",
    "delete": "Delete the {noun} with this {key} for good.",
    "archive": "Move old {noun} entries with this {key} to the archive.",
    "export": "Export the {noun} entries of a {key} as a CSV file.",
    "count": "Count the {noun} entries that belong to a {key}.",
    "validate": "Check that the {noun} with this {key} is complete and consistent.",
    "summarize": "Write a short summary of the {noun} history of a {key}.",
}
NOUNS = {
    "weather": "city", "invoice": "customer", "ticket": "queue", "calendar_event": "attendee",
    "shipment": "tracking_number", "payroll": "employee", "inventory": "warehouse", "contract": "supplier",
    "expense": "project", "lead": "region", "subscription": "plan", "refund": "order",
    "repository": "owner", "deployment": "environment", "alert": "service", "backup": "database",
    "playlist": "listener", "recipe": "ingredient", "flight": "airport", "course": "student",
}

server: MCPServer = MCPServer("many-tools")


def make(action: str, noun: str, key: str) -> Callable[..., str]:
    name = f"{action}_{noun}"

    def tool(**arguments: Any) -> str:
        if name == "get_weather":
            return f"Sunny in {arguments[key]}"
        return f"{name}({arguments})"

    # MCPServer reads the input schema from the signature: one string argument named after the key.
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=str)], return_annotation=str)
    tool.__name__ = name
    return tool


for action, template in ACTIONS.items():
    for noun, key in NOUNS.items():
        server.add_tool(make(action, noun, key), name=f"{action}_{noun}",
                        description=template.format(noun=noun.replace("_", " "), key=key.replace("_", " ")))


if __name__ == "__main__":
    server.run("stdio")
