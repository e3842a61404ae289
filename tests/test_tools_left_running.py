"""A tool that ignores its cancellation token is abandoned, not silently: ``RunResult.tools_left_running``
names it and ``on_finish`` receives that result (issue 24). Barriers, no wall-clock bounds."""

from __future__ import annotations

import threading

from engine_kit import tool_body
from hookstream import Callbacks, RunResult, chat, get_model, tool
from hookstream.testing import LoopbackServer, Response


def test_a_cancelled_run_reports_the_tool_it_left_running() -> None:
    entered, release = threading.Event(), threading.Event()

    @tool
    def stubborn(x: int) -> str:
        """Ignores its cancellation token.

        Args:
            x: anything
        """
        entered.set()
        release.wait()
        return "late"

    @tool
    def polite(x: int) -> str:
        """Returns at once.

        Args:
            x: anything
        """
        return "done"

    finished: list[RunResult] = []
    body = tool_body(("call_s", "stubborn", {"x": 1}), ("call_p", "polite", {"x": 2}))
    with LoopbackServer([Response(body)]) as srv:
        stream = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key="k"), "go", tools=[stubborn, polite],
                      callbacks=Callbacks(on_finish=finished.append))

        def cancel_when_running() -> None:
            entered.wait()
            stream.cancel()

        threading.Thread(target=cancel_when_running).start()
        list(stream)
    try:
        result = stream.result()
        assert result.outcome == "cancelled"
        assert result.tools_left_running == ["call_s"]
        assert finished and finished[0].tools_left_running == ["call_s"]
    finally:
        release.set()
