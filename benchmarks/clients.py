"""One benchmark client per process: it measures its own CPU time, on command, against the SSE server.

``python benchmarks/clients.py CLIENT`` imports CLIENT's library, builds its client object, prints
``ready``, then reads one JSON command per stdin line and answers one JSON line on stdout::

    {"op": "run", "root": "http://127.0.0.1:PORT/SCENARIO", "shape": "openai"|"anthropic",
     "tool": false, "threads": 1, "streams": 1, "trace": false}
    -> {"cpu": s, "wall": s, "got": N, "peak": bytes|null, "rss_before": bytes, "rss_peak": bytes}

``cpu`` is ``time.process_time()`` over the run (user + system time of this process, all its threads),
``wall`` is ``time.perf_counter()``. Imports and client construction happen before ``ready``, so they
are not in the figures (start-up is measured separately). ``got`` proves the client consumed the
whole stream: text length, the tool call's ``content`` argument length, or for the floor the number
of SSE ``data:`` lines it parsed. ``threads`` runs that many streams at once on threads; with one
thread, ``streams`` runs that many one after another (the same work as ``threads``, one stream at a
time). ``trace`` measures the run's tracemalloc peak. ``rss_before`` is the resident set size before the run and
``rss_peak`` its peak during the run (Linux ``VmHWM``, reset before the run through ``clear_refs``).

``{"op": "latency", "root": ...}`` consumes an ``openai-paced-*`` scenario and answers the
milliseconds from each delta's ``time.monotonic_ns()`` stamp (written by the server process) to its
arrival in the client: for hookstream at ``StreamProcessor``'s ``on_text_update``.

This file is run by the benchmark's own interpreter for ``floor`` and ``hookstream`` and by each
peer's venv (``peers.py``) for the others; it imports only the standard library at module level.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

MESSAGES = [{"role": "user", "content": "hi"}]
Run = Callable[[str, str, bool], int]


def _status(field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (resident peak) of this process, in bytes (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_rss_peak() -> None:
    """Reset ``VmHWM`` to the current RSS (``proc(5)``, ``/proc/pid/clear_refs``), so the peak is the run's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _content_len(arguments: str | dict[str, Any] | None) -> int:
    doc = json.loads(arguments) if isinstance(arguments, str) else arguments
    return len(doc["content"]) if doc else -1


# -- the floor and hookstream --------------------------------------------------------------------------

def make_floor() -> Run:
    import requests

    def run(root: str, shape: str, tool: bool) -> int:
        """requests ``iter_lines`` + ``json.loads`` of each data line: the least a Python client does.
        NDJSON (Ollama): ``json.loads`` of every line. AWS event-stream (Bedrock): botocore's
        ``EventStreamBuffer`` fed each read (``iter_content(None)``) + ``json.loads`` of each payload."""
        if shape == "ollama":
            return floor_ndjson(root)
        if shape == "bedrock":
            return floor_eventstream(root)
        url = root + ("/v1/messages" if shape == "anthropic" else "/v1/chat/completions")
        n = 0
        with requests.post(url, json={"stream": True}, stream=True) as r:
            for line in r.iter_lines():
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    json.loads(line[6:])
                    n += 1
        return n

    return run


def floor_ndjson(root: str) -> int:
    import requests

    n = 0
    with requests.post(root + "/api/chat", json={"stream": True}, stream=True) as r:
        for line in r.iter_lines():
            if line:
                json.loads(line)
                n += 1
    return n


def floor_eventstream(root: str) -> int:
    import requests
    from botocore.eventstream import EventStreamBuffer

    n = 0
    buf = EventStreamBuffer()
    with requests.post(root + "/model/bench/converse-stream", json={}, stream=True) as r:
        for data in r.iter_content(None):
            buf.add_data(data)
            for message in buf:
                json.loads(message.payload)
                n += 1
    return n


def make_hookstream(plugins: tuple[Any, ...] = ()) -> Run:
    from hookstream import StreamProcessor, chat, get_model

    # Bedrock signs each request with SigV4: these are the benchmark's own fake credentials.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCHMARK")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    os.environ.setdefault("AWS_REGION", "us-east-1")

    def run(root: str, shape: str, tool: bool) -> int:
        """``hookstream.chat`` with a ``StreamProcessor`` consuming every event: the whole pipeline."""
        base = root if shape in ("anthropic", "ollama", "bedrock") else root + "/v1"
        proc = StreamProcessor()
        key = None if shape == "bedrock" else "bench"
        for ev in chat(get_model(f"{shape}:bench", base_url=base, api_key=key), "hi", max_steps=1, plugins=plugins):
            proc.process_chunk(ev)
        r = proc.finalize()
        return _content_len(r.tool_calls[0].arguments) if tool else len(r.content)

    return run


