"""No invalid AG-UI ever leaves hookstream (issue 23): every event, in its JSON wire form
(:func:`hookstream.events.to_json`), validates against the official ``ag-ui-protocol`` models.

What is validated:

* every recorded body of both shared corpora (``../shared/provider-streams`` and
  ``../shared/provider-streams-external``, prefixes mapped to providers by the corpus's own table,
  :func:`~hookstream.testing.conformance.corpus_providers`) and of the plugins' own ``recordings``
  folders, through the real adapter on loopback (:func:`~hookstream.testing.replay_body`), as the
  engine yields a call's events;
* full engine runs (``chat()`` with tools, approvals, interrupt and resume, client tools, structured
  output, errors) against loopback servers, including the offline demo;
* the AG-UI server (``make_app``): the demo conversation with its approval interrupt and resume, a
  model-backed app with a frontend tool, and a run whose provider is unreachable.

How: ``TypeAdapter(ag_ui.core.Event).validate_json(wire, strict=True)``, the discriminated union of
every AG-UI 1.0 event. The models are open (``extra="allow"`` on their base model), so hookstream's
documented extras (docs/architecture.md, "Extras on AG-UI events": ``finishReason``,
``rawFinishReason``, ``responseId``, ``model``, ``input`` on ``TOOL_CALL_END``...) validate as they are;
nothing is stripped before validation. Keys that collide with a declared field (``usage``,
``outcome``, ``result``, ``metadata``) must have the declared shape. On top of the models, two rules the
1.0 models leave out but AG-UI clients depend on:

* no empty ``delta`` on ``TEXT_MESSAGE_CONTENT``, ``REASONING_MESSAGE_CONTENT`` and ``TOOL_CALL_ARGS``:
  the installed 1.0 models accept one ("May be the empty string"), but ``@ag-ui/core``'s schemas and
  the 0.x Python SDK reject an empty text delta, so hookstream never sends one;
* a tool call that ends with arguments (``TOOL_CALL_END`` ``input``) carried them in its
  ``TOOL_CALL_ARGS`` too (at least one, their join parsing to that input): a plain AG-UI client reads
  the arguments from those deltas only.

Extras are also listed: a key outside the models and outside :data:`DOCUMENTED_EXTRAS` fails, so a new
extra is documented before it ships. A missing shared corpus fails under ``$CI`` and skips otherwise.
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, get_args
from wsgiref.util import setup_testing_defaults

import pytest
from serve_kit import messages_after

try:
    import ag_ui.core as ag_ui_core
    from pydantic import TypeAdapter, ValidationError
except ImportError:  # pragma: no cover - a test dependency (requirements/test.txt)
    if os.environ.get("CI"):
        raise
    pytest.skip("ag-ui-protocol (test dependency) not installed", allow_module_level=True)

from engine_kit import MODEL, run, text_body, tool_body
from hookstream import LoopSettings, Tool, chat, get_model, get_registry, tool
from hookstream.errors import UnknownPluginError
from hookstream.events import BaseEvent, ReasoningMessageContent, TextMessageContent, ToolCallArgs, to_json
from hookstream.plugin import CallContext, StreamBuilder
from hookstream.server import make_app
from hookstream.testing import (
    DEMO_PROMPT,
    LoopbackServer,
    Response,
    check_events,
    demo_factory,
    demo_server,
    demo_tools,
)
from hookstream.testing.conformance import BODY_SUFFIXES, corpus_providers, find_corpus, require_corpus
from hookstream.testing.recorded import replay_body

EVENT = TypeAdapter(ag_ui_core.Event)
ROOT = Path(__file__).resolve().parents[1]
SHARED = ("provider-streams", "provider-streams-external")

PLUGIN_PROVIDERS = {
    "ollama": "ollama", "bedrock": "bedrock", "azure-openai-chat": "azure",
    "azure-openai-responses": "azure-responses", "vertex-gemini": "vertex", "vertex-anthropic": "vertex-anthropic",
}
"""Plugin recordings' file prefix -> provider (the shared corpora map theirs with their own table)."""

