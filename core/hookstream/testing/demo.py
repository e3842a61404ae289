"""The offline demo's parts for samples and tests: a loopback server playing the bundled demo
recording, its prompt and its two tools.

The recording is a two-step OpenAI Chat Completions conversation (the wire format of
``POST /v1/chat/completions`` with ``"stream": true``): step 1 asks for ``get_weather`` and
``convert_currency`` in parallel, step 2 streams the final answer (which holds ``40,575``). Point the
``openai`` provider at the server::

    from hookstream import chat, get_model
    from hookstream.testing import DEMO_PROMPT, demo_server, demo_tools

    with demo_server() as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="demo-key")
        print(chat(model, DEMO_PROMPT, tools=demo_tools()).result().text)

Thread safety: each server runs on its own daemon threads; the tools are plain thread-safe functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import _demo
from .._agentloop.tools import Tool, tool
from .._stream.loopback import LoopbackServer, Response

if TYPE_CHECKING:
    from .._stream.loopback import CapturedRequest

__all__ = ["DEMO_MODEL", "DEMO_PROMPT", "DEMO_STEPS", "demo_check", "demo_factory", "demo_server", "demo_tools"]

DEMO_MODEL = _demo.MODEL
"""The model the recording was written for: ``"openai:gpt-4o-mini"``."""

DEMO_PROMPT = _demo.PROMPT
"""The question the recording answers (weather in Paris and 250 EUR in yen)."""

DEMO_STEPS: tuple[str, ...] = ("step1", "step2")
"""The recorded responses, in order: ``step1`` (two tool calls), ``step2`` (the final answer)."""


def demo_server(*, delay: float = 0.0, steps: Sequence[str] = DEMO_STEPS,
                check: bool | Callable[[int, CapturedRequest], str | None] = True) -> LoopbackServer:
    """A started :class:`LoopbackServer` answering successive requests with the recorded ``steps``
    (names from :data:`DEMO_STEPS`; the last one repeats), each SSE event its own HTTP chunk,
    ``delay`` seconds apart.

    With ``check`` the server answers ``400`` (so the run ends with ``RUN_ERROR`` ``bad_request``) to a
    request that does not offer exactly the two :func:`demo_tools`, or whose second request lacks the
    assistant tool-call message and both tool results with matching ``tool_call_id``. The base URL for
    the ``openai`` provider is ``server.url + "/v1"``. ``check`` may be a check of your own, as
    :class:`LoopbackServer` takes it (:func:`demo_check` is the default one). Stop it with ``.stop()`` or a
    ``with`` block.
    Raises :class:`ValueError` for an unknown step name or a negative delay.
    """
    unknown = [s for s in steps if s not in DEMO_STEPS]
    if unknown or not steps:
        raise ValueError(f"steps must be names from {DEMO_STEPS}, got {list(steps)!r}")
    if delay < 0:
        raise ValueError(f"delay is seconds between SSE events, at least 0, got {delay}")
    responses = [Response(pieces=_demo._events(_demo._body(f"{s}.sse")), delay=delay) for s in steps]
    own = check if callable(check) else (_demo.check_request if check else None)
    return LoopbackServer(responses, check=own).start()


def demo_check(index: int, request: CapturedRequest) -> str | None:
    """The demo's check of request ``index`` (0: step 1, 1: step 2): ``None`` when it is what the recording
    answers, else what is wrong (what :func:`demo_server` answers ``400`` with)."""
    return _demo.check_request(index, request)


def demo_tools(*, approval: bool = False) -> list[Tool]:
    """The demo's tools, ``[get_weather, convert_currency]`` (each takes about 0.2 s, so the two calls
    of step 1 visibly run in parallel); ``approval`` makes ``convert_currency`` need approval."""
    return [tool(_demo.get_weather), tool(_demo.convert_currency, needs_approval=approval)]


def demo_factory(*, delay: float = 0.03, approval: bool = True, **chat_options: Any) -> Any:
    """A :data:`hookstream.server.StreamFactory` playing the demo, what ``hookstream serve --demo`` runs:
    ``make_app(stream_factory=demo_factory())`` serves AG-UI runs with no provider. Each run gets its own
    :func:`demo_server` (``delay`` seconds between SSE events) and the real OpenAI adapter, engine and
    :func:`demo_tools`; with ``approval`` the run stops at ``convert_currency``'s approval and the next POST
    resumes it. ``chat_options`` go to :func:`hookstream.chat`."""
    # Found here: the server plugin loads the WSGI app, which a test session using only the kit's
    # loopback servers never needs (the pytest plugin imports this package at start-up). Raises
    # ImportError saying what to install without the plugin (hookstream-server).
    from ..server import _plugin_face

    return _plugin_face().demo_factory(delay=delay, approval=approval, **chat_options)
