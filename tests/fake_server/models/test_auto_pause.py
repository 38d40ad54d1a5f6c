"""Auto-pause is pause: "when the sandbox sits idle for the configured number of seconds, the
control plane pauses it automatically — identically to calling ``pause()`` manually" (TS
``docs/explanation/lifecycle.md``). It happens when it is due, not at the next read, and the
machine pauses with it (the process runtime's processes stop:
``tests/fake_server/runtime/process/sandbox/test_process_auto_pause.py``); an exec in flight is
activity, as a live process is."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from fake_server import VirtualClock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio


def transitions(fake: FakeCreateOS, sandbox_id: str) -> list[tuple[float, str]]:
    """The sandbox's transitions with their fake times, read without a request (a read would
    settle the sandbox)."""
    return [(e.time, e.detail) for e in fake.journal.transitions(sandbox_id)]


async def test_an_idle_sandbox_pauses_when_due_without_being_read(
    fake: FakeCreateOS, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox(auto_pause_after_seconds=60)
    start = fake.clock.now()
    paused = fake.sandbox(sandbox_id).machine
    calls: list[str] = []
    original = paused.pause
    paused.pause = lambda: (calls.append("pause"), original())[1]  # type: ignore[method-assign]
    await fake.clock.sleep(59)
    assert transitions(fake, sandbox_id)[-1][1] == "creating -> running"
    await fake.clock.sleep(2)
    assert transitions(fake, sandbox_id)[-2:] == [
        (start + 60, "running -> pausing"),
        (start + 60, "pausing -> paused"),
    ]
    assert calls == ["pause"]  # the machine paused, as pause() pauses it


async def test_an_exec_in_flight_is_activity_and_idle_time_counts_from_its_end(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox(auto_pause_after_seconds=60)
    start = fake.clock.now()
    body = {"cmd": "sleep", "args": ["100"]}
    running = asyncio.ensure_future(client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body))
    await fake.clock.sleep(90)
    assert transitions(fake, sandbox_id)[-1][1] == "creating -> running"
    done = await running
    assert done.json()["data"]["result"]["exit_code"] == 0
    await fake.clock.sleep(start + 159 - fake.clock.now())
    assert transitions(fake, sandbox_id)[-1][1] == "creating -> running"
    await fake.clock.sleep(2)
    assert transitions(fake, sandbox_id)[-1] == (start + 160, "pausing -> paused")


async def test_a_resumed_sandbox_is_watched_again(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox()
    patched = await client.patch(
        f"/v1/sandboxes/{sandbox_id}", json={"auto_pause_after_seconds": 60}
    )
    assert patched.status_code == 200
    await fake.clock.sleep(61)
    assert transitions(fake, sandbox_id)[-1][1] == "pausing -> paused"
    resumed = await client.post(f"/v1/sandboxes/{sandbox_id}/resume")
    assert resumed.json()["data"]["status"] in ("resuming", "running")
    again = fake.clock.now()
    await fake.clock.sleep(61)
    assert transitions(fake, sandbox_id)[-2:] == [
        (again + 60, "running -> pausing"),
        (again + 60, "pausing -> paused"),
    ]


async def test_a_virtual_clock_never_jumps_to_an_auto_pause_alone(
    fake: FakeCreateOS, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    """A client between two requests (the TS SDK, curl: nothing on the clock's wire) must not
    find its sandbox paused because autojump went to the idle deadline; time that passes for
    another reason (a test's own sleep, ``advance``) still reaches it."""
    clock = fake.clock
    assert isinstance(clock, VirtualClock)
    sandbox_id = await make_sandbox(auto_pause_after_seconds=60)
    assert clock.next_deadline() is None  # the idle watch waits passively
    jumps = clock.jumps
    await asyncio.sleep(0)  # the loop parks: still nothing to jump to
    assert (clock.next_deadline(), clock.jumps) == (None, jumps)
    await clock.sleep(120)  # a deadline of its own carries time past the idle one
    assert transitions(fake, sandbox_id)[-1][1] == "pausing -> paused"
