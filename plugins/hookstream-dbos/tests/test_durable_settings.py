"""``Durable(...)`` checks every setting when it is built: a wrong type or a value out of range is a
:class:`~hookstream_dbos.DurableSettingsError` (under :class:`hookstream.errors.HookstreamError`, and a
``TypeError``/``ValueError`` as the built-in checks it stands for), by keyword, by name with its settings
and on assignment; a database URL's password is never in the message or the repr."""

from __future__ import annotations

from typing import Any

import pytest
from hookstream import chat
from hookstream.errors import HookstreamError
from hookstream_dbos import Durable, DurableSettingsError

BAD = [
    ({"id": ""}, "id"),
    ({"id": 42}, "id"),
    ({"id": None}, "id"),
    ({"id": "a\0b"}, "id"),
    ({"db": 5}, "db"),
    ({"db": ""}, "db"),
    ({"db": "mysql://app:hunter2-pw@db/app"}, "db"),
    ({"db": "durable.sqlite"}, "db"),
    ({"meta": ["argv"]}, "meta"),
    ({"meta": {1: "x"}}, "meta"),
    ({"meta": {"when": object()}}, "meta"),
    ({"wait": 0}, "wait"),
    ({"wait": -1.5}, "wait"),
    ({"wait": float("nan")}, "wait"),
    ({"wait": float("inf")}, "wait"),
    ({"wait": 10**400}, "wait"),
    ({"wait": True}, "wait"),
    ({"wait": "60"}, "wait"),
    ({"max_tool_stream": -1}, "max_tool_stream"),
    ({"max_tool_stream": 1.5}, "max_tool_stream"),
    ({"max_tool_stream": "1000"}, "max_tool_stream"),
    ({"max_tool_stream": False}, "max_tool_stream"),
]


@pytest.mark.parametrize(("settings", "name"), BAD, ids=[f"{n}-{v!r:.20}" for s, n in BAD for v in s.values()])
def test_a_bad_setting_is_refused_at_construction(settings: dict[str, Any], name: str) -> None:
    with pytest.raises(DurableSettingsError, match=rf"Durable\.{name} ") as raised:
        Durable(**{"id": "settings", **settings})
    assert isinstance(raised.value, HookstreamError) and raised.value.code == "durable_settings"
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)
    assert "hunter2-pw" not in str(raised.value)


@pytest.mark.parametrize(("settings", "name"), BAD[:1] + BAD[11:12] + BAD[18:19])
def test_a_bad_setting_by_name_is_refused_before_the_run(settings: dict[str, Any], name: str) -> None:
    with pytest.raises(DurableSettingsError, match=rf"Durable\.{name} "):
        chat("test", "hi", plugins=[("durable", {"id": "settings", **settings})])


def test_a_bad_assignment_is_refused_and_good_settings_are_kept() -> None:
    durable = Durable("settings", "postgresql://app:hunter2-pw@db.example/app", {"argv": ["chat", "hi"]}, wait=None,
                      max_tool_stream=0)
    assert "hunter2-pw" not in repr(durable) and "db.example" in repr(durable)
    assert Durable("settings", "sqlite:///x.sqlite", wait=1).wait == 1
    assert Durable("settings", "postgresql+psycopg://app@db/app", wait=0.5).db == "postgresql+psycopg://app@db/app"
    with pytest.raises(DurableSettingsError, match=r"Durable\.wait "):
        durable.wait = -1
    with pytest.raises(DurableSettingsError, match=r"Durable\.max_tool_stream "):
        durable.max_tool_stream = -1
    assert durable.wait is None and durable.max_tool_stream == 0