DOCUMENTED_EXTRAS: dict[str, frozenset[str]] = {
    # docs/architecture.md "Extras on AG-UI events" (finish reasons, TOOL_CALL_END input; usage, outcome,
    # result and metadata are declared by the models), and the event classes' docstrings in
    # hookstream._events: a step's response details (issue 12), a tool result's error and files, the
    # older TanStack fields (STEP_FINISHED delta, TOOL_CALL_END result).
    "RUN_FINISHED": frozenset({"finishReason", "rawFinishReason", "responseId", "model"}),
    "RUN_ERROR": frozenset({"rawFinishReason"}),
    "STEP_FINISHED": frozenset({"finishReason", "responseId", "model", "usage", "delta"}),
    "TOOL_CALL_END": frozenset({"input", "result"}),
    "TOOL_CALL_RESULT": frozenset({"error", "files"}),
}
"""hookstream's keys beyond the AG-UI 1.0 models, by event type. The models accept any extra key;
this list keeps new ones deliberate (document them in docs/architecture.md, then add them here)."""

NON_EMPTY_DELTA = frozenset({"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"})

_COUNTS: Counter[str] = Counter()


def _declared_keys() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for model in get_args(get_args(ag_ui_core.Event)[0]):  # Annotated[Union[...], Field] -> the members
        keys = {name for name in model.model_fields} | {f.alias for f in model.model_fields.values() if f.alias}
        out[model.model_fields["type"].default.value] = frozenset(keys)
    return out


DECLARED = _declared_keys()


def agui_problems(events: Iterable[BaseEvent | dict[str, Any]], where: str = "events") -> list[str]:
    """What is wrong with ``events`` as AG-UI (empty: nothing). Each is validated in its wire form;
    dicts are wire forms already (what a server sent)."""
    problems: list[str] = []
    args: dict[str, str] = {}
    n = 0
    for n, ev in enumerate(events, start=1):
        text = ev if isinstance(ev, str) else json.dumps(ev) if isinstance(ev, dict) else to_json(ev)
        wire = json.loads(text)
        kind = wire.get("type")
        at = f"{where} #{n} {kind}"
        try:
            EVENT.validate_json(text, strict=True)
        except ValidationError as exc:
            problems.append(f"{at}: {exc.errors(include_url=False)} in {text[:300]}")
            continue
        extra = set(wire) - DECLARED[kind] - DOCUMENTED_EXTRAS.get(kind, frozenset())
        if extra:
            problems.append(f"{at}: undocumented extra keys {sorted(extra)}")
        if kind in NON_EMPTY_DELTA and wire.get("delta") == "":
            problems.append(f"{at}: empty delta")
        if kind == "TOOL_CALL_START":
            args[wire["toolCallId"]] = ""
        elif kind == "TOOL_CALL_ARGS" and wire["toolCallId"] in args:
            args[wire["toolCallId"]] += wire["delta"]
        elif kind == "TOOL_CALL_END" and wire.get("input") is not None:
            joined = args.get(wire["toolCallId"], "")
            try:
                same = json.loads(joined) == wire["input"] if joined else False
            except ValueError:
                same = False
            if not same:
                problems.append(f"{at}: input {wire['input']!r} but TOOL_CALL_ARGS carried {joined!r}")
        _COUNTS[kind] += 1
    _COUNTS["events"] += n
    return problems


def assert_valid(events: Iterable[BaseEvent | dict[str, Any]], where: str = "events") -> None:
    problems = agui_problems(events, where)
    assert not problems, "\n".join(problems)


# -- the validator itself ------------------------------------------------------------------------------

def test_the_validator_catches_what_clients_reject() -> None:
    from hookstream import events as E

    assert agui_problems([E.TextMessageStart("m"), E.TextMessageContent("m", "")]) == [
        "events #2 TEXT_MESSAGE_CONTENT: empty delta"]
    bad_args = agui_problems([E.ToolCallStart("c", "f"), E.ToolCallEnd("c", input={"a": 1})])
    assert bad_args == ["events #2 TOOL_CALL_END: input {'a': 1} but TOOL_CALL_ARGS carried ''"]
    assert agui_problems([{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 3}])  # not a string
    assert agui_problems([{"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": {"inputTokens": 1}}])
    assert agui_problems([{"type": "TEXT_MESSAGE_END", "messageId": "m", "surprise": 1}]) == [
        "events #1 TEXT_MESSAGE_END: undocumented extra keys ['surprise']"]
    # The documented extras are accepted as they are: the models are open.
    assert agui_problems([E.RunFinished("t", "r", finish_reason="stop", raw_finish_reason="end_turn",
                                        usage=E.Usage(1, 2, 3), response_id="x", model="m",
                                        metadata={"anthropic": {"message_id": "x"}})]) == []


