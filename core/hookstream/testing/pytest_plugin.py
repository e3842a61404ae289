"""hookstream's testing kit as a pytest plugin (entry point ``pytest11: hookstream``), for plugin authors.

Installed with hookstream; pytest loads it automatically (disable with ``-p no:hookstream``). Fixtures,
all function-scoped and cleaned up after the test:

``hookstream_server(responses, *, check=None, seed=0) -> LoopbackServer``
    A started loopback provider server (:class:`~hookstream.testing.LoopbackServer`): scripted
    :class:`~hookstream.testing.Response` s in order (the last repeats), optional ``fragment`` splitting
    and ``delay``, and request capture in ``server.requests``.
``hookstream_fault_server(provider, fault, **options) -> FaultServer``
    A started :class:`~hookstream.testing.FaultServer` playing ``provider``'s stream with a fault
    injected (``close_mid_args``, ``http_429``, ``utf8_split``...). Skips when the faults module is absent.
``hookstream_recorder(model, base_url=None) -> Recorder``
    A :class:`~hookstream.Recorder` writing into a fresh temporary directory (``.directory``);
    pass ``recorder.session()`` to ``get_model(..., session=...)``.
``hookstream_replay(directory, messages, **chat_kwargs) -> (events, RunResult)``
    Runs ``chat("replay:DIRECTORY", ...)`` to the end: the recording played through its real adapter,
    each request checked against the recorded one (the provider is the hookstream-replay plugin's).
``hookstream_check_events(events, form="auto") -> list``
    The event grammar checker (:func:`~hookstream.testing.check_events`); raises ``GrammarError``.
``hookstream_conformance(provider, prefixes, *, fragment=None, seed=0) -> dict[str, list[str]]``
    The provider conformance runner over the shared corpus (``--hookstream-corpus PATH`` or
    ``$HOOKSTREAM_CORPUS``, else ``../shared/provider-streams``): recording name -> mismatches (empty
    lists when the adapter conforms). When no corpus is found the test is skipped with where it was
    looked for, or fails when the environment variable ``CI`` is set
    (:func:`~hookstream.testing.conformance.shared_missing`).

Thread safety: each fixture value belongs to one test; servers run on their own daemon threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .grammar import check_events
from .server import LoopbackServer, Response

__all__ = ["pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hookstream", "hookstream testing kit")
    group.addoption("--hookstream-corpus", default=None, metavar="PATH",
                    help="Recorded provider-stream corpus for hookstream_conformance (default: $HOOKSTREAM_CORPUS "
                         "or ../shared/provider-streams beside the repository).")


@pytest.fixture
def hookstream_server() -> Iterator[Callable[..., LoopbackServer]]:
    servers: list[LoopbackServer] = []

    def start(responses: Sequence[Response] | Response | bytes, *,
              check: Callable[..., str | None] | None = None, seed: int = 0) -> LoopbackServer:
        server = LoopbackServer(responses, check=check, seed=seed).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def hookstream_fault_server() -> Iterator[Callable[..., Any]]:
    from .faults import FaultServer

    servers: list[Any] = []

    def start(provider: str, fault: str = "none", **options: Any) -> Any:
        server = FaultServer(provider, fault, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def hookstream_recorder(tmp_path: Path) -> Callable[..., Any]:
    from .._record import Recorder

    def make(model: str, base_url: str | None = None) -> Recorder:
        return Recorder(tmp_path / "recording", model, base_url)

    return make


@pytest.fixture
def hookstream_replay() -> Callable[..., Any]:
    from .._chat import chat

    def replay(directory: str | os.PathLike[str], messages: Any, **chat_kwargs: Any) -> tuple[list[Any], Any]:
        stream = chat(f"replay:{Path(directory)}", messages, **chat_kwargs)
        events = list(stream)
        return events, stream.result()

    return replay


@pytest.fixture
def hookstream_check_events() -> Callable[..., list[Any]]:
    return check_events


@pytest.fixture
def hookstream_conformance(request: pytest.FixtureRequest) -> Callable[..., dict[str, list[str]]]:
    from .conformance import check_recording, recordings, require_corpus, shared_missing

    option = request.config.getoption("--hookstream-corpus", default=None)

    def run(provider: str, prefixes: Iterable[str], *, fragment: tuple[int, int] | None = None,
            seed: int = 0) -> dict[str, list[str]]:
        if option:
            corpus = Path(option)
            if not corpus.is_dir():
                shared_missing(f"--hookstream-corpus {option} is not a directory")
        else:
            corpus = require_corpus(Path(str(request.config.rootpath)))
        found = recordings(corpus, tuple(prefixes))
        if not found:
            shared_missing(f"the corpus {corpus} has no recordings for {sorted(prefixes)}")
        return {rec.name: check_recording(provider, rec, fragment=fragment, seed=seed) for rec in found}

    return run
