"""Hand-written streams (not recordings) for the cases the corpus lacks: in-stream errors, a missing
``[DONE]``, tool calls without id or name, ``response.incomplete``, several summary parts."""

from __future__ import annotations

import json
from typing import Any

from hookstream import StepResult
from hookstream.testing import check_events
from hookstream.testing.recorded import replay_body


def replay(provider: str, body: bytes, **kw: Any) -> tuple[list[Any], StepResult]:
    return replay_body(provider, body, **kw)


def chat(*chunks: Any, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (c if isinstance(c, bytes) else json.dumps(c).encode()) + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def responses(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def delta(d: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}], "usage": None, **extra}


def test_in_stream_error_chunk_keeps_text() -> None:
    body = chat(delta({"content": "partial"}),
                {"error": {"message": "The server had an error", "type": "server_error", "code": None}})
    events, step = replay("openai", body)
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "server_error"
    assert step.text == "partial" and step.error == ("server_error", "The server had an error")


def test_missing_done_is_connection_closed_with_text_kept() -> None:
    events, step = replay("openai", chat(delta({"content": "cut"}), done=False))
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "connection_closed"
    assert step.text == "cut"


def test_tool_call_without_id_gets_a_stable_id_and_early_args_are_kept() -> None:
    body = chat(
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ":1}"}}]}),
        delta({}, "tool_calls"),
    )
    ids = set()
    for _ in range(2):
        events, step = replay("openai", body)
        check_events(events, form="call")
        (call,) = step.tool_calls
        assert call.name == "f" and call.arguments == {"a": 1}
        ids.add(call.id)
    assert len(ids) == 1 and ids.pop().startswith("call_")


def test_tool_call_that_never_gets_a_name_is_malformed() -> None:
    body = chat(delta({"content": "hi"}), delta({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
                delta({}, "tool_calls"))
    events, step = replay("openai", body)
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "malformed_chunk"
    assert step.text == "hi"


def test_non_json_chunk_is_malformed() -> None:
    events, step = replay("openai", chat(delta({"content": "a"}), b"{not json"))
    check_events(events, form="call")
    assert events[-1].code == "malformed_chunk" and step.text == "a"


def test_mistral_style_calls_without_index_and_object_arguments() -> None:
    body = chat(
        delta({"tool_calls": [{"id": "A", "function": {"name": "f", "arguments": {"x": 1}}},
                              {"id": "B", "function": {"name": "g", "arguments": '{"y": 2}'}}]}, "tool_calls",
              usage={"prompt_tokens": 5, "completion_tokens": 6}),
    )
    events, step = replay("openai", body)
    check_events(events, form="call")
    assert [(c.id, c.name, c.arguments) for c in step.tool_calls] == [("A", "f", {"x": 1}), ("B", "g", {"y": 2})]
    assert step.usage is not None and (step.usage.input_tokens, step.usage.output_tokens) == (5, 6)


def test_unknown_and_compatible_finish_reasons() -> None:
    for raw, norm in [("eos", "stop"), ("max_tokens", "length"), ("insufficient_system_resource", "error"),
                      ("function_call", "tool_calls"), ("content_filter", "content_filter")]:
        _, step = replay("openai", chat(delta({"content": "x"}, raw)))
        assert (step.finish_reason, step.raw_finish_reason) == (norm, raw)


def test_responses_incomplete_is_length() -> None:
    body = responses(
        {"type": "response.output_text.delta", "delta": "Hel"},
        {"type": "response.incomplete", "response": {"status": "incomplete",
                                                     "incomplete_details": {"reason": "max_output_tokens"},
                                                     "usage": {"input_tokens": 1, "output_tokens": 2}}},
    )
    events, step = replay("openai-responses", body)
    check_events(events, form="call")
    assert (step.text, step.finish_reason, step.raw_finish_reason) == ("Hel", "length", "incomplete")


def test_responses_summary_parts_are_joined_and_done_arguments_win() -> None:
    rs = {"id": "rs_9", "type": "reasoning", "encrypted_content": "enc"}
    fc = {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "f", "arguments": ""}
    body = responses(
        {"type": "response.output_item.added", "item": rs},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_9", "summary_index": 0, "delta": "One."},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_9", "summary_index": 1, "delta": "Two."},
        {"type": "response.output_item.done", "item": rs},
        {"type": "response.output_item.added", "item": fc},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": '{"q": "a'},
        {"type": "response.function_call_arguments.done", "item_id": "fc_9", "arguments": '{"q": "abc"}'},
        {"type": "response.output_item.done", "item": {**fc, "arguments": '{"q": "abc"}'}},
        {"type": "response.completed", "response": {"id": "resp_9", "status": "completed", "usage": None}},
    )
    events, step = replay("openai-responses", body, fragment=(1, 13))
    check_events(events, form="call")
    assert step.reasoning == "One.\n\nTwo."
    assert step.message.parts[0].provider_metadata == {"openai-responses": {"item_id": "rs_9",
                                                                           "encrypted_content": "enc"}}
    (call,) = step.tool_calls
    assert (call.id, call.arguments) == ("call_9", {"q": "abc"})
    assert step.finish_reason == "tool_calls"
    assert events[-1].metadata == {"openai-responses": {"response_id": "resp_9"}}


def test_responses_done_arguments_shorter_than_the_deltas_win_as_input() -> None:
    fc = {"id": "fc_8", "type": "function_call", "call_id": "call_8", "name": "f", "arguments": ""}
    body = responses(
        {"type": "response.output_item.added", "item": fc},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_8", "delta": '{"q": "abcdef"}'},
        {"type": "response.function_call_arguments.done", "item_id": "fc_8", "arguments": '{"q": "x"}'},
        {"type": "response.completed", "response": {"id": "resp_8", "status": "completed", "usage": None}},
    )
    events, step = replay("openai-responses", body)
    check_events(events, form="call")
    (end,) = [e for e in events if e.type == "TOOL_CALL_END"]
    assert end.input == {"q": "x"}
    assert step.tool_calls[0].arguments == {"q": "x"}


def test_calls_without_argument_text_send_empty_object_arguments() -> None:
    # A function without parameters: some servers send no argument text at all. AG-UI clients read the
    # arguments from TOOL_CALL_ARGS only, so the call still carries "{}" there (issue 23).
    chat_body = chat(
        delta({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "now"}}]}),
        delta({"tool_calls": [{"index": 1, "id": "c2", "type": "function",
                               "function": {"name": "now", "arguments": ""}}]}),
        delta({}, "tool_calls"),
    )
    fc = {"id": "fc_7", "type": "function_call", "call_id": "call_7", "name": "now", "arguments": ""}
    responses_body = responses(
        {"type": "response.output_item.added", "item": fc},
        {"type": "response.function_call_arguments.done", "item_id": "fc_7", "arguments": ""},
        {"type": "response.output_item.done", "item": fc},
        {"type": "response.completed", "response": {"id": "resp_7", "status": "completed", "usage": None}},
    )
    for provider, body, ids in (("openai", chat_body, ["c1", "c2"]), ("openai-responses", responses_body, ["call_7"])):
        events, step = replay(provider, body)
        check_events(events, form="call")
        assert [(e.tool_call_id, e.delta) for e in events if e.type == "TOOL_CALL_ARGS"] == [(i, "{}") for i in ids]
        assert [e.input for e in events if e.type == "TOOL_CALL_END"] == [{}] * len(ids)
        assert [c.arguments for c in step.complete_tool_calls] == [{}] * len(ids)


