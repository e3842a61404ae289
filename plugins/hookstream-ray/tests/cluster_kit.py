"""A two-node Ray cluster on loopback for the executor tests (a fixture module, not a conftest.py: the
repository's tests import their own ``conftest`` by name): a head and a second node process, one CPU
each, started with ``ray start`` in a temporary directory of their own and stopped by killing exactly
the processes they started (``ray stop`` would stop every Ray cluster of this user on the machine).

Without Ray installed the tests skip with a message; with the environment variable ``CI`` set they fail
instead, since CI must run them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# Appended, not prepended: the core's tests folder has a conftest.py of its own.
sys.path.append(str(HERE.parents[2] / "tests"))

from port_kit import AddressInUse, retry_address_in_use, says_in_use  # noqa: E402

# Only keeps a broken start from hanging; never bounds how fast the code is.
START_LIMIT = 180.0


def _require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        message = "Ray is not installed: pip install 'hookstream-ray[ray]' (plugins/hookstream-ray)"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: the Ray tests must run)")
        pytest.skip(message)


def _ray_cli() -> str:
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else (shutil.which("ray") or "ray")


def _started_by(temp_dir: str) -> set[int]:
    """The processes of this cluster: those whose command line names its temp dir, and their children."""
    ours: set[int] = set()
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(") ", 1)[1].split()[1])
        if temp_dir.encode() in cmdline:
            ours.add(pid)
    grew = True
    while grew:
        children = {pid for pid, ppid in parents.items() if ppid in ours} - ours
        ours |= children
        grew = bool(children)
    return ours


def _kill(pids: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1.0)


def _ray_start(cmd: list[str], env: dict[str, str], temp_dir: str | None) -> None:
    """Run one ``ray start``; :class:`AddressInUse` when a port Ray picked was taken by another process
    before Ray bound it (after stopping the processes naming ``temp_dir``: the head's, not given for the
    second node, whose processes name the head's temp dir too), a test failure for any other error."""
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=START_LIMIT)
    if done.returncode == 0:
        return
    output = f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    if says_in_use(output):
        if temp_dir is not None:
            _kill(_started_by(temp_dir))
        raise AddressInUse(output)
    pytest.fail(f"{' '.join(cmd[1:3])} failed:\n{output}")


_running: list[str] = []  # the address of the cluster this session started, while it runs


@pytest.fixture(scope="session", name="ray_cluster")
def ray_cluster_fixture() -> Iterator[str]:
    """Start the cluster; yield its address (``127.0.0.1:PORT``), with ``RAY_ADDRESS`` set to it.

    Every test module that imports this fixture gets its own copy of it (pytest keys fixtures by the
    module that defines them), so the first copy starts the cluster and the others reuse it."""
    _require_ray()
    if _running:
        yield _running[0]
        return
    import ray

    temp_dir = tempfile.mkdtemp(prefix="hsray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = dict(os.environ)
    env.update({
        "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        # A token file another Ray user left in ~/.ray would turn token auth on for the head only.
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    })
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--num-gpus=0", "--memory=1000000000",
              "--object-store-memory=80000000", "--disable-usage-stats"]
    # --port=0: the GCS binds a port of its own and Ray writes the address it got to the temp dir's
    # ray_current_cluster (a port picked here and released could be taken before the GCS bound it).
    head = [_ray_cli(), "start", "--head", "--port=0", "--include-dashboard=false", f"--temp-dir={temp_dir}",
            *common]
    saved = {k: os.environ.get(k) for k in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    try:
        # Ray picks its other ports (node manager, object manager, agents) by bind-and-release itself.
        retry_address_in_use(lambda: _ray_start(head, env, temp_dir), "the Ray head")
        address = (Path(temp_dir) / "ray_current_cluster").read_text().strip()
        node = [_ray_cli(), "start", f"--address={address}", *common]
        retry_address_in_use(lambda: _ray_start(node, env, None), "the second Ray node")
        os.environ["RAY_ADDRESS"] = address
        os.environ["RAY_AUTH_MODE"] = "disabled"
        ray.init(address=address, _node_ip_address="127.0.0.1", log_to_driver=False)
        end = time.monotonic() + START_LIMIT
        while len([n for n in ray.nodes() if n.get("Alive")]) < 2:
            if time.monotonic() > end:
                pytest.fail("the second Ray node never joined")
            time.sleep(0.2)
        # The executor under test joins by itself, from RAY_ADDRESS.
        ray.shutdown()
        _running.append(address)
        yield address
    finally:
        _running.clear()
        if ray.is_initialized():
            ray.shutdown()
        _kill(_started_by(temp_dir))
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp_dir, ignore_errors=True)
