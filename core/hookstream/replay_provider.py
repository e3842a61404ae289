"""The ``replay`` provider: plays a recording directory (:mod:`hookstream.record`) back, offline.

``chat("replay:path/to/recording", prompt, tools=[...])`` runs the agent as it ran when recorded: the
recorded responses are served in order by a loopback HTTP server and read by the real adapter named
in the recording (``openai``, ``anthropic``...) through the real transport. The server checks that each
request the run sends still matches the recorded one (path and JSON body); a request that differs is
answered ``400`` naming the first difference, so the run ends with ``RUN_ERROR`` code ``bad_request``
and the test that replays it fails with a reason instead of passing on stale data.

Registered through the ``hookstream`` entry-point group as ``replay = hookstream.replay_provider``.

Thread safety: a ReplayProvider owns one loopback server and one position in the recording: share it
only across the calls of one run (``chat`` creates a new one per run).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .events import BaseEvent
from .hookspecs import hookimpl
from .provider import CallContext, HTTPRequest, ModelRequest, Provider, Secret
from .record import load_manifest
from .testing.server import CapturedRequest, LoopbackServer, Response

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


class ReplayProvider(Provider):
    """``model`` is the recording directory. ``base_url`` and ``api_key`` are ignored (the recording
    decides both). Raises :class:`FileNotFoundError`/:class:`ValueError` for a missing or foreign
    directory and :class:`~hookstream.errors.UnknownPluginError` when the recorded provider is not
    installed."""

    name = "replay"
    default_base_url = ""
    api_key_env = ()

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | Secret | None = None) -> None:
        super().__init__(model, base_url=None, api_key="replay")
        from .registry import get_registry

        self.directory = Path(model)
        self.manifest = load_manifest(self.directory)
        self.calls: list[dict[str, Any]] = list(self.manifest["calls"])
        self._inner_cls = get_registry().provider(self.manifest["provider"])
        self._server: LoopbackServer | None = None
        self._inner: Provider | None = None

    @property
    def inner(self) -> Provider:
        """The real adapter, pointed at the loopback server (started on first use)."""
        if self._inner is None:
            responses = [
                Response((self.directory / c["response"]).read_bytes(), status=int(c.get("status", 200)),
                         fragment=(1, 4096))
                for c in self.calls
            ] or [Response(b"", status=500)]
            self._server = LoopbackServer(responses, check=self._check).start()
            weakref.finalize(self, self._server.stop)
            base_url = self._server.url + self.manifest["base_path"]
            self._inner = self._inner_cls(self.manifest["model"], base_url=base_url, api_key="replay")
        return self._inner

    def _check(self, index: int, request: CapturedRequest) -> str | None:
        if index >= len(self.calls):
            return f"the run made call {index + 1}, the recording has {len(self.calls)}"
        recorded = json.loads((self.directory / self.calls[index]["request"]).read_text("utf-8"))
        if request.path.split("?", 1)[0] != recorded["path"]:
            return f"call {index + 1} went to {request.path}, recorded {recorded['path']}"
        diff = first_difference(recorded["json"], request.json())
        return f"call {index + 1} differs from the recording at {diff}" if diff else None

    def build_request(self, request: ModelRequest) -> HTTPRequest:
        # The engine asks for model=<the directory>; the adapter must send the recorded model name.
        return self.inner.build_request(attrs.evolve(request, model=self.manifest["model"]))

    def parse_stream(self, events: Iterable[Any], context: CallContext) -> Iterator[BaseEvent]:
        return self.inner.parse_stream(events, context)

    def read_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        return self.inner.read_error(status, body)

    def close(self) -> None:
        """Stop the loopback server now (it also stops when the provider is garbage-collected)."""
        if self._server is not None:
            self._server.stop()


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    register("replay", ReplayProvider)
