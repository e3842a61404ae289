"""The ``replay`` provider: plays a recording directory (:class:`hookstream.Recorder`) back, offline.

``chat("replay:path/to/recording", prompt, tools=[...])`` runs the agent as it ran when recorded: the
recorded responses are served in order by a requests transport adapter (no socket, no server) and
read by the real adapter named in the recording (``openai``, ``anthropic``...) through the real
transport. The transport adapter checks that each request the run sends still matches the recorded one
(path and JSON body); a request that differs is answered ``400`` naming the first difference, so the
run ends with ``RUN_ERROR`` code ``bad_request`` and the test that replays it fails with a reason
instead of passing on stale data.

Registered through the ``hookstream`` entry-point group by :mod:`hookstream_replay.plugin` (``replay =
hookstream_replay.plugin``), which names this module without importing it.

Thread safety: a ReplayProvider owns one position in the recording: share it only across the calls of
one run (``chat`` creates a new one per run).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import requests
import requests.adapters
from hookstream import get_registry
from hookstream.events import BaseEvent
from hookstream.plugin import (
    CallContext,
    HTTPRequest,
    ModelRequest,
    Provider,
    Secret,
    bytes_response,
    load_manifest,
)

__all__ = ["ReplayProvider", "first_difference"]


def first_difference(expected: Any, got: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, as ``"$.messages[1].content: 'a' != 'b'"``; ``None`` if equal."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            if key not in got:
                return f"{path}.{key}: missing (recorded {json.dumps(expected[key])[:120]})"
            if key not in expected:
                return f"{path}.{key}: not in the recording (got {json.dumps(got[key])[:120]})"
            diff = first_difference(expected[key], got[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for i, (e, g) in enumerate(zip(expected, got, strict=False)):
            diff = first_difference(e, g, f"{path}[{i}]")
            if diff:
                return diff
        if len(expected) != len(got):
            return f"{path}: {len(got)} items, recorded {len(expected)}"
        return None
    if expected != got or type(expected) is not type(got):
        return f"{path}: {json.dumps(got)[:120]} != recorded {json.dumps(expected)[:120]}"
    return None


class _ReplayAdapter(requests.adapters.BaseAdapter):
    """A requests transport adapter answering each request with the next recorded response body.

    No socket is opened: the recorded bytes are handed to the real transport as a urllib3 response, so
    the adapter and the SSE framing read them exactly as they would read a live answer. A request that
    differs from the recorded one is answered ``400`` naming the first difference.
    """

    def __init__(self, replay: ReplayProvider) -> None:
        super().__init__()
        self._replay = replay
        self._lock = threading.Lock()
        self._index = 0

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        with self._lock:
            index = self._index
            self._index += 1
        body = request.body or b""
        problem = self._replay._check(index, urlsplit(request.url or "").path,
                                      body if isinstance(body, bytes) else body.encode("utf-8"))
        if problem is not None:
            data, status = json.dumps({"error": {"message": problem, "type": "replay_mismatch"}}).encode(), 400
            ctype = "application/json"
        else:
            call = self._replay.calls[index]
            data, status = (self._replay.directory / call["response"]).read_bytes(), int(call.get("status", 200))
            ctype = call.get("content_type") or ("text/event-stream" if status < 300 else "application/json")
        return bytes_response(request, data, status, ctype, "OK" if status < 300 else "Replay")

    def close(self) -> None:
        pass


class ReplayProvider(Provider):
    """``model`` is the recording directory. ``base_url`` and ``api_key`` are ignored (the recording
    decides both; no request leaves the process). Raises :class:`FileNotFoundError`/:class:`ValueError`
    for a missing or foreign directory and :class:`~hookstream.errors.UnknownPluginError` when the recorded
    provider is not installed."""

    name = "replay"
    default_base_url = ""
    api_key_env = ()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.directory = Path(model)
        self.manifest = load_manifest(self.directory)
        self.calls: list[dict[str, Any]] = list(self.manifest["calls"])
        replay_session = requests.Session()
        adapter = _ReplayAdapter(self)  # one position in the recording, whatever the scheme
        replay_session.mount("http://", adapter)
        replay_session.mount("https://", adapter)
        # Passed as a session given, so the base close() never swaps it for a plain (networked) one.
        super().__init__(model, base_url=None, api_key="replay", session=replay_session)
        inner_cls = get_registry().provider(self.manifest["provider"])
        base_url = "http://replay.invalid" + self.manifest["base_path"]
        self.inner: Provider = inner_cls(self.manifest["model"], base_url=base_url, api_key="replay")

    def _check(self, index: int, path: str, body: bytes) -> str | None:
        if index >= len(self.calls):
            return f"the run made call {index + 1}, the recording has {len(self.calls)}"
        recorded = json.loads((self.directory / self.calls[index]["request"]).read_text("utf-8"))
        if path != recorded["path"]:
            return f"call {index + 1} went to {path}, recorded {recorded['path']}"
        try:
            got = json.loads(body) if body else None
        except ValueError:
            return f"call {index + 1} sent a body that is not JSON"
        diff = first_difference(recorded["json"], got)
        return f"call {index + 1} differs from the recording at {diff}" if diff else None

    def close(self) -> None:
        """Nothing to release: the replay session opens no socket. The provider stays usable, as every
        provider does after ``close()``, at its position in the recording, and still never reaches the
        network."""
        self.inner.close()

    @property
    def priced_as(self) -> str:
        # A replayed call costs what the recorded one did.
        return self.inner.priced_as

    def label(self, model: str | None = None) -> str:
        # A replayed step is named after the recorded provider and model, as the recorded run named it.
        return self.inner.label()

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        # The engine asks for model=<the directory>; the adapter must send the recorded model name.
        return self.inner.build_request(attrs.evolve(request, model=self.manifest["model"]))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        return self.inner.parse_stream(events, context)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        return self.inner.read_error(status, body)
