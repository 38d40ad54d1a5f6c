"""The fake's clock follows real time while a process-runtime program runs, not otherwise.

A running program holds the flow (docs/time.md, rule 8); a paused sandbox's programs are
stopped, so its pause gives the flow back until the resume; an exit or a kill ends it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
from _process_runtime import until

from fake_server import VirtualClock

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

pytestmark = [pytest.mark.asyncio, pytest.mark.reliability]

MakeSandbox = Callable[..., Awaitable[str]]


def _flowing(fake: FakeCreateOS) -> bool:
    clock = fake.clock
    assert isinstance(clock, VirtualClock)
    return clock.following_real_time


async def test_a_running_program_makes_time_flow_until_paused_killed_or_done(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    assert not _flowing(fake)
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    created = await client.post(base, json={"cmd": "/bin/sleep", "args": ["300"]})
    assert created.status_code == 201, created.text
    process_id = created.json()["data"]["process_id"]
    await until(lambda: _flowing(fake))
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    assert not _flowing(fake)  # stopped programs do not run
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/resume")).status_code == 200
    assert _flowing(fake)
    killed = await client.delete(f"{base}/{process_id}", params={"grace_ms": 100})
    assert killed.status_code == 200, killed.text
    await until(lambda: not _flowing(fake))
    done = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "true"})
    assert done.json()["data"]["result"]["exit_code"] == 0
    assert not _flowing(fake)
