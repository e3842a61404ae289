"""A known API key never shows up: every error path and the debug log are run with it, and every
repr, log record, exception text, event and recorded request path is scanned for it."""

from __future__ import annotations

import logging
import traceback

import pytest
from faultkit import recording_tool, run_chat
from hookstream import get_registry
from hookstream.events import to_json
from hookstream.testing.faults import FAULTS, FaultServer
from hookstream.testing.provider_bodies import PROVIDERS

KEY = "sk-SECRET-hookstream-0123456789abcdef"
PATHS = [f for f in FAULTS if f not in ("slow", "huge_line", "stall_keepalive", "utf8_split")]


def _scan(text: str, where: str) -> None:
    assert KEY not in text, f"API key leaked in {where}: {text[:300]!r}"
    assert KEY[8:30] not in text, f"part of the API key leaked in {where}"


@pytest.mark.parametrize("fault", PATHS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_api_key_never_leaks(provider: str, fault: str, caplog: pytest.LogCaptureFixture) -> None:
    if provider not in get_registry().names("providers"):
        pytest.skip(f"provider {provider!r} is not installed")
    caplog.set_level(logging.DEBUG)
    _, get_weather = recording_tool()
    with FaultServer(provider, fault, stall_seconds=0.5) as srv:
        events, stream = run_chat(provider, srv.base_url, [get_weather], api_key=KEY,
                                  read_timeout=0.25 if fault.startswith("stall") else 5.0)
        # The key did reach the server (so the scan below is meaningful), in a header only.
        assert any(KEY in " ".join(r.headers.values()) for r in srv.requests)
        for r in srv.requests:
            _scan(r.path, "request URL")
    result = stream.result()
    for ev in events:
        _scan(repr(ev), "event repr")
        _scan(to_json(ev), "event JSON")
    _scan(repr(result), "result repr")
    _scan(repr(stream), "stream repr")
    engine = getattr(stream, "engine", stream)
    _scan(repr(getattr(engine, "provider", "")), "provider repr")
    if result.error is not None:
        _scan(str(result.error), "exception text")
        _scan(repr(result.error), "exception repr")
        _scan("".join(traceback.format_exception(result.error)), "traceback")
        _scan(repr(vars(result.error)), "exception attributes")
    for record in caplog.records:
        _scan(record.getMessage(), f"log record {record.name}")
        if record.exc_info:
            _scan("".join(traceback.format_exception(*record.exc_info)), "logged traceback")
