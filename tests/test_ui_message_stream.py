"""The Vercel AI SDK UI message stream: hookstream's AG-UI events as UI message chunks
(``hookstream.server.to_ui_message_stream``), the ``useChat`` request as hookstream messages, and
``POST /api/chat`` of ``make_app`` (the demo, a real OpenAI-wire provider with a tool needing approval,
a store, authentication).

``rebuild`` below applies chunks to a UIMessage the way the ``ai`` package's
``process-ui-message-stream.ts`` does (the subset hookstream sends); tests/test_ui_message_stream_node.py
checks the same against the package itself.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Iterable
from typing import Any

import hookstream
import pytest
from hookstream import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from hookstream.events import (
    Custom,
    Interrupt,
    Outcome,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    RunError,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from hookstream.server import (
    UI_MESSAGE_STREAM_HEADERS,
    make_app,
    messages_from_ui,
    parse_chat_request,
    resume_entries,
    ui_message_chunks,
)
from hookstream.stores import InMemoryStore

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")

from hookstream.testing import DEMO_PROMPT, demo_factory, demo_server, demo_tools

# -- helpers --------------------------------------------------------------------------------------------


def frames_to_chunks(body: Iterable[bytes]) -> list[Any]:
    """SSE frames -> chunk objects, ``"[DONE]"`` kept as the string. Every frame is one ``data:`` line,
    after an ``id:`` line when the server sent it (resumable runs)."""
    out: list[Any] = []
    for frame in b"".join(body).split(b"\n\n"):
        if not frame:
            continue
        if frame.startswith(b"id: "):
            frame = frame.split(b"\n", 1)[1]
        assert frame.startswith(b"data: ") and b"\n" not in frame, frame
        data = frame[len(b"data: "):].decode()
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def rebuild(chunks: Iterable[Any], message: dict[str, Any] | None = None) -> dict[str, Any]:
    """A UIMessage from chunks, continuing ``message`` (process-ui-message-stream.ts, simplified)."""
    msg = copy.deepcopy(message) if message else {"id": "", "role": "assistant", "parts": [], "metadata": None}
    texts: dict[str, dict[str, Any]] = {}
    raw: dict[str, str] = {}

    def tool(cid: str) -> dict[str, Any]:
        found = [p for p in msg["parts"] if p.get("toolCallId") == cid]
        assert found, f"no tool invocation {cid}"
        return found[-1]

    for c in chunks:
        if c == "[DONE]":
            continue
        t = c["type"]
        if t == "start":
            msg["id"] = c.get("messageId") or msg["id"]
        elif t == "start-step":
            msg["parts"].append({"type": "step-start"})
        elif t in ("text-start", "reasoning-start"):
            part = {"type": t.split("-")[0], "text": "", "state": "streaming"}
            if c.get("providerMetadata"):
                part["providerMetadata"] = c["providerMetadata"]
            texts[c["id"]] = part
            msg["parts"].append(part)
        elif t in ("text-delta", "reasoning-delta"):
            texts[c["id"]]["text"] += c["delta"]
        elif t in ("text-end", "reasoning-end"):
            texts.pop(c["id"])["state"] = "done"
        elif t == "tool-input-start":
            raw[c["toolCallId"]] = ""
            msg["parts"].append({"type": f"tool-{c['toolName']}", "toolCallId": c["toolCallId"],
                                 "state": "input-streaming", "input": None})
        elif t == "tool-input-delta":
            raw[c["toolCallId"]] += c["inputTextDelta"]
        elif t == "tool-input-available":
            part = tool(c["toolCallId"])
            part.update(type=f"tool-{c['toolName']}", state="input-available", input=c["input"])
        elif t == "tool-input-error":
            tool(c["toolCallId"]).update(state="output-error", errorText=c["errorText"])
        elif t == "tool-approval-request":
            tool(c["toolCallId"]).update(state="approval-requested", approval={"id": c["approvalId"]})
        elif t == "tool-output-available":
            tool(c["toolCallId"]).update(state="output-available", output=c["output"])
        elif t == "tool-output-error":
            tool(c["toolCallId"]).update(state="output-error", errorText=c["errorText"])
        elif t == "tool-output-denied":
            tool(c["toolCallId"]).update(state="output-denied")
        elif t in ("file", "source-url", "source-document"):
            msg["parts"].append({k: v for k, v in c.items()})
        elif t in ("finish", "message-metadata") and c.get("messageMetadata"):
            msg["metadata"] = {**(msg["metadata"] or {}), **c["messageMetadata"]}
    return msg


def answer_approvals(message: dict[str, Any], approved: bool, reason: str | None = None) -> dict[str, Any]:
    """What AI SDK 6 ``addToolApprovalResponse`` makes of the message."""
    out = copy.deepcopy(message)
    for p in out["parts"]:
        if p.get("state") == "approval-requested":
            p["state"] = "approval-responded"
            p["approval"] = {**p["approval"], "approved": approved, **({"reason": reason} if reason else {})}
    return out


Post = Callable[..., tuple[str, dict[str, str], list[Any]]]


def poster(app: Callable[..., Iterable[bytes]]) -> Post:
    def post(doc: Any, path: str = "/api/chat", headers: dict[str, str] | None = None
             ) -> tuple[str, dict[str, str], list[Any]]:
        body = json.dumps(doc).encode()
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
                   "wsgi.input": io.BytesIO(body), **(headers or {})}
        got: list[Any] = []
        result = app(environ, lambda status, hs: got.extend([status, dict(hs)]))
        try:
            raw = list(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if not got[0].startswith("200"):
            return got[0], got[1], [json.loads(b"".join(raw))]
        return got[0], got[1], frames_to_chunks(raw)

    return post


def user(text: str, ident: str = "u1") -> dict[str, Any]:
    return {"id": ident, "role": "user", "parts": [{"type": "text", "text": text}]}


def types(chunks: list[Any]) -> list[str]:
    return [c if isinstance(c, str) else c["type"] for c in chunks]


# -- the chunk mapping ------------------------------------------------------------------------------


def test_demo_run_as_ui_message_chunks() -> None:
    with demo_server() as server:
        model = hookstream.get_model("openai:gpt-4o-mini", base_url=server.url + "/v1", api_key="demo-key")
        chunks = frames_to_chunks(hookstream.server.to_ui_message_stream(
            hookstream.chat(model, DEMO_PROMPT, tools=demo_tools()), message_id="m-1"))
    kinds = types(chunks)
    # two steps: the tool calls, then the text; each step framed; [DONE] last
    squashed = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]
    assert squashed == ["start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-start",
                        "tool-input-delta", "tool-input-available", "finish-step", "tool-output-available",
                        "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish", "[DONE]"]
    assert chunks[0] == {"type": "start", "messageId": "m-1"}
    finish = chunks[-2]
    assert finish["finishReason"] == "stop"
    meta = finish["messageMetadata"]["hookstream"]
    assert meta["outcome"] == "success" and meta["usage"]["totalTokens"] > 0 and meta["interrupts"] == []
    message = rebuild(chunks)
    tools = {p["type"]: p for p in message["parts"] if p["type"].startswith("tool-")}
    assert tools["tool-get_weather"]["input"] == {"city": "Paris"}
    assert tools["tool-get_weather"]["output"]["conditions"] == "partly cloudy"  # JSON text sent parsed
    assert tools["tool-convert_currency"]["output"]["converted"] == 40575
    assert all(p["state"] == "output-available" for p in tools.values())
    text = next(p for p in message["parts"] if p["type"] == "text")
    assert "40,575 JPY" in text["text"] and text["state"] == "done"
    # the text part names the AG-UI message, so a store recognises the step when it comes back
    assert text["providerMetadata"]["hookstream"]["messageId"].startswith("msg_")


def test_chunk_field_names_follow_the_pinned_schema() -> None:
    """Every chunk carries exactly the fields ui-message-chunks.ts (ai 6.0.326) names for its type."""
    allowed = {
        "start": {"messageId", "messageMetadata"}, "start-step": set(), "finish-step": set(),
        "text-start": {"id", "providerMetadata"}, "text-delta": {"id", "delta", "providerMetadata"},
        "text-end": {"id", "providerMetadata"}, "reasoning-start": {"id", "providerMetadata"},
        "reasoning-delta": {"id", "delta", "providerMetadata"}, "reasoning-end": {"id", "providerMetadata"},
        "tool-input-start": {"toolCallId", "toolName"}, "tool-input-delta": {"toolCallId", "inputTextDelta"},
        "tool-input-available": {"toolCallId", "toolName", "input"},
        "tool-input-error": {"toolCallId", "toolName", "input", "errorText"},
        "tool-approval-request": {"approvalId", "toolCallId"}, "tool-output-available": {"toolCallId", "output"},
        "tool-output-error": {"toolCallId", "errorText"}, "tool-output-denied": {"toolCallId"},
        "source-url": {"sourceId", "url", "title"}, "source-document": {"sourceId", "mediaType", "title"},
        "file": {"url", "mediaType"}, "finish": {"finishReason", "messageMetadata"}, "error": {"errorText"},
        "abort": {"reason"},
    }
    events = [
        RunStarted("t", "r"), StepStarted("step-1"),
        ReasoningMessageStart("r1"), ReasoningMessageContent("r1", "hmm"), ReasoningMessageEnd("r1"),
        TextMessageStart("a1"), TextMessageContent("a1", "hi"), TextMessageEnd("a1"),
        ToolCallStart("c1", "f"), ToolCallArgs("c1", '{"x": 1}'), ToolCallEnd("c1"),
        ToolCallStart("c2", "g"), ToolCallArgs("c2", "{not json"), ToolCallEnd("c2"),
        Custom("source", {"id": "s1", "sourceType": "url", "url": "https://example.com", "title": "Ex"}),
        Custom("source", {"id": "s2", "sourceType": "document", "title": "Doc"}),
        Custom("file", {"mediaType": "image/png", "data": "iVBORw=="}),
        StepFinished("step-1"),
        Custom("approval-requested", {"toolCallId": "c1", "approvalId": "approval_c1", "toolName": "f",
                                      "input": {"x": 1}}),
        ToolCallResult("tr2", "c2", "Error: bad arguments", error="Error: bad arguments"),
        RunFinished("t", "r", finish_reason="tool_calls",
                    outcome=Outcome("interrupt", [Interrupt("approval_c1", "tool_approval",
                                                                       tool_call_id="c1")])),
    ]
    chunks = list(ui_message_chunks(events))
    for c in chunks:
        assert set(c) - {"type"} <= allowed[c["type"]], c
    by_type = {c["type"]: c for c in chunks}
    assert by_type["reasoning-delta"] == {"type": "reasoning-delta", "id": "r1", "delta": "hmm"}
    assert by_type["tool-input-available"]["input"] == {"x": 1}
    assert by_type["tool-input-error"]["input"] == "{not json"
    assert by_type["source-url"] == {"type": "source-url", "sourceId": "s1", "url": "https://example.com",
                                     "title": "Ex"}
    assert by_type["file"] == {"type": "file", "url": "data:image/png;base64,iVBORw==", "mediaType": "image/png"}
    assert by_type["tool-approval-request"] == {"type": "tool-approval-request", "approvalId": "approval_c1",
                                                "toolCallId": "c1"}
    assert by_type["tool-output-error"]["errorText"] == "Error: bad arguments"
    assert by_type["finish"]["finishReason"] == "tool-calls"
    assert by_type["finish"]["messageMetadata"]["hookstream"]["interrupts"][0]["toolCallId"] == "c1"
    message = rebuild(chunks)
    assert [p["type"] for p in message["parts"]] == [
        "step-start", "reasoning", "text", "tool-f", "tool-g", "source-url", "source-document", "file"]


def test_errors_cancellation_and_other_custom_events() -> None:
    failed = list(ui_message_chunks([RunStarted("t", "r"), TextMessageStart("a"), TextMessageContent("a", "x"),
                                     RunError("boom", code="server_error"), RunFinished("t", "r")]))
    assert types(failed)[-3:] == ["text-end", "error", "finish"]
    assert failed[-2] == {"type": "error", "errorText": "boom"}
    assert failed[-1] == {"type": "finish", "finishReason": "error"}
    cancelled = list(ui_message_chunks([RunStarted("t", "r"), RunFinished("t", "r", outcome=Outcome("cancelled"))]))
    assert cancelled[-1] == {"type": "abort", "reason": "cancelled"}
    other = list(ui_message_chunks([Custom("loop-stopped", {"stoppedBy": "max_steps", "steps": 2, "maxSteps": 2}),
                                    Custom("approval-responded", {"toolCallId": "c", "approvalId": "approval_c",
                                                                  "approved": False}),
                                    ToolCallResult("m", "c", "Denied", error="Denied")]))
    assert other[1] == {"type": "data-loop-stopped", "transient": True,
                        "data": {"stoppedBy": "max_steps", "steps": 2, "maxSteps": 2}}
    assert other[2] == {"type": "tool-output-denied", "toolCallId": "c"}  # a denial decided by approve()
    assert other[-1] == {"type": "finish"}  # no terminal event: the reader still gets its finish
    empty = frames_to_chunks(hookstream.server.to_ui_message_stream([]))
    assert empty == [{"type": "start", "messageId": empty[0]["messageId"]}, {"type": "finish"}, "[DONE]"]


def test_resumed_run_continues_the_message_without_replaying_its_calls() -> None:
    events = [RunStarted("t", "r"), StepStarted("resume"), ToolCallStart("c1", "f"),
              ToolCallArgs("c1", "{}"), ToolCallEnd("c1", input={}), StepFinished("resume"),
              ToolCallResult("tr", "c1", "Denied: no", error="Denied: no"), RunFinished("t", "r")]
    chunks = list(ui_message_chunks(events, message_id="a-1", denied={"c1"}))
    assert types(chunks) == ["start", "tool-output-denied", "finish"]
    assert chunks[0]["messageId"] == "a-1"
    replayed = list(ui_message_chunks(events, replay_resumed_calls=True))
    assert types(replayed)[:5] == ["start", "start-step", "tool-input-start", "tool-input-delta",
                                   "tool-input-available"]


# -- the request ----------------------------------------------------------------------------------


def test_ui_messages_to_hookstream_messages() -> None:
    approvals: dict[str, bool] = {}
    messages = messages_from_ui([
        {"id": "s", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
        {"id": "u", "role": "user", "parts": [
            {"type": "text", "text": "Look:"},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw==", "filename": "a.png"},
            {"type": "file", "mediaType": "application/pdf", "url": "https://example.com/a.pdf"}]},
        {"id": "a", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "thinking"},
            {"type": "text", "text": "Let me check.", "providerMetadata": {"hookstream": {"messageId": "msg_1"}}},
            {"type": "tool-lookup", "toolCallId": "c1", "state": "output-available", "input": {"q": "x"},
             "output": {"hit": 1}},
            {"type": "dynamic-tool", "toolName": "mcp_tool", "toolCallId": "c2", "state": "output-error",
             "input": {}, "errorText": "failed"},
            {"type": "tool-lookup", "toolCallId": "c3", "state": "output-denied", "input": {"q": "y"},
             "approval": {"id": "approval_c3", "approved": False, "reason": "no"}},
            {"type": "tool-lookup", "toolCallId": "c9", "state": "input-streaming", "input": {"q": ""}},
            {"type": "source-url", "sourceId": "s", "url": "https://example.com"},
            {"type": "step-start"},
            {"type": "text", "text": "Now paying."},
            {"type": "tool-transfer", "toolCallId": "c4", "state": "approval-responded", "input": {"amount": 5},
             "approval": {"id": "approval_c4", "approved": True}},
        ]},
    ], approvals)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[0].text == "Be brief." and messages[0].id == "s"
    files = messages[1].files
    assert files[0].data == b"\x89PNG" and files[0].filename == "a.png" and files[1].url == "https://example.com/a.pdf"
    first = messages[2]
    assert first.id == "msg_1"  # the AG-UI message id the stream sent
    assert isinstance(first.parts[0], ReasoningPart) and isinstance(first.parts[1], TextPart)
    assert [c.id for c in first.tool_calls] == ["c1", "c2", "c3"]  # c9 never finished: not sent
    results = messages[3].tool_results
    assert [(r.tool_call_id, r.output, r.is_error) for r in results] == [
        ("c1", {"hit": 1}, False), ("c2", "failed", True),
        ("c3", "Denied: the user did not approve running 'lookup'. Reason: no", True)]
    assert results[1].tool_name == "mcp_tool"
    last = messages[4]
    assert last.id is None and last.text == "Now paying."
    assert last.tool_calls == [ToolCallPart("c4", "transfer", {"amount": 5}, '{"amount": 5}',
                                            provider_metadata={"hookstream": {"approval": {"approved": True,
                                                                                          "id": "approval_c4"}}})]
    assert approvals == {"c4": True}
    assert resume_entries(messages, approvals) == [
        {"interruptId": "approval_c4", "status": "resolved", "payload": {"approved": True}}]
    assert resume_entries(messages[:4], approvals) is None  # c4 not pending there


def test_text_after_tool_results_without_step_start_is_the_next_step() -> None:
    messages = messages_from_ui([user("q"), {"id": "a", "role": "assistant", "parts": [
        {"type": "tool-f", "toolCallId": "c", "state": "output-available", "input": {}, "output": "ok"},
        {"type": "text", "text": "done"}]}])
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].id == "a" and messages[3].text == "done"


@pytest.mark.parametrize(("doc", "problem"), [
    ([], "JSON object"),
    ({"messages": []}, "id"),
    ({"id": "c", "messages": {}}, "messages must be a list"),
    ({"id": "c", "messages": [{"role": "robot", "parts": []}]}, "unknown role"),
    ({"id": "c", "messages": [{"role": "user", "parts": [{"type": "text"}]}]}, "text part needs text"),
    ({"id": "c", "messages": [{"role": "user", "parts": [{"type": "file", "url": "ftp://x"}]}]}, "https"),
    ({"id": "c", "messages": [{"role": "assistant", "parts": [{"type": "tool-f", "state": "output-available"}]}]},
     "toolCallId"),
    ({"id": "c", "messages": [{"role": "assistant", "parts": [{"type": "tool-f", "toolCallId": "x",
                                                               "state": "exploded"}]}]}, "unknown tool part state"),
])
def test_bad_requests_name_the_field(doc: Any, problem: str) -> None:
    with pytest.raises(hookstream.errors.AGUIInputError, match=problem):
        parse_chat_request(doc)


def test_request_fields() -> None:
    req = parse_chat_request({"id": "chat", "messages": [user("hi"), {"id": "a9", "role": "assistant",
                                                                       "parts": [{"type": "text", "text": "x"}]}],
                              "trigger": "submit-message", "messageId": "a9", "customer": 7})
    assert (req.chat_id, req.trigger, req.message_id, req.continues, req.extra) == (
        "chat", "submit-message", "a9", "a9", {"customer": 7})
    assert parse_chat_request({"id": "chat", "messages": [user("hi")]}).continues is None


# -- POST /api/chat ---------------------------------------------------------------------------------


def test_api_chat_demo_with_approval_in_the_messages() -> None:
    post = poster(make_app(stream_factory=demo_factory(delay=0)))
    status, headers, chunks = post({"id": "chat-1", "messages": [user("hi")], "trigger": "submit-message"})
    assert status == "200 OK"
    for name, value in UI_MESSAGE_STREAM_HEADERS:
        assert headers[name] == value
    assert "tool-approval-request" in types(chunks) and chunks[-1] == "[DONE]"
    asked = rebuild(chunks)
    assert asked["metadata"]["hookstream"]["outcome"] == "interrupt"
    answered = answer_approvals(asked, True)
    status, _, chunks2 = post({"id": "chat-1", "messages": [user("hi"), answered], "trigger": "submit-message",
                               "messageId": answered["id"]})
    assert chunks2[0] == {"type": "start", "messageId": asked["id"]}  # the same message continues
    done = rebuild(chunks2, answered)
    tools = {p["type"]: p for p in done["parts"] if p["type"].startswith("tool-")}
    assert tools["tool-convert_currency"]["output"]["converted"] == 40575
    assert "40,575 JPY" in "".join(p["text"] for p in done["parts"] if p["type"] == "text")
    assert done["metadata"]["hookstream"] == {**done["metadata"]["hookstream"], "outcome": "success", "interrupts": []}


def test_agui_route_unchanged_next_to_api_chat() -> None:
    post = poster(make_app(stream_factory=demo_factory(delay=0)))
    doc = {"threadId": "t", "runId": "r", "tools": [], "messages": [{"id": "m", "role": "user", "content": "hi"}]}
    status, headers, events = post(doc, path="/")
    assert status == "200 OK" and "x-vercel-ai-ui-message-stream" not in headers
    assert events[0]["type"] == "RUN_STARTED"
    status, _, err = post(doc)  # an AG-UI body on /api/chat: no chat id
    assert status.startswith("400") and "id" in err[0]["error"]["message"]


@pytest.fixture
def sim() -> Any:
    from store_kit import SimProvider

    with SimProvider() as provider:
        yield provider


def sim_app(sim: Any, **kwargs: Any) -> Callable[..., Iterable[bytes]]:
    from store_kit import transfer, whoami

    return make_app("openai:sim", tools=[whoami, transfer], base_url=sim.url + "/v1", api_key="sim-key",
                    **kwargs)


def paired(request: list[dict[str, Any]]) -> bool:
    """Every assistant tool call is followed by its tool result before the next non-tool message."""
    for i, m in enumerate(request):
        calls = [c["id"] for c in m.get("tool_calls") or []]
        if calls:
            after = []
            for n in request[i + 1:]:
                if n["role"] != "tool":
                    break
                after.append(n["tool_call_id"])
            if after != calls:
                return False
    return True


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
@pytest.mark.parametrize("stored", [False, True], ids=["stateless", "store"])
def test_real_provider_approval_round_trip(sim: Any, approved: bool, stored: bool) -> None:
    store = InMemoryStore() if stored else None
    post = poster(sim_app(sim, store=store))
    question = user("t| pay 3")
    _, _, chunks = post({"id": "chat-pay", "messages": [question], "trigger": "submit-message"})
    asked = rebuild(chunks)
    kinds = [p["type"] for p in asked["parts"]]
    assert kinds == ["step-start", "text", "tool-whoami", "tool-transfer"]
    assert asked["parts"][3]["state"] == "approval-requested"
    answered = answer_approvals(asked, approved, None if approved else "too much")
    _, _, chunks2 = post({"id": "chat-pay", "messages": [question, answered], "trigger": "submit-message",
                          "messageId": answered["id"]})
    done = rebuild(chunks2, answered)
    transfer = done["parts"][3]
    if approved:
        assert "tool-output-available" in types(chunks2)
        assert transfer["state"] == "output-available" and transfer["output"].startswith("sent 3 by pid")
    else:
        assert "tool-output-denied" in types(chunks2)
        assert transfer["state"] == "output-denied"
    assert done["parts"][-1]["text"].startswith("noted: pid")
    # the provider received a paired history: user, assistant (text + 2 calls), 2 tool results
    assert len(sim.requests) == 2 and paired(sim.requests[1])
    assert [m["role"] for m in sim.requests[1]] == ["user", "assistant", "tool", "tool"]
    transfer_result = sim.requests[1][-1]["content"]
    assert transfer_result.startswith("sent 3") if approved else transfer_result.startswith("Denied")
    if store is not None:
        # the next turn, whole history sent again: each message stored once
        follow = user("t| hello", "u2")
        _, _, chunks3 = post({"id": "chat-pay", "messages": [question, done, follow], "trigger": "submit-message"})
        assert rebuild(chunks3)["parts"][-1]["text"] == "echo: hello"
        kept = store.load("chat-pay")
        # the tool results were saved in two turns (before and after the approval): two tool messages
        assert [m.role for m in kept] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
        assert len({m.id for m in kept}) == len(kept)
        assert [m["role"] for m in sim.requests[2]] == ["user", "assistant", "tool", "tool", "assistant", "user"]


def test_api_chat_goes_through_auth_limits_and_owners(sim: Any) -> None:
    auth = hookstream.server.TokenAuthenticator.parse("tok-alice alice\ntok-bob bob\n")
    post = poster(sim_app(sim, store=InMemoryStore(), authenticate=auth))
    doc = {"id": "chat-a", "messages": [user("t| hi")], "trigger": "submit-message"}
    status, headers, _ = post(doc)
    assert status.startswith("401") and headers["WWW-Authenticate"].startswith("Bearer")
    status, _, chunks = post(doc, headers={"HTTP_AUTHORIZATION": "Bearer tok-alice"})
    assert status == "200 OK" and rebuild(chunks)["parts"][-1]["text"] == "echo: hi"
    status, _, _ = post(doc, headers={"HTTP_AUTHORIZATION": "Bearer tok-bob"})
    assert status.startswith("404")  # alice's chat
    status, _, _ = post({"id": "chat-a", "messages": [user(str(i), f"u{i}") for i in range(1001)]},
                        headers={"HTTP_AUTHORIZATION": "Bearer tok-alice"})
    assert status.startswith("413")


def test_ui_message_stream_is_exported() -> None:
    assert hookstream.server.to_ui_message_stream is not None
    assert "to_ui_message_stream" in hookstream.server.__all__
    assert isinstance(Message("tool", [ToolResultPart("c", "f", 1)]).tool_results[0], ToolResultPart)
