"""Differential test: hookstream's ``openai`` provider against the official ``openai`` SDK (test-only
oracle) on generated Chat Completions streams.

Each stream has random text (unicode, escapes), zero to three tool calls whose arguments are split at
random points and interleaved, random extra fields (``obfuscation``, ``usage: null``, ``refusal: null``),
a random finish reason and a usage chunk with ``choices: []``. The bytes are served on loopback and split
at random boundaries; the SDK's own accumulator (``ChatCompletionStreamState``) is fed the same chunks.
Final text, tool calls, raw finish reason and usage must agree.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.recorded import replay_body

openai = pytest.importorskip("openai")
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402

ALPHABET = "abc xyz ÄÖü 日本 🙂 \" \\ \n\t{}[]:,"


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def _split(rng: random.Random, s: str) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(s)), min(len(s) - 1, rng.randint(0, 6)))) if len(s) > 1 else []
    return [s[a:b] for a, b in zip([0, *cuts], [*cuts, len(s)], strict=True)]


def generate(seed: int) -> list[dict[str, Any]]:
    """One random stream as a list of chunk objects."""
    rng = random.Random(seed)
    base = {"id": f"chatcmpl-{seed}", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if rng.random() < 0.5:
            c["usage"] = None
        if rng.random() < 0.3:
            c["obfuscation"] = _text(rng, rng.randint(1, 9))
        return c

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if rng.random() < 0.7:
        chunks += [chunk({"content": piece}) for piece in _split(rng, _text(rng, rng.randint(1, 60)))]
    ncalls = rng.randint(0, 3)
    queues: list[list[dict[str, Any]]] = []
    for i in range(ncalls):
        value = {"q": _text(rng, rng.randint(0, 20)), "n": rng.randint(-5, 500),
                 "nested": {"ok": rng.random() < 0.5, "list": [1, "two", None]}}
        args = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        pieces = _split(rng, args)
        head: dict[str, Any] = {"index": i, "id": f"call_{seed}_{i}", "type": "function",
                "function": {"name": f"tool_{i}", "arguments": pieces[0] if rng.random() < 0.5 else ""}}
        rest = pieces[1:] if head["function"]["arguments"] else pieces
        q = [{"index": i, "function": {"arguments": p}} for p in rest]
        queues.append([head, *q])
    # Interleave the calls: each call's pieces keep their order, calls start in index order.
    started = 0
    while any(queues):
        live = [k for k, q in enumerate(queues) if q and (k < started or k == started)]
        k = rng.choice(live)
        if k == started:
            started += 1
        chunks.append(chunk({"tool_calls": [queues[k].pop(0)]}))
    finish = "tool_calls" if ncalls and rng.random() < 0.8 else rng.choice(["stop", "length"])
    chunks.append(chunk({}, finish))
    prompt, completion = rng.randint(1, 999), rng.randint(1, 999)
    chunks.append({**base, "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                                   "total_tokens": prompt + completion}})
    return chunks


def body_of(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks) + \
        b"data: [DONE]\n\n"


def oracle(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    snap = state.current_completion_snapshot
    choice = snap.choices[0]
    calls = [(t.id, t.function.name, t.function.arguments) for t in (choice.message.tool_calls or [])]
    return {"text": choice.message.content or "", "calls": sorted(calls), "finish": choice.finish_reason,
            "usage": (snap.usage.prompt_tokens, snap.usage.completion_tokens) if snap.usage else None}


@pytest.mark.parametrize("seed", range(30))
def test_matches_openai_sdk_accumulator(seed: int) -> None:
    chunks = generate(seed)
    events, step = replay_body("openai", body_of(chunks), fragment=(1, 64), seed=seed)
    check_events(events, form="call")
    got = {
        "text": step.text,
        "calls": sorted((c.id, c.name, c.arguments_raw) for c in step.tool_calls),
        "finish": step.raw_finish_reason,
        "usage": (step.usage.input_tokens, step.usage.output_tokens) if step.usage else None,
    }
    assert got == oracle(chunks)
    for c in step.tool_calls:
        assert c.arguments == json.loads(c.arguments_raw or "")


@pytest.mark.parametrize("seed", range(100, 104))
def test_matches_openai_sdk_client_over_http(seed: int) -> None:
    """The SDK itself reading the same bytes from the same kind of loopback server."""
    chunks = generate(seed)
    body = body_of(chunks)
    with LoopbackServer([Response(body, fragment=(1, 64))], seed=seed) as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-test", max_retries=0)
        with client.chat.completions.stream(model="gpt-x", messages=[{"role": "user", "content": "hi"}]) as s:
            for _ in s:
                pass
            snap = s.current_completion_snapshot
    _, step = replay_body("openai", body, fragment=(1, 64), seed=seed)
    msg = snap.choices[0].message
    assert step.text == (msg.content or "")
    assert [(c.id, c.name, c.arguments_raw) for c in step.tool_calls] == [
        (t.id, t.function.name, t.function.arguments) for t in (msg.tool_calls or [])]
    assert step.raw_finish_reason == snap.choices[0].finish_reason
    assert snap.usage is not None and step.usage is not None
    assert (step.usage.input_tokens, step.usage.output_tokens) == (snap.usage.prompt_tokens,
                                                                  snap.usage.completion_tokens)
