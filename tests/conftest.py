"""Shared fixtures for the core tests. ``lineprov`` is a tiny but real provider (one JSON object per SSE
event) used to test transport and engine without any provider plugin."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from hookstream import Provider, get_registry
from hookstream.errors import MalformedChunkError
from hookstream.events import BaseEvent, Usage
from hookstream.plugin import CallContext, HTTPRequest, ModelRequest, Registry, StreamBuilder


class LineProvider(Provider):
    """Wire format: ``data: {"text": "..."}`` / ``{"tool": [id, name, args]}`` / ``{"finish": "stop"}``."""

    name = "lineprov"
    default_base_url = "http://127.0.0.1:9"
    api_key_env = ("LINEPROV_API_KEY",)

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        body = {"model": self.model, "messages": [[m.role, m.text] for m in request.messages],
                "tools": [t.name for t in request.tools]}
        return HTTPRequest(self.base_url + "/stream", body, {"Authorization": f"Bearer {self.api_key.reveal()}"})

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        b = StreamBuilder(context)
        yield from b.start()
        for sse in events:
            try:
                doc = json.loads(sse.data)
            except ValueError:
                raise MalformedChunkError("invalid JSON chunk", sse.data) from None
            if "text" in doc:
                yield from b.text(doc["text"])
            elif "tool" in doc:
                tid, name, args = doc["tool"]
                yield from b.tool_start(tid, name)
                yield from b.tool_args(tid, args)
                yield from b.tool_end(tid)
            elif "finish" in doc:
                yield from b.finish(doc["finish"], doc["finish"], Usage(1, 1))
                return


@pytest.fixture
def lineprov() -> type[LineProvider]:
    reg: Registry = get_registry()
    if "lineprov" not in reg.names("providers"):
        class Plugin:
            @staticmethod
            def hookstream_register_providers(register: Any) -> None:
                register("lineprov", LineProvider)

        from hookstream.plugin import hookimpl

        Plugin.hookstream_register_providers = hookimpl(Plugin.hookstream_register_providers)  # type: ignore[method-assign]
        reg.add_plugin(Plugin(), "lineprov-test")
    return LineProvider


def sse(*docs: Any, sep: str = "\n") -> bytes:
    return "".join(f"data: {json.dumps(d)}{sep}{sep}" for d in docs).encode()

