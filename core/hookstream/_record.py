"""Recordings: each model call's request and raw response bytes saved to a directory, for offline replay.

:class:`Recorder` gives a ``requests.Session`` (pass it to :func:`hookstream.get_model` as ``session=``)
whose transport adapter writes, per HTTP call::

    DIR/manifest.json          {"format": "hookstream-recording/1", "provider": "openai",
                                "model": "gpt-4o-mini", "base_path": "/v1",
                                "calls": [{"request": "001-request.json", "response": "001-response.sse",
                                           "status": 200}, ...]}
    DIR/001-request.json       {"method", "url", "path", "headers", "json"}   (secrets removed)
    DIR/001-response.sse       the response body exactly as the socket delivered it

Secrets never reach the directory: auth headers (``Authorization``, ``x-api-key``, ``x-goog-api-key``...)
are dropped, the URL loses its query string (Gemini's ``key=``) through
:meth:`hookstream.plugin.HTTPRequest.redacted_url`, and any secret value that also appears elsewhere
in the request is replaced by ``***``. The manifest is rewritten after every call, so a run that fails
midway still leaves a usable recording of the calls before the failure.

The ``replay`` provider (the hookstream-replay plugin) plays a directory back: ``chat("replay:DIR",
...)``.

Thread safety: one Recorder may serve the session of one run at a time; its calls are numbered under a
lock, so concurrent calls on the same session are recorded without clobbering each other.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
import requests.adapters

from ._secrets import SECRET_HEADERS as _SECRET_HEADERS
from ._stream.tee import TeeRaw
from ._stream.transport import HTTPRequest

__all__ = ["FORMAT", "Recorder", "load_manifest"]

FORMAT = "hookstream-recording/1"
_SECRET_QUERY = frozenset({"key", "api_key", "api-key", "access_token"})


def load_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a recording directory, ``DIR/manifest.json`` as this module's docstring shows it
    (``format``, ``provider``, ``model``, ``calls``). Raises :class:`FileNotFoundError` when there is none and
    :class:`ValueError` for one that is not JSON or of another format."""
    path = Path(directory) / "manifest.json"
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        what = "no such directory" if not Path(directory).is_dir() else "it has no manifest.json"
        raise FileNotFoundError(f"no recording in {str(directory)!r} ({what}); record one with "
                                f"hookstream chat PROMPT --model PROVIDER:MODEL --record {directory}") from None
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} manifest")
    return doc


class _RecordingAdapter(requests.adapters.HTTPAdapter):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self._recorder = recorder

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        index = self._recorder._next_index()
        self._recorder._write_request(index, request)
        response = super().send(request, *args, **kwargs)
        sink = open(self._recorder.directory / f"{index:03d}-response.sse", "wb")
        response.raw = TeeRaw(response.raw, sink)
        self._recorder._add_call(index, response.status_code, response.headers.get("content-type"))
        return response


class Recorder:
    """Records the model calls made through :meth:`session` into ``directory`` (created if needed).

    ``model`` is the ``"PROVIDER:MODEL"`` string of the run (its provider names the adapter the replay
    uses); ``base_url`` the API root the run uses (``None``: the provider's default), whose path the
    replay serves under. Raises :class:`ValueError` for a ``model`` without a provider prefix and
    :class:`FileExistsError` when ``directory`` already holds a recording (pass ``overwrite=True``).
    """

    def __init__(self, directory: str | os.PathLike[str], model: str, base_url: str | None = None,
                 *, overwrite: bool = False) -> None:
        provider, sep, model_name = model.partition(":")
        if not sep or not provider or not model_name:
            raise ValueError(f"model must be 'PROVIDER:MODEL', got {model!r}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        if (self.directory / "manifest.json").exists():
            if not overwrite:
                raise FileExistsError(f"{self.directory} already holds a recording")
            for old in self.directory.glob("[0-9][0-9][0-9]-*"):
                old.unlink()
        if base_url is None:
            from ._registry import get_registry

            base_url = str(getattr(get_registry().provider(provider), "default_base_url", ""))
        self.manifest: dict[str, Any] = {"format": FORMAT, "provider": provider, "model": model_name,
                                         "base_path": urlsplit(base_url or "").path.rstrip("/"), "calls": []}
        self._lock = threading.Lock()
        self._count = 0
        self._save()

    def session(self) -> requests.Session:
        """A new ``requests.Session`` whose HTTP and HTTPS calls are recorded."""
        s = requests.Session()
        adapter = _RecordingAdapter(self)
        s.mount("http://", adapter)
        s.mount("https://", adapter)
        return s

    # -- internals ----------------------------------------------------------------------------------
    def _next_index(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def _write_request(self, index: int, request: requests.PreparedRequest) -> None:
        body = request.body or b""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        headers = {k: v for k, v in request.headers.items()}
        url = request.url or ""
        # Every secret value (auth headers, key-like query parameters) is dropped, and scrubbed from
        # anywhere else it might appear (a provider echoing the key in the body would otherwise leak).
        secrets = [v.split(" ", 1)[-1] for k, v in headers.items() if k.lower() in _SECRET_HEADERS]
        secrets += [v for k, v in parse_qsl(urlsplit(url).query) if k.lower() in _SECRET_QUERY]
        secrets = [s for s in secrets if len(s) >= 4]
        for secret in secrets:
            text = text.replace(secret, "***")
        try:
            doc: Any = json.loads(text) if text else None
        except ValueError:
            doc = text
        safe = HTTPRequest(url, doc if isinstance(doc, dict) else {}, headers, request.method or "POST")
        kept = {k: v for k, v in safe.redacted_headers().items()
                if k.lower() not in _SECRET_HEADERS and k.lower() not in ("content-length", "connection")}
        record = {"method": safe.method, "url": safe.redacted_url(), "path": urlsplit(url).path,
                  "headers": kept, "json": doc}
        (self.directory / f"{index:03d}-request.json").write_text(
            json.dumps(record, ensure_ascii=False, indent=1), "utf-8")

    def _add_call(self, index: int, status: int, content_type: str | None = None) -> None:
        call: dict[str, Any] = {"request": f"{index:03d}-request.json", "response": f"{index:03d}-response.sse",
                                "status": status}
        if content_type:
            call["content_type"] = content_type  # NDJSON and AWS event-stream bodies replay as what they are
        with self._lock:
            self.manifest["calls"].append(call)
            self.manifest["calls"].sort(key=lambda c: c["request"])
            self._save()

    def _save(self) -> None:
        tmp = self.directory / "manifest.json.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=1), "utf-8")
        os.replace(tmp, self.directory / "manifest.json")
