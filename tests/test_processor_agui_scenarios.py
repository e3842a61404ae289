"""The processor against AG-UI 1.0 streams from other producers: the scenarios of TanStack AI's
``stream-processor.test.ts`` (interleaved messages, concurrent runs, reconnect dedupe, MESSAGES_SNAPSHOT,
user messages by TEXT_MESSAGE_START), Vercel AI's ``process-ui-message-stream.test.ts`` (continuing the
last assistant message, several steps in one message) and the AG-UI client's chunk transform and state
reducers (``transformChunks``, ``defaultApplyEvents``), written against hookstream's API.
"""

from __future__ import annotations

from typing import Any

from hookstream import StreamProcessor, TextUIPart, ToolCallUIPart, UIMessage
from hookstream import events as E
from processor_kit import Recorder, shape


def start(mid: str, role: str = "assistant") -> E.TextMessageStart:
    return E.TextMessageStart(mid, role)


def content(mid: str, delta: str) -> E.TextMessageContent:
    return E.TextMessageContent(mid, delta)


def ids(p: StreamProcessor) -> list[tuple[str, str]]:
    return [(m.id, m.role) for m in p.messages]


def texts(p: StreamProcessor) -> list[list[str]]:
    return [[part.content for part in m.parts if isinstance(part, TextUIPart)] for m in p.messages]


def feed(p: StreamProcessor, events: list[E.BaseEvent]) -> None:
    """Apply events without ending the loop (``process`` finalizes)."""
    for event in events:
        p.process_chunk(event)


def assert_unique_ids(p: StreamProcessor) -> None:
    assert len({m.id for m in p.messages}) == len(p.messages)


# -- user messages by start event ----------------------------------------------------------------------------


def test_text_message_start_with_role_user_creates_a_user_message() -> None:
    p = StreamProcessor()
    p.process_chunk(start("user-1", "user"))
    p.process_chunk(E.TextMessageEnd("user-1"))
    assert ids(p) == [("user-1", "user")]  # created by the start, as AG-UI clients do
    p.process([content("user-1", "Hi"), start("a1"), content("a1", "Hello"), E.TextMessageEnd("a1")])
    assert ids(p) == [("user-1", "user"), ("a1", "assistant")] and texts(p) == [["Hi"], ["Hello"]]
    assert p.result.content == "Hello"  # the loop's result is the assistant's


def test_system_and_developer_roles_are_system_messages() -> None:
    p = StreamProcessor()
    p.process([start("s", "system"), content("s", "be brief"), start("d", "developer"), content("d", "x")])
    assert ids(p) == [("s", "system"), ("d", "system")]


# -- interleaved messages -------------------------------------------------------------------------------------


def test_two_interleaved_assistant_messages_stay_two() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process([start("msg-a"), start("msg-b"), content("msg-a", "Hello from A"), content("msg-b", "Hello from B"),
               content("msg-a", "!"), E.TextMessageEnd("msg-a"), E.TextMessageEnd("msg-b")])
    assert ids(p) == [("msg-a", "assistant"), ("msg-b", "assistant")]
    assert texts(p) == [["Hello from A!"], ["Hello from B"]]
    assert rec.text_updates == [("msg-a", "Hello from A"), ("msg-b", "Hello from B"), ("msg-a", "Hello from A!")]
    assert rec.stream_ends == [p.messages[0]]  # on finalize only, never on TEXT_MESSAGE_END


def test_held_back_text_goes_to_its_own_message() -> None:
    class Never:
        def should_emit(self, chunk: str, accumulated: str) -> bool:
            return False

        def reset(self) -> None:
            pass

    p = StreamProcessor(strategy=Never())
    p.process([start("a"), start("b"), content("a", "A1"), content("b", "B1"), content("a", "A2"),
               E.TextMessageEnd("a"), E.TextMessageEnd("b")])
    assert texts(p) == [["A1A2"], ["B1"]]


def test_sequential_blocks_of_one_run_share_the_assistant_message() -> None:
    """The seeds' rule, kept where AG-UI does not say otherwise: hookstream's engine names each text
    block with a fresh id, and a block that starts when no other is open continues the run's message."""
    p = StreamProcessor()
    p.process([E.RunStarted("t", "r"), start("m1"), content("m1", "a"), E.TextMessageEnd("m1"),
               E.ToolCallStart("c1", "f"), E.ToolCallEnd("c1"), start("m2"), content("m2", "b"),
               E.TextMessageEnd("m2"), E.RunFinished("t", "r")])
    assert ids(p) == [("m1", "assistant")] and texts(p) == [["a", "b"]]


