"""A provider timeout fires on the process runtime as on the service (docs/time.md, rule 8).

Before, fake time stood still while a real program ran: ``sleep 20`` with ``timeout_ms=1000``
ran 20 real seconds and came back ``timed_out=False`` (``sleep 1000`` hung the test). Now fake
time follows real time while the program runs: the deadline comes after a real second, the
tree is killed, the output so far is kept.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_createos import RunSync, VirtualClock
    from pytest_createos.provider import CreateosProvider, Environment, Lease

#: Real programs: in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.createos(runtime="process")]

#: Real seconds a call may take before the test fails instead of hanging.
BOUND = 15.0


def _running(argument: str) -> list[int]:
    """Pids of ``sleep argument`` (the sandbox's pid namespace is visible from here)."""
    wanted = f"sleep\0{argument}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("seconds", ["20", "1000"])
@pytest.mark.asyncio
async def test_a_timeout_fires_kills_the_tree_and_keeps_the_output(
    createos_provider: CreateosProvider,
    createos_env: Environment,
    createos_lease: Lease,
    createos_clock: VirtualClock,
    seconds: str,
) -> None:
    argument = f"{seconds}.{os.getpid()}"  # unique among tests running at the same time
    start = createos_clock.now()
    result = await asyncio.wait_for(
        createos_provider.execute(
            createos_env,
            createos_lease,
            "bash",
            ["-c", f"echo started; sleep {argument}; echo never"],
            timeout_ms=1000,
        ),
        BOUND,
    )
    elapsed = createos_clock.now() - start
    assert (result.timed_out, result.exit_code, result.stdout) == (True, None, "started\n")
    assert 1.0 <= elapsed < float(seconds)  # at its deadline, long before the program ends
    assert _running(argument) == []  # the tree is gone, the sleep with it


def test_a_timeout_fires_in_a_sync_test(
    createos_provider: CreateosProvider,
    createos_env: Environment,
    createos_lease: Lease,
    createos_run: RunSync,
) -> None:
    """The issue's own call, from a sync test: ``sleep 20`` with ``timeout_ms=1000``."""
    result = createos_run(
        createos_provider.execute(createos_env, createos_lease, "sleep", ["20"], timeout_ms=1000),
        timeout=BOUND,
    )
    assert (result.timed_out, result.exit_code) == (True, None)


@pytest.mark.asyncio
async def test_fake_time_stops_following_real_time_once_the_program_ends(
    createos_provider: CreateosProvider,
    createos_env: Environment,
    createos_lease: Lease,
    createos_clock: VirtualClock,
) -> None:
    """A quick program leaves time to the autojump again: a realistic-length wait after it
    takes no real time (the command's own real time is all that passed)."""
    result = await createos_provider.execute(createos_env, createos_lease, "true")
    assert result.exit_code == 0
    assert not createos_clock.following_real_time
    before = createos_clock.now()
    await asyncio.wait_for(createos_clock.sleep(3600), BOUND)
    assert createos_clock.now() == before + 3600
