"""A stdio MCP server whose tool asks the user a question (MCP elicitation, form mode), built on the MCP
Python SDK's own server: ``book_table(day)`` asks for the number of guests (default 2) and whether
to book by the window, and answers with what it got, or that the user declined or cancelled.

Run as ``python elicit_server.py``; the hookstream-mcp tests start it with ``MCPServer.stdio``. With
``--legacy`` it serves only the initialize handshake, as a pre-2026 server does (the SDK's own
handshake-only loop), so the question comes as the server's own ``elicitation/create`` request, which
names no tool call on the client's side.
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp.server.mcpserver import Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel, Field

server = MCPServer("booking")


class Booking(BaseModel):
    guests: int = Field(default=2, description="How many people")
    window: bool = Field(description="A table by the window?")


def ask(day: str) -> Elicit[Booking]:
    # The SDK's resolver form: asked mid-call on handshake-era sessions, as an input-required
    # round trip on 2026-07-28 ones; the client's elicitation callback answers either.
    return Elicit(f"Booking a table for {day}: how many guests?", Booking)


@server.tool()
async def book_table(day: str, answer: Annotated[ElicitationResult[Booking], Resolve(ask)]) -> str:
    """Book a table for ``day``; asks the user for the details."""
    if answer.action != "accept":
        return f"not booked: the user chose {answer.action}"
    data = answer.data
    return f"booked for {data.guests} on {day}, {'by the window' if data.window else 'inside'}"


if __name__ == "__main__":
    if "--legacy" in sys.argv[1:]:
        import mcp.server.lowlevel.server as lowlevel
        from mcp.server.runner import serve_loop

        lowlevel.serve_dual_era_loop = serve_loop  # type: ignore[assignment]
    server.run("stdio")
