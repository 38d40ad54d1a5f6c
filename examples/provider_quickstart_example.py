"""A provider of your own against the fixture's fake: one lease through its whole life."""

import pytest

from fake_server import clock_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer


@pytest.mark.asyncio
async def test_lease_lifecycle(createos_fake):
    fake = createos_fake
    env = Environment(
        company_id="company-a",
        environment_id="env-a",
        config={
            "apiUrl": fake.url,
            "apiKey": fake.api_key,
            "shape": "s-1vcpu-1gb",
            "reuseLease": True,
        },
    )
    provider = CreateosProvider(  # tests: the fake's clock, told what is on the wire
        clock=fake.clock, pacer=Pacer.disabled(), transport=clock_transport(fake.clock)
    )
    try:
        lease = await provider.acquire_lease(env, run_id="r1")
        assert lease.metadata["remoteCwd"] == "/paperclip-workspace"
        assert "apiKey" not in lease.metadata

        result = await provider.execute(env, lease, "/bin/echo", ["hello"])
        assert (result.exit_code, result.stdout) == (0, "hello\n")

        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)  # pauses
        assert fake.sandbox(lease.provider_lease_id).status == "paused"

        lease = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
        assert lease.metadata["resumedLease"] is True

        await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
        assert fake.sandbox(lease.provider_lease_id).status in ("destroying", "destroyed")
    finally:
        await provider.shutdown()  # once per worker process, when it stops
