"""The offline demo as an AG-UI server backend: what ``hookstream serve --demo`` runs.

Each POSTed run gets its own loopback provider server (:class:`~hookstream.testing.LoopbackServer`)
playing the bundled demo recording (:func:`hookstream.testing.demo_server`) through the real OpenAI adapter and the real
engine and tools; the server checks each request as the demo does. Whatever the user typed, the recorded
answer plays: it is a recording.

``approval=True`` (the default for ``serve --demo``) wraps ``convert_currency`` with
``needs_approval=True``, so the run stops at an interrupt (``CUSTOM approval-requested`` then
``RUN_FINISHED`` outcome ``interrupt``) and the client's next POST answers it through
``RunAgentInput.resume``; that run plays the demo's second step. A fresh question (last message from the
user) plays both steps.

Thread safety: the factory is shared by the WSGI threads; every run owns its server and engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hookstream import ChatStream, LoopSettings, Message, RunResult, Tool, chat, get_model
from hookstream.events import BaseEvent
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, CapturedRequest, LoopbackServer, demo_check, demo_server
from hookstream.testing import demo_tools as _tools

from .agui import RunInput, RunStream, StreamFactory

__all__ = ["demo_factory", "demo_tools"]


def demo_tools(approval: bool = True) -> list[Tool]:
    """The demo's two tools; ``approval`` makes ``convert_currency`` ask before it runs."""
    return _tools(approval=approval)


class _DemoRun:
    """A run's ChatStream plus its loopback server, stopped when the run ends or is cancelled."""

    def __init__(self, stream: ChatStream, server: LoopbackServer) -> None:
        self.stream = stream
        self.server = server

    def __iter__(self) -> Iterator[BaseEvent]:
        try:
            yield from self.stream
        finally:
            self.server.stop()

    def cancel(self) -> None:
        self.stream.cancel()

    def result(self) -> RunResult:
        return self.stream.result()


def _check_resumed(index: int, request: CapturedRequest) -> str | None:
    problem = demo_check(1, request)
    if problem and problem.startswith("currency result is"):
        return None  # the user denied the conversion: the recording still plays, as a recording does
    return problem


def _this_turn(messages: list[Message]) -> list[Message]:
    # The recording answers one question: keep system messages and everything from the last user turn.
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is None:
        return [*messages, Message.user(DEMO_PROMPT)]
    return [m for m in messages[:last_user] if m.role == "system"] + messages[last_user:]


def demo_factory(*, delay: float = 0.03, approval: bool = True, **chat_options: Any) -> StreamFactory:
    """A ``StreamFactory`` (:func:`hookstream.server.make_app`) playing the demo; ``delay`` is seconds
    between SSE events of the recorded provider stream."""
    tools = demo_tools(approval)

    def start(run: RunInput) -> RunStream:
        messages = _this_turn(run.messages)
        resumed = messages[-1].role != "user"
        if resumed:
            server = demo_server(delay=delay, steps=("step2",), check=_check_resumed)
        else:
            server = demo_server(delay=delay)
        extra: dict[str, Any] = dict(chat_options)
        if run.resume is not None:
            extra["resume"] = run.resume
        try:
            provider = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
            stream = chat(provider, messages, tools=[*tools, *run.tools], max_steps=4, thread_id=run.thread_id,
                          loop=LoopSettings(run_id=run.run_id, principal=run.principal), **extra)
        except BaseException:
            server.stop()
            raise
        return _DemoRun(stream, server)

    return start