def make_hookstream_stdlib_json() -> Run:
    """hookstream with msgspec's import blocked: provider chunks decoded by the standard library's
    ``json`` (``hookstream._json_data``), as without the ``fast`` extra."""
    sys.modules["msgspec"] = None  # type: ignore[assignment]  # an import of it now raises ImportError
    return make_hookstream()


def make_hookstream_budget() -> Run:
    """hookstream with the ``budget`` run plugin checking both limits (never reached) before each request:
    the input tokens counted locally, the next request priced (bench_hooks.py)."""
    return make_hookstream(plugins=(("budget", {"max_input_tokens": 10**9, "max_cost_usd": 10**6}),))


# -- peers, each in its own venv -------------------------------------------------------------------------

def make_openai_create() -> Run:
    from openai import OpenAI

    clients: dict[str, Any] = {}

    def run(root: str, shape: str, tool: bool) -> int:
        """``client.chat.completions.create(stream=True)``, iterating the chunks."""
        client = clients.get(root) or clients.setdefault(root, OpenAI(base_url=root + "/v1", api_key="bench",
                                                                      max_retries=0))
        text: list[str] = []
        args: list[str] = []
        for chunk in client.chat.completions.create(model="bench", messages=MESSAGES, stream=True):
            if chunk.choices:
                d = chunk.choices[0].delta
                if d.content:
                    text.append(d.content)
                for tc in d.tool_calls or ():
                    if tc.function and tc.function.arguments:
                        args.append(tc.function.arguments)
        return _content_len("".join(args)) if tool else len("".join(text))

    return run


def make_openai_stream() -> Run:
    from openai import OpenAI

    clients: dict[str, Any] = {}

    def run(root: str, shape: str, tool: bool) -> int:
        """``client.chat.completions.stream(...)`` + ``get_final_completion()`` (accumulates a snapshot)."""
        client = clients.get(root) or clients.setdefault(root, OpenAI(base_url=root + "/v1", api_key="bench",
                                                                      max_retries=0))
        with client.chat.completions.stream(model="bench", messages=MESSAGES) as s:
            msg = s.get_final_completion().choices[0].message
        return _content_len(msg.tool_calls[0].function.arguments) if tool else len(msg.content or "")

    return run


def make_anthropic_stream() -> Run:
    import anthropic

    clients: dict[str, Any] = {}

    def run(root: str, shape: str, tool: bool) -> int:
        """``client.messages.stream(...)`` + ``get_final_message()``."""
        client = clients.get(root) or clients.setdefault(root, anthropic.Anthropic(base_url=root, api_key="bench",
                                                                                   max_retries=0))
        with client.messages.stream(model="bench", max_tokens=10, messages=MESSAGES) as s:
            msg = s.get_final_message()
        return sum(len(b.text) for b in msg.content if b.type == "text")

    return run


