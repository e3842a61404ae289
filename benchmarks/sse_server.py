"""The benchmarks' SSE server: a separate process on 127.0.0.1, as a real provider is.

``python benchmarks/sse_server.py --max-requests N --max-seconds S`` prints its base URL on the first
line of stdout, then serves until it has answered N requests, S seconds have passed, or its stdin is
closed (the benchmark that started it exited). Standard library only, so it never imports the code
it measures and its CPU time never counts as the client's. With ``BENCH_CPUS`` set it runs on those
CPUs only (the harness gives it a core of its own).

Each SSE event is sent as its own HTTP chunk (chunked transfer encoding, one ``send`` per event), as
OpenAI and Anthropic do. The body is chosen by the first path segment, the scenario, so one server
serves every benchmark: ``POST /<scenario>/v1/chat/completions`` or ``/<scenario>/v1/messages``.

Scenarios (all bodies are built once at start-up; see :func:`scenario`):

* ``openai-text-<n>``: OpenAI Chat Completions, ``n`` deltas of 4 characters (:func:`words`), a usage
  chunk, ``[DONE]``.
* ``anthropic-text-<n>``: Anthropic Messages, ``n`` ``text_delta`` events of 4 characters.
* ``openai-bigtext-<bytes>-<delta>``: ``bytes`` of text in ``delta``-byte content deltas.
* ``openai-args-<bytes>-<delta>``: one tool call (``write_file``) whose JSON arguments, ``bytes`` long,
  arrive in ``delta``-byte pieces.
* ``openai-paced-<n>-<ms>``: ``n`` deltas, one every ``ms`` milliseconds, each text being
  ``time.monotonic_ns()`` at the moment of sending plus a space (for latency).
* ``openai-latency-<ttft>-<n>-<gap>``: a provider's pace: the first delta after ``ttft`` ms, then
  ``n - 1`` more 4-character deltas ``gap`` ms apart, then finish, usage and ``[DONE]`` (batch runs).

``GET /connections`` answers ``{"connections": N}``: the TCP connections accepted so far, this
request's own included (``bench_keepalive.py``).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import socketserver
import struct
import sys
import threading
import time
import zlib
from typing import Any

_OPENAI_HEAD = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "bench"}
_USAGE = (b'data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench",'
          b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}\n\n')


def _sse(doc: dict[str, Any], event: str | None = None) -> bytes:
    data = b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"
    return f"event: {event}\n".encode() + data if event else data


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _sse({**_OPENAI_HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def openai_text(deltas: list[str]) -> list[bytes]:
    out = [openai_chunk({"role": "assistant", "content": ""})]
    out += [openai_chunk({"content": d}) for d in deltas]
    return [*out, openai_chunk({}, "stop"), _USAGE, b"data: [DONE]\n\n"]


def openai_args(args: str, delta: int) -> list[bytes]:
    out = [openai_chunk({"role": "assistant", "content": None}),
           openai_chunk({"tool_calls": [{"index": 0, "id": "call_b", "type": "function",
                                         "function": {"name": "write_file", "arguments": ""}}]})]
    out += [openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + delta]}}]})
            for i in range(0, len(args), delta)]
    return [*out, openai_chunk({}, "tool_calls"), _USAGE, b"data: [DONE]\n\n"]


def anthropic_text(deltas: list[str]) -> list[bytes]:
    def ev(kind: str, **f: Any) -> bytes:
        return _sse({"type": kind, **f}, kind)

    out = [ev("message_start", message={"id": "msg_b", "type": "message", "role": "assistant", "model": "bench",
                                        "content": [], "stop_reason": None, "stop_sequence": None,
                                        "usage": {"input_tokens": 5, "output_tokens": 1}}),
           ev("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    out += [ev("content_block_delta", index=0, delta={"type": "text_delta", "text": d}) for d in deltas]
    return [*out, ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
               usage={"output_tokens": len(deltas)}),
            ev("message_stop")]


WORDS = ("tok ", "ens ", "are ", "not ", "all ", "the ", "sam ", "e.  ")


def words(n: int) -> list[str]:
    """``n`` text deltas of 4 characters each. Not one repeated delta: LiteLLM rejects a stream that
    repeats the same chunk (``REPEATED_STREAMING_CHUNK_LIMIT``) as a looping model."""
    return [WORDS[i % len(WORDS)] for i in range(n)]


def tool_arguments(size: int) -> str:
    """JSON arguments of ``size`` bytes: a file being written (one long string) plus a small member."""
    base = len(json.dumps({"path": "out.txt", "content": ""}))
    lines = max(0, size - base) // 16  # each line is 16 bytes once json.dumps escapes its newline
    content = "line of a file\n" * lines
    return json.dumps({"path": "out.txt", "content": content + "x" * max(0, size - base - 16 * lines)})


def ollama_text(deltas: list[str]) -> list[bytes]:
    """Ollama ``/api/chat`` NDJSON lines, one per delta, then the ``done`` line (docs/api.md)."""
    head = '{"model":"bench","created_at":"2025-01-01T00:00:00.000000Z","message":{"role":"assistant","content":'
    lines = [(head + json.dumps(d) + '},"done":false}\n').encode() for d in deltas]
    lines.append((head + '""},"done_reason":"stop","done":true,"total_duration":1,"load_duration":1,'
                  f'"prompt_eval_count":5,"prompt_eval_duration":1,"eval_count":{len(deltas)},'
                  '"eval_duration":1}\n').encode())
    return lines


def _aws_header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v  # type 7: string


def aws_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message (``application/vnd.amazon.eventstream``: prelude with total and
    headers length and its CRC32, headers, payload, message CRC32), as Bedrock sends each event.
    Benchmark data, generated: the recorded bodies are in plugins/hookstream-bedrock/tests/recordings."""
    headers = (_aws_header(":event-type", event_type) + _aws_header(":content-type", "application/json")
               + _aws_header(":message-type", "event"))
    body = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_text(deltas: list[str]) -> list[bytes]:
    """A ConverseStream text answer: messageStart, a contentBlockDelta per delta, contentBlockStop,
    messageStop, metadata (each payload padded with ``p`` as Bedrock pads it)."""
    pad = "abcdefghijklmnopqrstuvwxyzABCDEF"
    frames = [aws_frame("messageStart", {"p": pad, "role": "assistant"})]
    frames += [aws_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": d}, "p": pad[:len(d) * 2]})
               for d in deltas]
    frames.append(aws_frame("contentBlockStop", {"contentBlockIndex": 0, "p": pad}))
    frames.append(aws_frame("messageStop", {"p": pad, "stopReason": "end_turn"}))
    frames.append(aws_frame("metadata", {"metrics": {"latencyMs": 1}, "p": pad, "usage": {
        "inputTokens": 5, "outputTokens": len(deltas), "totalTokens": 5 + len(deltas)}}))
    return frames