def test_responses_error_without_failed_event_keeps_text() -> None:
    body = responses({"type": "response.output_text.delta", "delta": "so far"},
                     {"type": "error", "code": "server_error", "message": "boom", "param": None})
    events, step = replay("openai-responses", body)
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and step.error == ("server_error", "boom") and step.text == "so far"


def test_responses_refusal_is_custom_event() -> None:
    body = responses({"type": "response.refusal.delta", "delta": "No."},
                     {"type": "response.completed", "response": {"status": "completed"}})
    events, step = replay("openai-responses", body)
    check_events(events, form="call")
    assert [e.value for e in events if e.type == "CUSTOM"] == [{"text": "No."}] and step.text == ""


def test_openrouter_error_beside_a_choice_is_run_error_with_text_kept() -> None:
    # OpenRouter: the error object rides on a chunk that still has a choice (finish_reason "error").
    body = chat(delta({"content": "Hello wor"}),
                {"error": {"code": 502, "message": "Provider returned error"},
                 "choices": [{"index": 0, "delta": {"content": "ld"}, "finish_reason": "error"}]},
                delta({"content": " never"}, "stop"))
    events, step = replay("openai", body)
    check_events(events, form="call")
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "502" and last.message == "Provider returned error"
    assert last.raw_finish_reason == "error"
    assert step.text == "Hello world"


def test_router_error_with_choices_and_usage_keeps_finish_and_usage() -> None:
    # The shape of the corpus recording openrouter-error-chunk-after-length: finish "length" came
    # earlier, the error chunk carries usage and a null finish_reason.
    body = chat(delta({"content": "", "reasoning": "thinking"}),
                delta({"content": ""}, "length"),
                {"error": {"code": 400, "message": "Token limit reached"},
                 "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}],
                 "usage": {"prompt_tokens": 43, "completion_tokens": 10, "total_tokens": 53}})
    events, step = replay("openai", body)
    check_events(events, form="call")
    last = events[-1]
    assert last.type == "RUN_ERROR" and last.code == "400" and "Token limit reached" in last.message
    assert last.raw_finish_reason == "length"
    assert last.usage.input_tokens == 43 and last.usage.output_tokens == 10
    assert step.reasoning == "thinking"


def test_error_string_beside_choices_and_null_error_is_ignored() -> None:
    body = chat(delta({"content": "a"}, error=None), {"error": "upstream timed out", "choices": []})
    events, step = replay("openai", body)
    assert events[-1].type == "RUN_ERROR" and events[-1].message == "upstream timed out"
    assert step.text == "a"


def test_in_stream_rate_limit_code_wins_over_openai_budget_type() -> None:
    body = chat({"error": {"message": "Rate limit reached", "type": "tokens", "code": "rate_limit_exceeded"}})
    events, _ = replay("openai", body)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "rate_limit_exceeded"