# -- concurrent runs ------------------------------------------------------------------------------------------


def test_run_finished_of_one_run_leaves_another_run_streaming() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process_chunk(E.RunStarted("t", "run-a"))
    p.process_chunk(start("msg-a"))
    p.process_chunk(content("msg-a", "A text"))
    p.process_chunk(E.RunStarted("t", "run-b"))
    p.process_chunk(start("msg-b"))
    p.process_chunk(content("msg-b", "B text"))
    p.process_chunk(E.RunFinished("t", "run-b", finish_reason="stop"))
    p.process_chunk(content("msg-a", " more A"))
    assert ids(p) == [("msg-a", "assistant"), ("msg-b", "assistant")]
    assert texts(p) == [["A text more A"], ["B text"]]  # A's text part was not cut by B's end
    p.process_chunk(E.RunFinished("t", "run-a", finish_reason="stop"))
    assert rec.stream_ends == []
    p.finalize()
    assert len(rec.stream_ends) == 1


def test_tool_calls_are_closed_per_run() -> None:
    p = StreamProcessor()
    feed(p, [E.RunStarted("t", "run-a"), start("msg-a"), E.ToolCallStart("tc-a", "toolA"),
               E.ToolCallArgs("tc-a", '{"q":'),
               E.RunStarted("t", "run-b"), start("msg-b"), content("msg-b", "B done"),
               E.ToolCallStart("tc-b", "toolB"), E.ToolCallArgs("tc-b", "{}")])
    p.process_chunk(E.RunFinished("t", "run-b", finish_reason="tool_calls"))
    states = {c.id: c.state for m in p.messages for c in m.tool_calls}
    assert states == {"tc-a": "input-streaming", "tc-b": "input-complete"}
    p.process_chunk(E.ToolCallArgs("tc-a", '"val"}'))  # A's later arguments are not dropped
    assert p.stats.dropped_args == 0
    p.process_chunk(E.ToolCallEnd("tc-a"))
    p.process_chunk(E.RunFinished("t", "run-a", finish_reason="tool_calls"))
    call_a = next(c for m in p.messages for c in m.tool_calls if c.id == "tc-a")
    assert (call_a.state, call_a.input) == ("input-complete", {"q": "val"})
    assert [c.id for c in p.messages[1].tool_calls] == ["tc-b"]  # each run's calls in its own message


def test_run_error_of_one_run_does_not_touch_another() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process([E.RunStarted("t", "run-a"), start("msg-a"), content("msg-a", "A text"),
               E.RunStarted("t", "run-b"), start("msg-b"), E.RunError("Something failed"),
               content("msg-a", " more A")])
    assert [e.message for e in rec.errors] == ["Something failed"]
    assert texts(p)[0] == ["A text more A"]


# -- reconnect dedupe ---------------------------------------------------------------------------------------


def history() -> list[UIMessage]:
    return [UIMessage("user-1", "user", [TextUIPart("Hello")]),
            UIMessage("asst-1", "assistant", [TextUIPart("Hello wor")])]


def test_content_for_a_known_message_continues_it() -> None:
    p = StreamProcessor(messages=history())
    p.process([content("asst-1", "ld!")])
    assert ids(p) == [("user-1", "user"), ("asst-1", "assistant")]
    assert texts(p) == [["Hello"], ["Hello world!"]]


def test_replayed_start_for_a_known_message_never_duplicates_it() -> None:
    p = StreamProcessor(messages=history())
    p.process([E.RunStarted("t", "r"), start("asst-1"), content("asst-1", "ld"), E.TextMessageEnd("asst-1"),
               E.ToolCallStart("c1", "f", parent_message_id="asst-1"), E.ToolCallEnd("c1"),
               E.RunFinished("t", "r")])
    assert ids(p) == [("user-1", "user"), ("asst-1", "assistant")]
    assert [part.type for part in p.messages[1].parts] == ["text", "tool-call"]
    assert p.messages[1].text == "Hello world"
    # The next loop's content for the same id still lands there; no two messages ever share an id.
    p.process([start("asst-1"), content("asst-1", "!")])
    assert_unique_ids(p)
    assert len(p.messages) == 2 and p.messages[1].text == "Hello world!"