def test_the_builder_names_its_open_text_message() -> None:
    # text_message_id lets an adapter's hot loop build the TEXT_MESSAGE_CONTENT text() would return.
    b = StreamBuilder(CallContext("t", "r"))
    assert b.text_message_id is None
    start, first = b.text("a")
    assert b.text_message_id == start.message_id == first.message_id
    assert b.text("b") == [TextMessageContent(b.text_message_id, "b")]
    b.reasoning("hm")  # another block closes the text message
    assert b.text_message_id is None
    _end_r, _end_rm, restart, _c = b.text("c")
    assert b.text_message_id == restart.message_id != start.message_id
    b.end_text()
    assert b.text_message_id is None


def test_the_builder_sends_no_empty_content_and_always_sends_arguments() -> None:
    b = StreamBuilder(CallContext("t", "r"))
    assert b.text("") == [] and b.reasoning("") == [] and b.text("", metadata={"k": 1}) == []
    assert not b.text_open and not b.reasoning_open  # nothing opened for nothing
    events = [*b.start(), *b.text("hi"), *b.text(""), *b.reasoning(""), *b.reasoning("hm"), *b.reasoning("")]
    events += b.tool_start("c1", "f")
    events += b.tool_end("c1", input={"q": "é"})  # arguments given whole: sent as TOOL_CALL_ARGS too
    events += b.tool_start("c2", "g")
    events += b.tool_args("c2", "")
    events += b.tool_args("c2", '{"a":1}')
    events += b.tool_end("c2", input={"a": 1})  # streamed: not sent twice
    events += b.tool_start("c3", "h")  # left open (max tokens mid-call): no arguments invented
    events += b.finish("length", "max_tokens", None)
    check_events(events, form="call")
    assert_valid(events, "builder")
    assert [(e.tool_call_id, e.delta) for e in events if isinstance(e, ToolCallArgs)] == [
        ("c1", '{"q":"é"}'), ("c2", '{"a":1}')]
    assert [e.delta for e in events if isinstance(e, TextMessageContent | ReasoningMessageContent)] == ["hi", "hm"]


# -- recorded bodies -----------------------------------------------------------------------------------

def _shared_params() -> list[Any]:
    params: list[Any] = []
    for name in SHARED:
        corpus = find_corpus(ROOT, name)
        files = sorted(p for p in corpus.iterdir() if p.name.endswith(BODY_SUFFIXES)) if corpus else []
        params += [pytest.param(name, p.name, id=f"{name}/{p.stem}") for p in files]
        if not files:
            params.append(pytest.param(name, None, id=f"{name}/absent"))
    return params


def _plugin_params() -> list[Any]:
    files = sorted(p for p in ROOT.glob("plugins/*/tests/recordings/*") if p.name.endswith(BODY_SUFFIXES))
    return [pytest.param(p, id=f"{p.parts[-4]}/{p.stem}") for p in files]


def _replay_valid(provider: str, path: Path) -> None:
    events, _ = replay_body(provider, path.read_bytes())
    check_events(events, form="call")
    assert_valid(events, path.name)


@pytest.mark.parametrize(("corpus_name", "file_name"), _shared_params())
def test_shared_corpus_recording_is_valid_agui(corpus_name: str, file_name: str | None) -> None:
    corpus = require_corpus(ROOT, corpus_name)
    assert file_name is not None, f"{corpus} holds no recorded bodies"
    providers = corpus_providers(corpus)
    prefix = file_name.split("__", 1)[0]
    assert prefix in providers, f"{file_name}: prefix {prefix!r} is not in the corpus's PROVIDER table"
    _replay_valid(providers[prefix], corpus / file_name)


@pytest.mark.parametrize("path", _plugin_params())
def test_plugin_recording_is_valid_agui(path: Path) -> None:
    prefix = path.name.split("__", 1)[0]
    assert prefix in PLUGIN_PROVIDERS, f"{path}: no provider for the prefix {prefix!r}"
    provider = PLUGIN_PROVIDERS[prefix]
    try:
        get_registry().provider(provider)
    except UnknownPluginError:
        pytest.skip(f"provider {provider!r} is not installed")
    _replay_valid(provider, path)


def test_plugin_recordings_were_found() -> None:
    prefixes = {p.values[0].name.split("__", 1)[0] for p in _plugin_params()}
    assert prefixes == set(PLUGIN_PROVIDERS), prefixes


# -- engine runs ---------------------------------------------------------------------------------------

