"""The peer server of bench_serve.py: pydantic-ai's AG-UI adapter with an OpenAI Chat model pointed at the
simulated provider, one ``lookup`` tool (the same as tests/store_kit.py's), under uvicorn, one worker.

Runs in benchmarks/.venvs/agui-peer (scripts/install-agui-peer, plus ``pydantic-ai-slim[openai]``).
``python peer_agui_app.py SIM_URL`` binds 127.0.0.1 on a free port, prints
``listening on http://127.0.0.1:PORT/`` and serves ``POST /`` until killed. pydantic-ai 2.68 has no
``Agent.to_ag_ui()``; ``AGUIAdapter.dispatch_request`` in a Starlette route is its AG-UI app.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def main() -> None:
    sim = sys.argv[1].rstrip("/")
    agent = Agent(OpenAIChatModel("sim", provider=OpenAIProvider(base_url=sim + "/v1", api_key="x")), tools=[lookup])

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    app = Starlette(routes=[Route("/", run, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", backlog=2048))
    print(f"listening on http://127.0.0.1:{port}/", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
