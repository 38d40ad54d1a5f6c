"""Auto-pause on the process runtime stops the sandbox's processes, as ``pause()`` does:
"the control plane pauses it automatically — identically to calling ``pause()`` manually"
(TS ``docs/explanation/lifecycle.md``). Before, only the status changed (at the next read) and
a daemon ran on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _process_runtime import api_sh, machine, until
from test_process_vm import DAEMON, sleeps, state

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock

if TYPE_CHECKING:
    import httpx

    from tests._fakes import MakeFake

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]


@pytest_asyncio.fixture(name="fake")
async def _fake(make_fake: MakeFake) -> FakeCreateOS:
    """Time moves only when the test says (the daemon must run before the sandbox idles)."""
    clock = VirtualClock(autojump=False)
    immediate = TransitionPolicy.immediate()
    return await make_fake(clock=clock, transitions=immediate, runtime="process")


async def test_auto_pause_stops_a_daemon_and_resume_continues_it(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox(auto_pause_after_seconds=60)
    await api_sh(client, sandbox_id, DAEMON)
    found = machine(fake, sandbox_id)
    await until(lambda: len(sleeps(found, 313)) == 1)
    [daemon] = sleeps(found, 313)
    assert state(daemon) != "T"
    assert isinstance(fake.clock, VirtualClock)
    fake.clock.advance(61)  # idle past the setting: no request meanwhile
    await until(lambda: state(daemon) == "T")  # stopped, as pause() stops it
    transitions = [e.detail for e in fake.journal.transitions(sandbox_id)]
    assert transitions[-2:] == ["running -> pausing", "pausing -> paused"]
    resumed = await client.post(f"/v1/sandboxes/{sandbox_id}/resume")
    assert resumed.status_code == 200
    await until(lambda: state(daemon) != "T")