def test_demo_run_is_valid_agui() -> None:
    with demo_server() as server:
        model = get_model(MODEL, base_url=server.url + "/v1", api_key="demo-key")
        stream = chat(model, DEMO_PROMPT, tools=demo_tools(), loop=LoopSettings(include_raw=True))
        events = check_events(list(stream), form="run")
    assert stream.result().outcome == "success"
    assert [e.type for e in events].count("TOOL_CALL_RESULT") == 2
    assert_valid(events, "demo")


def now() -> str:
    """The time of day."""
    return "noon"


def weather(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def broken(city: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"no data for {city}")


def _delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


delete_file = tool(_delete_file, name="delete_file", needs_approval=True)


def test_engine_runs_with_tools_approval_resume_and_client_tools_are_valid_agui() -> None:
    confirm = Tool("confirm", "Ask the user", {"type": "object", "properties": {}})
    first = [Response(tool_body(("c1", "weather", {"city": "Paris"}), ("c2", "broken", {"city": "Oslo"}),
                                ("c3", "delete_file", {"path": "/tmp/x"}), text="Let me look."))]
    with LoopbackServer(first) as srv:
        events, stream = run(srv.url, tools=[weather, broken, delete_file])
    assert_valid(events, "interrupted run")
    assert events[-1].outcome.type == "interrupt"
    assert [e.error is not None for e in events if e.type == "TOOL_CALL_RESULT"] == [False, True]
    answers = [Response(tool_body(("c4", "confirm", {}), ("c5", "weather", {"city": "Rome"}))),
               Response(text_body("done"))]
    with LoopbackServer(answers) as srv:
        model = get_model(MODEL, base_url=srv.url + "/v1", api_key="k")
        resumed = chat(model, tools=[weather, broken, delete_file, confirm],
                       resume=stream.result().resume({"approval_c3": True}))
        events2 = check_events(list(resumed), form="run")
        assert_valid(events2, "resumed run")  # the replayed call, a client tool (empty arguments)
        assert events2[-1].outcome.pending_tool_call_ids == ["c4"]
        again = chat(model, tools=[weather, broken, delete_file, confirm],
                     resume=resumed.result().resume(tool_outputs={"c4": "yes"}))
        events3 = check_events(list(again), form="run")
    assert_valid(events3, "client tool answered")
    assert again.result().text == "done"


def test_engine_structured_output_max_steps_and_errors_are_valid_agui() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
              "required": ["city", "n"], "additionalProperties": False}
    with LoopbackServer([Response(text_body('{"ci', 'ty": "Pa', 'ris", "n"', ": 3}"))]) as srv:
        events, stream = run(srv.url, output=schema)
    assert stream.result().output == {"city": "Paris", "n": 3}
    assert "STATE_DELTA" in [e.type for e in events]
    assert_valid(events, "structured output")
    loop = [Response(tool_body((f"c{n}", "weather", {"city": "Paris"}))) for n in (1, 2)]
    with LoopbackServer(loop) as srv:
        events, stream = run(srv.url, tools=[weather], max_steps=2)
    assert_valid(events, "max steps")
    no_args = [Response(tool_body(("c1", "now", ""))), Response(text_body("noon"))]  # no argument text
    with LoopbackServer(no_args) as srv:
        events, stream = run(srv.url, tools=[now])
    assert_valid(events, "tool call without argument text")
    assert [e.delta for e in events if isinstance(e, ToolCallArgs)] == ["{}"]
    refused = b'{"error": {"message": "no", "type": "invalid_request_error"}}'
    with LoopbackServer([Response(refused, status=400, content_type="application/json")]) as srv:
        events, stream = run(srv.url)
    assert events[-1].type == "RUN_ERROR"
    assert_valid(events, "provider error")