def test_reconnect_when_the_message_ends_with_a_tool_call() -> None:
    tool = ToolCallUIPart("tc-1", "search", "{}", "input-complete", {})
    p = StreamProcessor(messages=[UIMessage("asst-1", "assistant", [tool])])
    p.process([content("asst-1", "Result: found it"), E.RunFinished("t", "r")])
    assert len(p.messages) == 1 and shape(p.messages) == [[("tool-call", "tc-1", {}, "input-complete"),
                                                           ("text", "Result: found it")]]


# -- MESSAGES_SNAPSHOT: replace and hydrate ------------------------------------------------------------------


def snapshot(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


def test_snapshot_hydrates_and_replaces_the_list() -> None:
    rec = Recorder()
    p = rec.processor(messages=[UIMessage("local-only", "user", [TextUIPart("draft")])])
    p.process_chunk(snapshot(
        {"id": "u1", "role": "user", "content": "Tell me a story"},
        {"id": "sys", "role": "developer", "content": "be kind"},
        {"id": "a1", "role": "assistant", "content": "Once upon a "},
    ))
    assert rec.messages_changes == 1
    assert ids(p) == [("u1", "user"), ("sys", "system"), ("a1", "assistant")]  # not appended: replaced
    p.process([content("a1", "time..."), E.RunFinished("t", "r")])
    assert texts(p)[2] == ["Once upon a time..."] and len(p.messages) == 3


def test_snapshot_of_ui_messages_with_parts_hydrates_them() -> None:
    # A TanStack AI server's snapshot carries UIMessages (parts, no content); the AI SDK's parts use "text".
    p = StreamProcessor()
    p.process_chunk({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {"id": "a1", "role": "assistant", "parts": [
            {"type": "text", "content": "Checking."},
            {"type": "tool-call", "id": "c1", "name": "weather", "arguments": '{"city": "Paris"}',
             "state": "input-complete"}]},
        {"id": "a2", "role": "assistant", "parts": [
            {"type": "text", "text": "Also "},
            {"type": "tool-lookup", "toolCallId": "c2", "state": "input-available", "input": {"q": 1}}]},
    ]})
    assert p.stats.unusable_events == 0
    assert shape(p.messages) == [
        [("text", "Weather in Paris?")],
        [("text", "Checking."), ("tool-call", "c1", {"city": "Paris"}, "input-complete")],
        [("text", "Also "), ("tool-call", "c2", {"q": 1}, "input-complete")],
    ]


def test_an_empty_run_error_message_is_replaced() -> None:
    errors: list[Any] = []
    p = StreamProcessor(on_error=errors.append)
    p.process([E.RunStarted("t", "r"), E.RunError("", code="rate_limited")])
    result = p.finalize()
    assert result.error == ("rate_limited", "the run failed (rate_limited)")
    assert errors[0].message == "the run failed (rate_limited)"


def test_snapshot_keeps_messages_it_names_and_merges_their_parts() -> None:
    p = StreamProcessor()
    p.process([E.RunStarted("t", "r"), start("u1", "user"), content("u1", "hi"), E.TextMessageEnd("u1"),
               E.ReasoningMessageContent("a1", "thinking"), start("a1"), content("a1", "Hello"),
               E.TextMessageEnd("a1"), E.ToolCallStart("c1", "f", parent_message_id="a1"),
               E.ToolCallArgs("c1", '{"x": 1}'), E.ToolCallEnd("c1"), E.RunFinished("t", "r")])
    kept = p.messages[1]
    p.process_chunk(snapshot(
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "Hello",
         "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": '{"ok": true}'},
    ))
    assert p.messages[1] is kept  # the same object: what the snapshot cannot carry (thinking) stays
    assert shape(p.messages) == [[("text", "hi")], [
        ("thinking", "thinking"), ("text", "Hello"), ("tool-call", "c1", {"x": 1}, "output-available"),
        ("tool-result", "c1", '{"ok": true}', "complete"),
    ]]
    # The same snapshot again (a reconnect) changes nothing and duplicates nothing.
    before = [m.to_dict() for m in p.messages]
    p.process_chunk(snapshot(
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "Hello",
         "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": '{"ok": true}'},
    ))
    assert [m.to_dict() for m in p.messages] == before


def test_snapshot_keeps_an_in_flight_tool_call_it_omits() -> None:
    p = StreamProcessor()
    p.process([start("a1"), content("a1", "Let me look."), E.ToolCallStart("c1", "client_tool"),
               E.ToolCallArgs("c1", "{}"), E.ToolCallEnd("c1")])
    p.process_chunk(snapshot({"id": "u", "role": "user", "content": "q"},
                             {"id": "a1", "role": "assistant", "content": "Let me look."}))
    assert [c.id for c in p.messages[0].tool_calls] == ["c1"]
    p.add_tool_result("c1", {"answer": 42})  # still answerable
    assert p.messages[0].tool_calls[0].state == "output-available"


