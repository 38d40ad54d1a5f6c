"""One virtual clock for the fake and the provider: realistic transitions, no real waiting."""

import asyncio
import time

import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer


@pytest.mark.asyncio
async def test_pause_and_resume_take_fake_seconds():
    clock = VirtualClock()  # starts at 0.0; Unix time 2026-01-01T00:00:00Z
    wall = time.monotonic()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.realistic()) as fake:
        env = Environment(
            "company-a",
            "env-a",
            {
                "apiUrl": fake.url,
                "apiKey": fake.api_key,
                "shape": "s-1vcpu-1gb",
                "reuseLease": True,
            },
        )
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )
        try:
            lease = await provider.acquire_lease(env, run_id="r1")
            await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
            assert clock.now() >= 2.0  # pausing took 2 fake seconds
            paused_at = clock.now()

            await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
            assert clock.now() >= paused_at + 3.0  # resuming took 3 more
            await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
        finally:
            await provider.shutdown()
    assert time.monotonic() - wall < 5.0  # five fake seconds passed, in far less real time


@pytest.mark.asyncio
async def test_advance_wakes_sleepers_in_deadline_order():
    clock = VirtualClock(autojump=False)  # only advance() moves it
    woke = []

    async def sleeper(seconds):
        await clock.sleep(seconds)
        woke.append((seconds, clock.now()))

    sleepers = [asyncio.create_task(sleeper(seconds)) for seconds in (3, 1, 2)]
    await asyncio.sleep(0)  # let them start sleeping
    clock.advance(5)
    await asyncio.gather(*sleepers)
    assert woke == [(1, 5.0), (2, 5.0), (3, 5.0)]  # all see the new time
    assert clock.time() == 1_767_225_600.0 + 5  # Unix time: 2026-01-01T00:00:00Z + 5 s