def _anthropic_sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _anthropic_message(blocks: list[dict[str, Any]], stop_reason: str) -> bytes:
    """A streamed Anthropic message ("Streaming Messages" reference) with whole ``blocks``: text blocks
    as one ``text_delta``, tool_use blocks with their input on ``content_block_start`` and no
    ``input_json_delta`` (what the API sends for a tool called with ``{}``)."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": "msg_schema", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                   "usage": {"output_tokens": 7}})
    events.append({"type": "message_stop"})
    return _anthropic_sse(*events)


def test_anthropic_engine_run_sends_whole_input_as_arguments() -> None:
    pytest.importorskip("hookstream_anthropic", reason="the anthropic plugin is not installed")
    answers = [
        Response(_anthropic_message([{"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}},
                                     {"type": "tool_use", "id": "toolu_2", "name": "weather",
                                      "input": {"city": "Paris"}}], "tool_use")),
        Response(_anthropic_message([{"type": "text", "text": "It is noon."}], "end_turn")),
    ]
    with LoopbackServer(answers) as srv:
        model = get_model("anthropic:claude-test", base_url=srv.url, api_key="sk-ant-test")
        stream = chat(model, "what time is it?", tools=[now, weather])
        events = check_events(list(stream), form="run")
    assert_valid(events, "anthropic run")
    assert [e.delta for e in events if e.type == "TOOL_CALL_ARGS"] == ["{}", '{"city":"Paris"}']
    assert stream.result().text == "It is noon."


# -- the AG-UI server ----------------------------------------------------------------------------------

def post(app: Any, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """POST ``doc`` to the WSGI ``app`` in process; the SSE events it answers, as JSON objects."""
    raw = json.dumps(doc).encode()
    environ: dict[str, Any] = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "CONTENT_TYPE": "application/json",
                               "CONTENT_LENGTH": str(len(raw)), "HTTP_ACCEPT": "text/event-stream",
                               "wsgi.input": io.BytesIO(raw)}
    setup_testing_defaults(environ)
    status: list[str] = []
    body = app(environ, lambda s, headers, exc_info=None: status.append(s))
    try:
        data = b"".join(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    assert status and status[0].startswith("200"), (status, data[:300])
    return list(_sse_data(data.decode("utf-8")))


def _sse_data(text: str) -> Iterator[dict[str, Any]]:
    for frame in text.replace("\r\n", "\n").split("\n\n"):
        lines = [ln[5:].lstrip(" ") for ln in frame.split("\n") if ln.startswith("data:")]
        if lines:
            yield json.loads("\n".join(lines))


def run_input(run_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": "thread-schema", "runId": run_id, "messages": messages, "tools": [], "context": [],
            "state": {}, "forwardedProps": {}, **extra}


def test_agui_server_demo_conversation_is_valid_agui() -> None:
    app = make_app(stream_factory=demo_factory(delay=0.0, approval=True), serve_page=False)
    messages: list[dict[str, Any]] = [{"id": "user-1", "role": "user", "content": DEMO_PROMPT}]
    first = post(app, run_input("run-1", messages))
    assert_valid(first, "served run 1")
    outcome = first[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
              for i in outcome["interrupts"]]
    second = post(app, run_input("run-2", messages_after(messages, first), resume=resume))
    assert_valid(second, "served run 2")
    assert second[-1]["type"] == "RUN_FINISHED" and (second[-1].get("outcome") or {}).get("type") != "interrupt"
    assert any(e["type"] == "TOOL_CALL_RESULT" for e in second)


def test_agui_server_model_run_frontend_tool_and_error_are_valid_agui() -> None:
    frontend = [{"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}]
    answers = [Response(tool_body(("c1", "weather", {"city": "Paris"}), ("c2", "confirm", {}))),
               Response(text_body("Confirmed: sunny."))]
    with LoopbackServer(answers) as srv:
        app = make_app(MODEL, tools=[weather], base_url=srv.url + "/v1", api_key="k", serve_page=False)
        messages: list[dict[str, Any]] = [{"id": "u1", "role": "user", "content": "weather?"}]
        first = post(app, run_input("run-a", messages, tools=frontend))
        assert_valid(first, "served run with a frontend tool")
        assert first[-1]["outcome"]["pendingToolCallIds"] == ["c2"]
        answered = [*messages_after(messages, first),
                    {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "yes"}]
        second = post(app, run_input("run-b", answered, tools=frontend))
    assert_valid(second, "served run after the frontend tool")
    assert second[-1]["type"] == "RUN_FINISHED"
    refused = b'{"error": {"message": "bad request", "type": "invalid_request_error"}}'
    with LoopbackServer([Response(refused, status=400, content_type="application/json")]) as srv:
        app = make_app(MODEL, base_url=srv.url + "/v1", api_key="k", serve_page=False)
        failed = post(app, run_input("run-c", [{"id": "u1", "role": "user", "content": "hi"}]))
    assert failed[-1]["type"] == "RUN_ERROR"
    assert_valid(failed, "served run that failed")


def test_zz_report_counts() -> None:
    """Prints how many events were validated (run with ``-s`` to see it); runs last in this module."""
    if _COUNTS["events"]:
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(_COUNTS.items()) if k != "events")
        print(f"\nAG-UI events validated: {_COUNTS['events']} ({by_type})")