def test_snapshot_roles_tool_reasoning_activity_and_files() -> None:
    seen: list[Any] = []
    p = StreamProcessor(on_activity_change=lambda a: seen.append((a.id, dict(a.content))))
    p.process_chunk(snapshot(
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                {"type": "image", "source": {"type": "data", "value": "aGk=",
                                                                             "mimeType": "image/png"}}]},
        {"id": "r", "role": "reasoning", "content": "look closely"},
        {"id": "a", "role": "assistant", "toolCalls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"id": "t", "role": "tool", "toolCallId": "c", "content": "bad", "error": "failed"},
        {"id": "t2", "role": "tool", "toolCallId": "nobody", "content": "?"},
        {"id": "act", "role": "activity", "activityType": "PLAN", "content": {"step": 1}},
    ))
    assert ids(p) == [("u", "user"), ("a", "assistant")]
    user = p.messages[0].to_dict()["parts"]
    assert user == [{"type": "text", "content": "what is this?"},
                    {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,aGk="}]
    assert shape(p.messages[1:]) == [[("thinking", "look closely"), ("tool-call", "c", {}, "output-error"),
                                      ("tool-result", "c", "bad", "error")]]
    assert p.stats.orphan_results == 1
    assert p.activities["act"].activity_type == "PLAN" and seen == [("act", {"step": 1})]


# -- chunk events ---------------------------------------------------------------------------------------------


def test_text_chunks_open_continue_and_close_messages() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process([E.RunStarted("t", "r"), E.TextMessageChunk("m1", "assistant", "Hel"), E.TextMessageChunk(delta="lo"),
               E.TextMessageChunk("m2", "user", "Hi"),  # a new id closes m1 and opens m2
               E.TextMessageChunk(delta=" there"),
               E.TextMessageChunk("m1", delta=" again"),  # a known id continues its message
               E.RunFinished("t", "r")])
    assert ids(p) == [("m1", "assistant"), ("m2", "user")]
    assert [m.text for m in p.messages] == ["Hello again", "Hi there"]
    assert rec.errors == []


def test_tool_and_reasoning_chunks_behave_as_their_triplets() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process_chunk(E.RunStarted("t", "r"))
    p.process_chunk(E.ReasoningMessageChunk("rs", "hmm"))
    p.process_chunk(E.ToolCallChunk("c1", "weather", None, '{"city": '))
    p.process_chunk(E.ToolCallChunk(delta='"Oslo"}'))
    assert p.messages[0].tool_calls[0].state == "input-streaming"
    p.process_chunk(E.ToolCallChunk("c2", "time", None, "{}"))  # a new call closes the first
    assert p.messages[0].tool_calls[0].state == "input-complete"
    p.process_chunk(E.StepFinished("s"))  # any lifecycle event closes the open chunk block
    assert [c.state for c in p.messages[0].tool_calls] == ["input-complete", "input-complete"]
    r = p.finalize()
    assert shape(p.messages) == [[("thinking", "hmm"), ("tool-call", "c1", {"city": "Oslo"}, "input-complete"),
                                  ("tool-call", "c2", {}, "input-complete")]]
    assert r.reasoning == "hmm" and [c.name for c in r.tool_calls] == ["weather", "time"]


def test_chunk_strategy_holds_text_across_chunks() -> None:
    rec = Recorder()
    p = rec.processor(strategy="word-boundary")
    p.process([E.TextMessageChunk("m", delta="Hel"), E.TextMessageChunk(delta="lo "), E.TextMessageChunk(delta="wo"),
               E.TextMessageChunk(delta="rld")])
    assert [t for _, t in rec.text_updates] == ["Hello ", "Hello world"]


def test_a_chunk_that_opens_nothing_is_counted_and_reported() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process([E.RunStarted("t", "r"), E.TextMessageChunk(delta="orphan"), E.ToolCallChunk(delta="{}"),
               E.TextMessageChunk("m", delta="ok"), E.RunFinished("t", "r")])
    assert p.stats.unusable_events == 2 and [e.code for e in rec.errors] == ["unusable_event", "unusable_event"]
    assert texts(p) == [["ok"]] and p.result.error is None


# -- unknown events, state, activities -----------------------------------------------------------------------


def test_unknown_events_are_counted_and_reported_not_raised() -> None:
    class Future(E.BaseEvent):  # an event class from a newer protocol the processor has no handler for
        type = "FUTURE_EVENT"

    rec = Recorder()
    p = rec.processor()
    p.process_chunk({"type": "NOT_AN_AGUI_EVENT", "x": 1})
    p.process_chunk({"type": "TEXT_MESSAGE_CONTENT"})  # a known type without its required fields
    p.process_chunk(Future())
    p.process_chunk({"type": "ACTIVITY_DELTA", "messageId": "nope", "activityType": "X", "patch": []})
    p.process([start("m"), content("m", "still streaming")])
    assert p.stats.unusable_events == 4
    assert [e.code for e in rec.errors] == ["unknown_event", "unknown_event", "unknown_event", "unusable_event"]
    assert texts(p) == [["still streaming"]]
    # Without an on_error handler the stream goes on too (as the AI SDK's and TanStack AI's processors do):
    # counted and logged, never raised mid-stream.
    quiet = StreamProcessor()
    quiet.process_chunk({"type": "NOT_AN_AGUI_EVENT"})
    quiet.process([start("m"), content("m", "goes on")])
    assert quiet.stats.unusable_events == 1 and texts(quiet) == [["goes on"]]


def test_state_snapshot_and_delta_with_every_json_patch_operation() -> None:
    states: list[Any] = []
    p = StreamProcessor(on_state_change=lambda s: states.append(repr(s)))
    p.process_chunk(E.StateSnapshot({"a": {"b": 1}, "list": [1, 2]}))
    p.process_chunk(E.StateDelta([
        {"op": "test", "path": "/a/b", "value": 1},
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "move", "from": "/list/0", "path": "/first"},
        {"op": "replace", "path": "/a/b", "value": 2},
        {"op": "add", "path": "/list/-", "value": 3},
        {"op": "remove", "path": "/c/b"},
    ]))
    assert p.state == {"a": {"b": 2}, "list": [2, 3], "c": {}, "first": 1}
    p.process_chunk(E.StateDelta([{"op": "test", "path": "/a/b", "value": 99}]))
    assert p.stats.state_patch_errors == 1 and len(states) == 2
    p.process_chunk(E.StateSnapshot([1]))  # any JSON value replaces the state
    assert p.state == [1]


def test_activity_snapshot_and_delta() -> None:
    p = StreamProcessor()
    p.process_chunk(E.ActivitySnapshot("act", "PLAN", {"steps": ["a"]}))
    p.process_chunk(E.ActivityDelta("act", "PLAN", [{"op": "add", "path": "/steps/-", "value": "b"}]))
    p.process_chunk(E.ActivitySnapshot("act", "PLAN", {"steps": []}, replace=False))  # leaves it as it is
    assert p.activities["act"].content == {"steps": ["a", "b"]}
    p.process_chunk(E.ActivitySnapshot("act", "PLAN", {"steps": ["z"]}))
    assert p.activities["act"].content == {"steps": ["z"]} and p.messages == []  # never a UI message


def test_subagent_raw_and_reasoning_end_change_nothing() -> None:
    rec = Recorder()
    p = rec.processor()
    p.process([E.SubagentStarted("sub", "research"), E.Raw({"x": 1}), E.ReasoningEnd("r"),
               E.SubagentFinished("sub"), E.SubagentError("sub", "oops")])
    assert p.messages == [] and rec.errors == [] and p.stats.unusable_events == 0


# -- Vercel AI: continuing the last assistant message, several steps in one message ----------------------


def test_continues_the_last_assistant_message_across_steps() -> None:
    last = UIMessage("msg-123", "assistant", [TextUIPart("Earlier.")])
    p = StreamProcessor(messages=[UIMessage("u", "user", [TextUIPart("go on")]), last])
    p.process([E.RunStarted("t", "r"), E.StepStarted("1"),
               E.ToolCallStart("c1", "lookup", parent_message_id="msg-123"), E.ToolCallArgs("c1", '{"q": 1}'),
               E.ToolCallEnd("c1"), E.StepFinished("1"), E.ToolCallResult("res", "c1", "found"),
               E.StepStarted("2"), start("msg-123"), content("msg-123", "Done."), E.TextMessageEnd("msg-123"),
               E.StepFinished("2"), E.RunFinished("t", "r", finish_reason="stop")])
    assert ids(p) == [("u", "user"), ("msg-123", "assistant")]
    assert shape(p.messages)[1] == [("text", "Earlier."), ("tool-call", "c1", {"q": 1}, "output-available"),
                                    ("tool-result", "c1", "found", "complete"), ("text", "Done.")]
