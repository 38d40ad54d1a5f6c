"""A fork bomb in one process-runtime sandbox hits its ``pids`` cgroup, not the host.

The flood inside gets ``EAGAIN`` from ``fork`` while another sandbox keeps running
commands; destroy, reset and the fake's close leave no process and no cgroup behind.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _process_runtime import process_fake, until

from fake_server.runtime.process import ProcessMachine
from fake_server.runtime.process.containment import cgroups

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from fake_server import FakeCreateOS

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        isinstance(cgroups.hierarchy(), str) or "pids" not in cgroups.hierarchy().dirs,  # type: ignore[union-attr]
        reason="no pids cgroup here",
    ),
]

#: A small limit keeps the flood short; the mechanism is the one ``PIDS`` uses.
SMALL = 40
#: Forks sleepers until ``fork`` fails (bounded: never more than 4x the limit), then the errno.
FLOOD = (
    f"import errno, os, time\nLIMIT = {SMALL}\n"
    "n = 0\n"
    "try:\n"
    "    while n < 4 * LIMIT:\n"
    "        if os.fork() == 0:\n"
    "            os.closerange(0, 3)  # a daemon: the exec ends without it\n"
    "            time.sleep(300)\n"
    "            os._exit(0)\n"
    "        n += 1\n"
    "    print('unbounded', n)\n"
    "except OSError as exc:\n"
    "    print(errno.errorcode[exc.errno], n < LIMIT)\n"
)


@pytest_asyncio.fixture(name="fake")
async def _fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeCreateOS]:
    monkeypatch.setattr(cgroups, "PIDS", SMALL)
    async with process_fake() as fake:
        yield fake
    assert _groups() == []


def _root() -> Path:
    found = cgroups.hierarchy()
    assert not isinstance(found, str)
    return found.dirs["pids"]


def _groups() -> list[Path]:
    """This process's sandbox ``pids`` cgroups still on the host."""
    return sorted(_root().glob(f"createos-fake-{os.getpid()}-*"))


async def _exec(client: httpx.AsyncClient, sandbox_id: str, *args: str) -> dict[str, Any]:
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        json={"cmd": args[0], "args": list(args[1:])},
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["data"]["result"]
    return result


def _machine(fake: FakeCreateOS, sandbox_id: str) -> ProcessMachine:
    found = fake.sandbox(sandbox_id).machine
    assert isinstance(found, ProcessMachine)
    return found


@pytest.mark.asyncio
async def test_a_fork_flood_stops_at_the_limit_and_other_sandboxes_keep_running(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    bombed, other = await make_sandbox(), await make_sandbox()
    flood = await _exec(client, bombed, "python3", "-c", FLOOD)
    assert (flood["exit_code"], flood["stdout"]) == (0, "EAGAIN True\n")
    found = _machine(fake, bombed)
    group = found.cgroup.path
    assert group is not None
    assert (group / "pids.max").read_text() == f"{SMALL}\n"
    # the sleepers hold the group full (beside them: the init, the exec and its wrappers)
    assert len(found.cgroup.members()) >= SMALL - 6
    assert (await _exec(client, other, "echo", "ok"))["stdout"] == "ok\n"
    members = [found.guest.pid, *found.cgroup.members()]
    assert (await client.delete(f"/v1/sandboxes/{bombed}")).status_code in (200, 202)
    await until(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in members))
    assert not group.exists()
    assert _groups() == [_machine(fake, other).cgroup.path]


@pytest.mark.asyncio
async def test_reset_removes_every_sandbox_cgroup(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    await _exec(client, sandbox_id, "sh", "-c", "nohup setsid sleep 313 >/dev/null 2>&1 &")
    group = _machine(fake, sandbox_id).cgroup.path
    assert group is not None
    assert group in _groups()
    fake.reset()
    assert _groups() == []


def test_the_groups_of_a_fake_that_died_are_swept_and_live_ones_kept() -> None:
    root = _root()
    dead = int(Path("/proc/sys/kernel/pid_max").read_text())  # never a live process's pid
    stale = root / f"createos-fake-{dead}-1"
    mine = root / f"createos-fake-{os.getpid()}-999999"
    stale.mkdir()
    mine.mkdir()
    try:
        cgroups.sweep(root)  # (another fake's sweep may take a dead group first: same result)
        assert not stale.exists()
        assert mine.exists()
    finally:
        for path in (stale, mine):
            if path.exists():
                path.rmdir()
