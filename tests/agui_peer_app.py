"""A real third-party AG-UI server for tests/test_agui_client_peer.py: pydantic-ai's AG-UI adapter
(``pydantic_ai.ui.ag_ui.AGUIAdapter``) in a Starlette app under uvicorn, with pydantic-ai's offline models.

Runs in its own virtual environment (``scripts/install-agui-peer``), never in hookstream's: it imports
only pydantic-ai, Starlette and uvicorn. ``python agui_peer_app.py`` binds 127.0.0.1 on a free port,
prints ``listening on http://127.0.0.1:PORT/`` and serves until killed:

* ``POST /test``: an agent on ``TestModel`` with one server-side tool, ``server_clock`` (TestModel
  calls every tool once, then answers with the tools' results as JSON).
* ``POST /frontend``: an agent on ``FunctionModel`` that calls the frontend tool the request declares
  (``add`` with ``{"a": 2, "b": 3}``; pydantic-ai treats request tools as external, deferred tools, so the
  run ends there) and, once the request carries the tool's result, answers ``"The sum is RESULT."``.
* ``POST /approval``: a ``TestModel`` agent whose server tool ``transfer`` needs approval: the run ends
  with an AG-UI interrupt; a request whose ``resume`` approves it runs the tool and answers.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator

import uvicorn
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

test_agent = Agent(TestModel())


@test_agent.tool_plain
def server_clock() -> str:
    """The server's clock (fixed, for the test)."""
    return "12:00"


async def frontend_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    last = messages[-1]
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    if results:
        yield f"The sum is {results[0].content}."
        return
    yield {0: DeltaToolCall(name="add", json_args='{"a": 2, ', tool_call_id="call_add_1")}
    yield {0: DeltaToolCall(json_args='"b": 3}')}


frontend_agent = Agent(FunctionModel(stream_function=frontend_stream))

approval_agent = Agent(TestModel(), output_type=[str, DeferredToolRequests])


@approval_agent.tool_plain(requires_approval=True)
def transfer(amount: int) -> str:
    """Transfer money (needs approval)."""
    return f"transferred {amount}"


async def run_test(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=test_agent)


async def run_frontend(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=frontend_agent)


async def run_approval(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=approval_agent)


app = Starlette(routes=[Route("/test", run_test, methods=["POST"]),
                        Route("/frontend", run_frontend, methods=["POST"]),
                        Route("/approval", run_approval, methods=["POST"])])


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"listening on http://127.0.0.1:{port}/", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