CONTENT_TYPES = {"ollama": "application/x-ndjson", "bedrock": "application/vnd.amazon.eventstream"}
"""Content type per scenario kind; every other kind is ``text/event-stream``."""


def scenario(name: str) -> list[bytes]:
    """The SSE events of scenario ``name`` (one bytes object per event); ``ValueError`` if unknown."""
    kind, _, params = name.partition("-")
    shape, _, rest = params.partition("-")
    nums = [int(x) for x in rest.split("-")] if rest else []
    if (kind, shape) == ("openai", "text"):
        return openai_text(words(nums[0]))
    if (kind, shape) == ("anthropic", "text"):
        return anthropic_text(words(nums[0]))
    if (kind, shape) == ("ollama", "text"):
        return ollama_text(words(nums[0]))
    if (kind, shape) == ("bedrock", "text"):
        return bedrock_text(words(nums[0]))
    if (kind, shape) == ("openai", "bigtext"):
        size, delta = nums
        return openai_text(["m" * delta] * (size // delta))
    if (kind, shape) == ("openai", "args"):
        size, delta = nums
        return openai_args(tool_arguments(size), delta)
    raise ValueError(f"unknown scenario {name!r}")


def _framed(event: bytes) -> bytes:
    return b"%x\r\n" % len(event) + event + b"\r\n"


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-body is not the server's failure


def serve(max_requests: int, max_seconds: float, nodelay: bool = False) -> None:
    bodies: dict[str, list[bytes]] = {}  # framed chunks per scenario, built on first use, then reused
    lock = threading.Lock()
    served = [0]
    connections = [0]  # TCP connections accepted
    done = threading.Event()

    def framed(name: str) -> list[bytes]:
        with lock:
            if name not in bodies:
                bodies[name] = [_framed(e) for e in scenario(name)]
            return bodies[name]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = nodelay

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            with lock:  # one handler per accepted TCP connection, however many requests it serves
                connections[0] += 1

        def do_POST(self) -> None:
            n = int(self.headers.get("content-length") or 0)
            if n:
                self.rfile.read(n)
            name = self.path.strip("/").split("/")[0]
            if name == "connections":
                self._connections()
                return
            try:
                self._answer(name)
            finally:
                with lock:
                    served[0] += 1
                    if served[0] >= max_requests:
                        done.set()

        def _answer(self, name: str) -> None:
            try:
                chunks = None if name.startswith(("openai-paced-", "openai-latency-")) else framed(name)
            except (ValueError, IndexError) as exc:
                data = json.dumps({"error": {"message": str(exc), "type": "invalid_request_error"}}).encode()
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPES.get(name.split("-", 1)[0], "text/event-stream"))
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                if name.startswith("openai-latency-"):
                    self._latency(name)
                elif chunks is None:
                    self._paced(name)
                else:
                    write = self.wfile.write  # unbuffered: one sendall per event, as a provider flushes
                    for c in chunks:
                        write(c)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True

        def _connections(self) -> None:
            with lock:
                data = json.dumps({"connections": connections[0]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _paced(self, name: str) -> None:
            n, ms = (int(x) for x in name.split("-")[2:4])
            events = openai_text(["x"] * n)
            self.wfile.write(_framed(events[0]))
            for _ in range(n):
                time.sleep(ms / 1000)
                self.wfile.write(_framed(openai_chunk({"content": f"{time.monotonic_ns()} "})))
            for e in events[-3:]:
                self.wfile.write(_framed(e))

        def _latency(self, name: str) -> None:
            ttft, n, gap = (int(x) for x in name.split("-")[2:5])
            events = openai_text(words(n))
            time.sleep(ttft / 1000)
            self.wfile.write(_framed(events[0]) + _framed(events[1]))
            for e in events[2 : 1 + n]:
                time.sleep(gap / 1000)
                self.wfile.write(_framed(e))
            for e in events[1 + n :]:
                self.wfile.write(_framed(e))

        do_GET = do_POST

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)

    def parent_gone() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=parent_gone, daemon=True).start()
    done.wait(max_seconds)
    server.shutdown()
    server.server_close()


def pin_to_env_cpus() -> None:
    """Run on the CPUs ``BENCH_CPUS`` lists (``"1"``, ``"0,2"``), when set: called first, before any
    thread starts, so every thread of the process inherits it (Linux ``sched_setaffinity``)."""
    cpus = os.environ.get("BENCH_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def main(argv: list[str] | None = None) -> None:
    pin_to_env_cpus()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-requests", type=int, default=10_000)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--nodelay", action="store_true", help="TCP_NODELAY on every connection, as providers' "
                        "servers set it (without it a kept-alive connection's small answers wait on delayed ACKs)")
    args = parser.parse_args(argv)
    serve(args.max_requests, args.max_seconds, args.nodelay)
    os._exit(0)  # daemon handler threads may still hold sockets; the process is done


if __name__ == "__main__":
    main()
