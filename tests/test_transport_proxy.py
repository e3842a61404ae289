"""Proxies from the environment and the session, with the transport's cached environment settings
(hookstream._stream.transport._environment_settings): a change of a variable or of the session is seen
at the next request. The proxy is a real loopback server receiving absolute-URI requests."""

from __future__ import annotations

import pytest
import requests
from hookstream import Message
from hookstream.events import RunError, TextMessageContent
from hookstream.plugin import CallContext, ModelCall, ModelRequest
from hookstream.testing import LoopbackServer, Response

from conftest import LineProvider, sse

ORIGIN = "http://model.invalid"  # never resolves: a request that skips the proxy fails to connect


def _call(session: requests.Session) -> list[object]:
    provider = LineProvider("m", base_url=ORIGIN, api_key="k")
    return list(ModelCall(provider, ModelRequest("m", [Message.user("hi")]), CallContext("t", "r"), session))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_proxy_variable_set_or_changed_between_requests_is_used(clean_env: pytest.MonkeyPatch) -> None:
    body = sse({"text": "via proxy"}, {"finish": "stop"})
    with LoopbackServer([Response(body), Response(body)]) as proxy:
        session = requests.Session()
        assert isinstance(_call(session)[-1], RunError)  # no proxy yet: model.invalid does not resolve
        clean_env.setenv("HTTP_PROXY", proxy.url)
        events = _call(session)
        assert [e.delta for e in events if isinstance(e, TextMessageContent)] == ["via proxy"]
        assert proxy.requests[0].path == ORIGIN + "/stream"  # an absolute URI: it came as to a proxy
        clean_env.setenv("NO_PROXY", "model.invalid")
        assert isinstance(_call(session)[-1], RunError)
        assert len(proxy.requests) == 1
        clean_env.delenv("NO_PROXY")
        assert not isinstance(_call(session)[-1], RunError)
        assert len(proxy.requests) == 2


def test_the_sessions_own_proxies_and_trust_env_are_read_at_each_request(clean_env: pytest.MonkeyPatch) -> None:
    body = sse({"text": "ok"}, {"finish": "stop"})
    with LoopbackServer([Response(body), Response(body)]) as proxy:
        session = requests.Session()
        clean_env.setenv("HTTP_PROXY", proxy.url)
        session.trust_env = False  # the environment is ignored: no proxy
        assert isinstance(_call(session)[-1], RunError)
        assert proxy.requests == []
        clean_env.delenv("HTTP_PROXY")
        session.trust_env = True
        session.proxies = {"http": proxy.url}
        assert not isinstance(_call(session)[-1], RunError)
        assert len(proxy.requests) == 1
        session.proxies = {}
        assert isinstance(_call(session)[-1], RunError)
        session.proxies["http"] = proxy.url  # changed in place
        assert not isinstance(_call(session)[-1], RunError)
        assert len(proxy.requests) == 2
