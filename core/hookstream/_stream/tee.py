"""requests transport adapters that see a response's raw bytes, or answer without a socket.

* :class:`TeeRaw` wraps urllib3's response so every byte the transport reads is also written to a sink
  (the recorder's file, a run plugin's buffer through ``ModelCallContext.on_body``).
* :func:`tee_session`: a ``requests.Session`` whose responses are teed to sinks a callback opens per
  request.
* :func:`bytes_response` / :func:`body_session`: a ``requests.Response`` (a session answering every
  request) built from bytes in memory, read by the real transport and adapter exactly as a live body
  would be (the ``replay`` provider, a response cache's hit).

Thread safety: a :class:`TeeRaw` belongs to one response; sessions are as thread-safe as requests'.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, Protocol

import requests
import requests.adapters
import urllib3
from requests.structures import CaseInsensitiveDict

__all__ = ["Sink", "TeeRaw", "body_session", "bytes_response", "tee_session"]


class Sink(Protocol):
    """Where teed bytes go: ``write(bytes)`` as they are read, ``close()`` once at the end."""

    def write(self, data: bytes, /) -> Any: ...

    def close(self) -> None: ...


class TeeRaw:
    """Wraps urllib3's response so every byte the transport reads is also written to ``sink``."""

    def __init__(self, raw: Any, sink: Sink) -> None:
        self._raw = raw
        self._sink = sink

    def read1(self, amt: int = -1) -> bytes:
        data: bytes = self._raw.read1(amt)
        self._sink.write(data)
        return data

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        data: bytes = self._raw.read(amt, *args, **kwargs)
        self._sink.write(data)
        return data

    def read_chunked(self, amt: int | None = None, decode_content: bool | None = None) -> Any:
        for chunk in self._raw.read_chunked(amt, decode_content=decode_content):
            self._sink.write(chunk)
            yield chunk

    def stream(self, amt: int = 65536, decode_content: bool | None = None) -> Any:
        for chunk in self._raw.stream(amt, decode_content=decode_content):
            self._sink.write(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            self._sink.close()

    def release_conn(self) -> None:
        self._sink.close()
        self._raw.release_conn()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _TeeAdapter(requests.adapters.HTTPAdapter):
    def __init__(self, open_sink: Callable[[requests.PreparedRequest, requests.Response], Sink | None]) -> None:
        super().__init__()
        self._open_sink = open_sink

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        response = super().send(request, *args, **kwargs)
        sink = self._open_sink(request, response)
        if sink is not None:
            response.raw = TeeRaw(response.raw, sink)
        return response


class _TeeSession(requests.Session):
    """Sends through ``base`` (its adapters, its ``send`` override, its settings), tees each response."""

    def __init__(self, base: requests.Session,
                 open_sink: Callable[[requests.PreparedRequest, requests.Response], Sink | None]) -> None:
        super().__init__()
        self._base, self._open_sink = base, open_sink
        self.trust_env, self.proxies, self.verify, self.cert = base.trust_env, base.proxies, base.verify, base.cert

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        return self._base.prepare_request(request)

    def merge_environment_settings(self, *args: Any, **kwargs: Any) -> Any:
        return self._base.merge_environment_settings(*args, **kwargs)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        response = self._base.send(request, **kwargs)
        sink = self._open_sink(request, response)
        if sink is not None:
            response.raw = TeeRaw(response.raw, sink)
        return response

    def close(self) -> None:
        pass  # the base session (a provider's pool) is its owner's to close


def tee_session(open_sink: Callable[[requests.PreparedRequest, requests.Response], Sink | None],
                base: requests.Session | None = None) -> requests.Session:
    """A new session whose HTTP(S) responses are teed to ``open_sink(request, response)`` (``None``: not
    teed). With ``base``, requests go through ``base`` (its transport adapters, such as a fake model's
    in-process one, a batch's rate limit, its proxies) and closing the tee leaves ``base`` open; without
    it, through adapters of its own. The caller closes it."""
    if base is not None:
        return _TeeSession(base, open_sink)
    session = requests.Session()
    adapter = _TeeAdapter(open_sink)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def bytes_response(request: requests.PreparedRequest, data: bytes, status: int, content_type: str,
                   reason: str = "OK") -> requests.Response:
    """A streaming ``requests.Response`` to ``request`` with body ``data``, HTTP ``status`` (no socket)."""
    raw = urllib3.HTTPResponse(body=io.BytesIO(data), headers={"content-type": content_type}, status=status,
                               preload_content=False, decode_content=False, request_url=request.url)
    response = requests.Response()
    response.status_code = status
    response.headers = CaseInsensitiveDict({"content-type": content_type})
    response.raw = raw
    response.url = request.url or ""
    response.request = request
    response.reason = reason
    response.encoding = "utf-8"
    return response


class _BodyAdapter(requests.adapters.BaseAdapter):
    def __init__(self, data: bytes, content_type: str, status: int) -> None:
        super().__init__()
        self._data, self._ctype, self._status = data, content_type, status

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        return bytes_response(request, self._data, self._status, self._ctype)

    def close(self) -> None:
        pass


def body_session(data: bytes, content_type: str, status: int = 200) -> requests.Session:
    """A session answering every request with ``data`` (``content_type``, ``status``), without a socket."""
    session = requests.Session()
    adapter = _BodyAdapter(data, content_type, status)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
