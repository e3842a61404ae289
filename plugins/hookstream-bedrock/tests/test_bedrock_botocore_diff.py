"""Differential test against botocore's own ``bedrock-runtime`` client (test-only oracle).

The same bytes (every real recording, plus scripted streams) are served on a loopback server to
``botocore.session.get_session().create_client("bedrock-runtime", endpoint_url=...).converse_stream``
and to hookstream's ``bedrock`` provider; both must agree on the text, the reasoning text and
signature, the tool calls (ids, names, parsed inputs), the stop reason and the token counts.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from bedrock_frames import ACCESS_KEY, MEDIA_TYPE, MODEL, SECRET_KEY, message_start, reasoning, stop, text, tool_use
from hookstream import Message, get_model
from hookstream.plugin import ModelRequest, ToolSpec
from hookstream.testing import LoopbackServer, Response, recordings, replay_body

HERE = Path(__file__).parent / "recordings"
RECORDINGS = recordings(HERE, ("bedrock",)) if HERE.is_dir() else []


def botocore_view(body: bytes, fragment: tuple[int, int] | None = None) -> dict[str, Any]:
    """What botocore's client makes of ``body``: text, reasoning, signature, client tool calls, stop
    reason and raw usage."""
    with LoopbackServer([Response(body, content_type=MEDIA_TYPE, fragment=fragment)]) as srv:
        client = botocore.session.get_session().create_client(
            "bedrock-runtime", region_name="us-east-1", endpoint_url=srv.url,
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        )
        response = client.converse_stream(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
        out: dict[str, Any] = {"text": "", "reasoning": "", "signature": None, "tools": {}, "stop": None, "usage": None}
        current: dict[int, str] = {}
        for ev in response["stream"]:
            if "contentBlockStart" in ev:
                start = ev["contentBlockStart"]
                tool = start["start"].get("toolUse")
                if tool and tool.get("type") != "server_tool_use":
                    current[start["contentBlockIndex"]] = tool["toolUseId"]
                    out["tools"][tool["toolUseId"]] = [tool["name"], ""]
            elif "contentBlockDelta" in ev:
                d, i = ev["contentBlockDelta"]["delta"], ev["contentBlockDelta"]["contentBlockIndex"]
                if "text" in d:
                    out["text"] += d["text"]
                elif "toolUse" in d and i in current:
                    out["tools"][current[i]][1] += d["toolUse"]["input"]
                elif "reasoningContent" in d:
                    out["reasoning"] += d["reasoningContent"].get("text", "")
                    out["signature"] = d["reasoningContent"].get("signature", out["signature"])
            elif "messageStop" in ev:
                out["stop"] = ev["messageStop"]["stopReason"]
            elif "metadata" in ev:
                out["usage"] = ev["metadata"]["usage"]
        out["tools"] = [(k, n, json.loads(a) if a else {}) for k, (n, a) in out["tools"].items()]
        return out


def hookstream_view(body: bytes, fragment: tuple[int, int] | None = None, seed: int = 0) -> dict[str, Any]:
    _, step = replay_body("bedrock", body, fragment=fragment, seed=seed)
    metas = [(p.provider_metadata or {}).get("bedrock") or {} for p in step.message.parts if p.kind == "reasoning"]
    signature = next((m["signature"] for m in metas if "signature" in m), None)
    u = step.usage
    return {
        "text": step.text,
        "reasoning": step.reasoning or "",
        "signature": signature,
        "tools": [(c.id, c.name, c.arguments) for c in step.tool_calls],
        "stop": step.raw_finish_reason,
        "usage": u,
    }


def assert_agree(boto: dict[str, Any], ours: dict[str, Any]) -> None:
    usage = ours.pop("usage")
    raw = boto.pop("usage")
    assert ours == boto
    cache = (raw.get("cacheReadInputTokens") or 0) + (raw.get("cacheWriteInputTokens") or 0)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == \
        (raw["inputTokens"] + cache, raw["outputTokens"], raw["totalTokens"])


@pytest.mark.skipif(not RECORDINGS, reason="no recordings")
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_recordings_agree_with_botocore(recording: Any) -> None:
    body = recording.body_path.read_bytes()
    assert_agree(botocore_view(body, fragment=(1, 50)), hookstream_view(body, fragment=(1, 50), seed=5))


WORDS = ["alpha", "β-test", "naïve", "日本", "emoji 🙂", 'quote "q"', "back\\slash", "new\nline", "{json}"]


def generate(seed: int) -> bytes:
    """A scripted stream: optional signed reasoning, text, 0-3 tool calls whose JSON input is split at
    random points; stop reason and usage at random."""
    rng = random.Random(seed)
    body = message_start()
    index = 0
    if rng.random() < 0.5:
        body += reasoning(index, f"sig-{seed}", *(rng.choice(WORDS) for _ in range(rng.randint(1, 4))))
        index += 1
    if rng.random() < 0.8:
        body += text(index, *(rng.choice(WORDS) + " " for _ in range(rng.randint(1, 6))))
        index += 1
    for n in range(rng.randint(0, 3)):
        args = json.dumps({f"k{i}": rng.choice([rng.choice(WORDS), rng.randint(-9, 9), None, [1, "x"]])
                           for i in range(rng.randint(0, 3))})
        cuts = sorted(rng.sample(range(1, len(args)), min(len(args) - 1, rng.randint(0, 5))))
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        body += tool_use(index, f"tooluse_{seed}_{n}", f"tool_{n}", *pieces)
        index += 1
    reason = rng.choice(["end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened"])
    extra = {"cacheReadInputTokens": rng.randint(0, 99)} if rng.random() < 0.5 else {}
    return body + stop(reason, (rng.randint(1, 999), rng.randint(1, 999)), **extra)


@pytest.mark.parametrize("seed", range(20))
def test_scripted_streams_agree_with_botocore(seed: int) -> None:
    body = generate(seed)
    assert_agree(botocore_view(body, fragment=(1, 9)), hookstream_view(body, fragment=(1, 9), seed=seed))


def test_botocore_and_hookstream_send_the_same_body_shape() -> None:
    """The request botocore's serializer writes for a Converse call equals the body hookstream builds
    for the same conversation (model id in the path, percent-encoded the same way)."""
    body = message_start() + text(0, "ok") + stop("end_turn")
    with LoopbackServer([Response(body, content_type=MEDIA_TYPE)] * 2) as srv:
        client = botocore.session.get_session().create_client(
            "bedrock-runtime", region_name="us-east-1", endpoint_url=srv.url,
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        )
        tool = {"toolSpec": {"name": "add", "description": "Add.",
                             "inputSchema": {"json": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}
        list(client.converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}], system=[{"text": "be brief"}],
            inferenceConfig={"maxTokens": 50, "temperature": 0.5},
            toolConfig={"tools": [tool], "toolChoice": {"any": {}}},
        )["stream"])
        provider = get_model(f"bedrock:{MODEL}", base_url=srv.url, api_key="bedrock-api-key-test", region="us-east-1")
        request = ModelRequest(MODEL, [Message.system("be brief"), Message.user("hi")], max_tokens=50, temperature=0.5,
                               tools=[ToolSpec("add", "Add.", tool["toolSpec"]["inputSchema"]["json"])],
                               tool_choice="required")
        http = provider.build_request(request)
        assert http.url == srv.url + srv.requests[0].path
        assert http.json == srv.requests[0].json()
