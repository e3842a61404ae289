"""Loopback ports for the test kits that start a child server, without the "pick a free port, release it,
hand it to the child" race (any other process's ``bind(0)`` may take the port in the gap, and under
``pytest -n auto`` with many servers starting it does). Shared by the core's kits and the plugins' kits
(they put this folder on sys.path), in the order the kits prefer them:

- the child binds port 0 itself and the kit reads back the port it got: from the child's own output, or,
  for a child that does not say, from the sockets it listens on (:func:`listening_ports`);
- a child that cannot bind 0 (PostgreSQL, Phoenix, Ray's fixed ports) is started on :func:`free_port` and
  started again on a new one when it reports the address in use (:func:`retry_address_in_use`);
- a port that must refuse connections is held bound without listening for as long as it is used
  (:func:`refused_port`), so no other process can start listening there meanwhile.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import psutil

__all__ = ["IN_USE_MARKERS", "AddressInUse", "free_port", "listening_ports", "refused_port",
           "retry_address_in_use"]

T = TypeVar("T")
# How a child server says its port was taken: the OS's strerror (PostgreSQL, uvicorn, Ray's Python),
# Node's error code, gRPC's wording.
IN_USE_MARKERS = ("address already in use", "eaddrinuse", "failed to bind", "is already in use")
ATTEMPTS = 5


class AddressInUse(Exception):
    """A child server could not listen because another process took its port first; ``log`` is what it said."""

    def __init__(self, log: str) -> None:
        super().__init__(log[-2000:])
        self.log = log


def says_in_use(log: str) -> bool:
    """Whether a child server's output reports its listening address taken."""
    low = log.lower()
    return any(marker in low for marker in IN_USE_MARKERS)


def free_port() -> int:
    """A loopback port free a moment ago. Racy by nature: only for a start wrapped in
    :func:`retry_address_in_use`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def retry_address_in_use(start: Callable[[], T], what: str, attempts: int = ATTEMPTS) -> T:
    """``start()`` again (it picks new ports each time) while it raises :class:`AddressInUse`, at most
    ``attempts`` times; then an ``AssertionError`` naming ``what`` and the last output."""
    for _ in range(attempts - 1):
        try:
            return start()
        except AddressInUse:
            continue
    try:
        return start()
    except AddressInUse as last:
        raise AssertionError(f"{what}: its port was taken by another process {attempts} times in a row:\n"
                             f"{last.log[-2000:]}") from None


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` and its descendants listen on (empty once it is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    ports: set[int] = set()
    for proc in procs:
        try:
            # net_connections() is psutil 6's name for connections(); requirements/test.txt allows 5.9.
            conns = getattr(proc, "net_connections", proc.connections)(kind="tcp")
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        ports |= {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
    return ports


@contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole block: bound, never listening (the kernel
    answers a connect with RST), and held, so no other process can start listening on it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])