def make_litellm() -> Run:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import
    import litellm

    litellm.telemetry = False

    def run(root: str, shape: str, tool: bool) -> int:
        """``litellm.completion(model="openai/bench", api_base=..., stream=True)``, iterating the chunks."""
        n = 0
        for chunk in litellm.completion(model="openai/bench", api_base=root + "/v1", api_key="bench",
                                        messages=MESSAGES, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                n += len(chunk.choices[0].delta.content)
        return n

    return run


def make_llm() -> Run:
    from llm.default_plugins.openai_models import Chat

    models: dict[str, Any] = {}

    def run(root: str, shape: str, tool: bool) -> int:
        """simonw/llm's OpenAI Chat model (its default OpenAI plugin) with ``api_base`` pointed at the
        server, ``model.prompt(..., stream=True)``, iterating the text."""
        model = models.get(root) or models.setdefault(root, Chat("bench", model_name="bench",
                                                                 api_base=root + "/v1"))
        return sum(len(t) for t in model.prompt("hi", stream=True, key="bench"))

    return run


def make_pydantic_ai() -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    agents: dict[str, Any] = {}

    def run(root: str, shape: str, tool: bool) -> int:
        """``Agent(OpenAIChatModel).run_stream_sync(...)``, ``stream_text(delta=True)``."""
        agent = agents.get(root) or agents.setdefault(root, Agent(OpenAIChatModel(
            "bench", provider=OpenAIProvider(base_url=root + "/v1", api_key="bench"))))
        result = agent.run_stream_sync("hi")
        return sum(len(t) for t in result.stream_text(delta=True))

    return run


def make_openai_agents() -> Run:
    import asyncio

    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI
    from openai.types.responses import ResponseTextDeltaEvent

    set_tracing_disabled(True)

    async def once(root: str) -> int:
        model = OpenAIChatCompletionsModel(model="bench", openai_client=AsyncOpenAI(
            base_url=root + "/v1", api_key="bench", max_retries=0))
        result = Runner.run_streamed(Agent(name="bench", model=model), "hi")
        n = 0
        async for ev in result.stream_events():
            if ev.type == "raw_response_event" and isinstance(ev.data, ResponseTextDeltaEvent):
                n += len(ev.data.delta)
        return n

    def run(root: str, shape: str, tool: bool) -> int:
        """``Runner.run_streamed`` with ``OpenAIChatCompletionsModel``, iterating ``stream_events()``
        (asyncio: a blocking caller pays ``asyncio.run`` per call)."""
        return asyncio.run(once(root))

    return run


MAKERS: dict[str, Callable[[], Run]] = {
    "floor": make_floor,
    "hookstream": make_hookstream,
    "hookstream-stdlib-json": make_hookstream_stdlib_json,
    "hookstream-budget": make_hookstream_budget,
    "openai-create": make_openai_create,
    "openai-stream": make_openai_stream,
    "anthropic-stream": make_anthropic_stream,
    "litellm": make_litellm,
    "llm": make_llm,
    "pydantic-ai": make_pydantic_ai,
    "openai-agents": make_openai_agents,
}


# -- the command loop -----------------------------------------------------------------------------------

def do_run(run: Run, cmd: dict[str, Any]) -> dict[str, Any]:
    root, shape, tool = cmd["root"], cmd.get("shape", "openai"), bool(cmd.get("tool"))
    k = int(cmd.get("threads", 1))
    streams = int(cmd.get("streams", 1))  # with one thread: this many streams, one after another
    got: list[int] = []
    _reset_rss_peak()
    rss_before = _status("VmRSS")
    if cmd.get("trace"):
        tracemalloc.start()
    c0, w0 = time.process_time(), time.perf_counter()
    if k == 1:
        for _ in range(streams):
            got.append(run(root, shape, tool))
    else:
        threads = [threading.Thread(target=lambda: got.append(run(root, shape, tool))) for _ in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] if cmd.get("trace") else None
    tracemalloc.stop()
    n = k if k > 1 else streams
    return {"cpu": cpu, "wall": wall, "got": got[0] if len(set(got)) == 1 and len(got) == n else -1,
            "peak": peak, "rss_before": rss_before,
            "rss_peak": _status("VmHWM")}


def do_latency(client: str, cmd: dict[str, Any]) -> dict[str, Any]:
    root = cmd["root"]
    lat: list[float] = []
    if client == "hookstream":
        from hookstream import StreamProcessor, chat, get_model

        def on_text(message_id: str, text: str) -> None:
            now = time.monotonic_ns()
            lat.append((now - int(text.rstrip().rsplit(" ", 1)[-1])) / 1e6)

        proc = StreamProcessor(on_text_update=on_text)
        for ev in chat(get_model("openai:bench", base_url=root + "/v1", api_key="bench"), "hi", max_steps=1):
            proc.process_chunk(ev)
        proc.finalize()
    else:
        import requests

        with requests.post(root + "/v1/chat/completions", json={"stream": True}, stream=True) as r:
            for line in r.iter_lines():
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    doc = json.loads(line[6:])
                    text = doc["choices"][0]["delta"].get("content") if doc["choices"] else None
                    if text and text.strip():
                        lat.append((time.monotonic_ns() - int(text)) / 1e6)
    return {"latency_ms": lat}


def main() -> None:
    # Pinned before the client's library is imported, so every thread it starts inherits the CPUs.
    from sse_server import pin_to_env_cpus  # beside this script; standard library only

    pin_to_env_cpus()
    client = sys.argv[1]
    run = MAKERS[client]()
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            out = do_latency(client, cmd) if cmd["op"] == "latency" else do_run(run, cmd)
        except Exception as exc:  # reported to the orchestrator as a failed figure, not a traceback
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
