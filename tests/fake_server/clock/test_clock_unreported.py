"""A provider on a fake's virtual clock without the clock transport gets the fake's notice.

Its deadlines run on the fake's clock while its requests report nothing, so a real network
delay can fire them. The provider has no clock hooks; it names itself in its ``User-Agent``,
and the fake (which knows its clock) journals one notice per test with the line that fixes it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, RealClock, TransitionPolicy, VirtualClock, clock_transport
from fake_server.clock.unreported import PROVIDER_AGENT, UNREPORTED
from pytest_createos.provider import CreateosProvider, Environment, Pacer
from pytest_createos.provider._client import _user_agent

if TYPE_CHECKING:
    from tests._fakes import MakeFake

#: Real seconds a lifecycle may take before the test fails instead of hanging.
BOUND = 10.0


def _notices(fake: FakeCreateOS) -> list[str]:
    return [e.detail for e in fake.journal.filter(kind="notice")]


async def _lifecycle(fake: FakeCreateOS, provider: CreateosProvider) -> None:
    config = {"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb"}
    env = Environment("c", "e", config)
    try:
        lease = await asyncio.wait_for(provider.acquire_lease(env, run_id="r1"), BOUND)
        await asyncio.wait_for(provider.execute(env, lease, "true"), BOUND)
        await asyncio.wait_for(
            provider.destroy_lease(env, lease.provider_lease_id, lease.metadata), BOUND
        )
    finally:
        await provider.shutdown()


def test_the_provider_names_itself_as_the_fake_expects() -> None:
    assert _user_agent().startswith(PROVIDER_AGENT)


@pytest.mark.asyncio
async def test_a_provider_without_the_clock_transport_gets_one_notice_per_test() -> None:
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        await _lifecycle(fake, CreateosProvider(clock=clock, pacer=Pacer.disabled()))
        assert _notices(fake) == [UNREPORTED]
        assert len(fake.journal.requests()) > 3  # many requests, one notice
        fake.reset()
        await _lifecycle(fake, CreateosProvider(clock=clock, pacer=Pacer.disabled()))
        assert _notices(fake) == [UNREPORTED]  # again after a reset: the next test's
    clock.close()
    assert UNREPORTED == (
        "createos: a CreateosProvider sent requests to this fake without "
        "fake_server.clock_transport, so the fake's VirtualClock cannot see them on the wire "
        "and the provider's deadlines can fire during a real network delay; build it with "
        "CreateosProvider(clock=clock, transport=fake_server.clock_transport(clock))"
    )


@pytest.mark.asyncio
async def test_no_notice_with_the_transport_on_a_real_clock_or_for_other_clients(
    make_fake: MakeFake,
) -> None:
    """The clock transport, a fake on real time (``serve``), and clients that are not the
    provider (the SDK, curl, httpx) get none."""
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )
        await _lifecycle(fake, provider)
        async with httpx.AsyncClient() as client:
            reply = await client.get(
                f"{fake.url}/v1/sandboxes", headers={"X-Api-Key": fake.api_key}
            )
            assert reply.status_code == 200
        assert _notices(fake) == []
    clock.close()
    fake = await make_fake(clock=RealClock(), transitions=TransitionPolicy.immediate())
    await _lifecycle(fake, CreateosProvider(pacer=Pacer.disabled()))
    assert _notices(fake) == []
