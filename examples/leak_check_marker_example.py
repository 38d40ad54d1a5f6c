"""A test that leaves a sandbox on purpose turns the leak check off for itself only."""

import pytest


@pytest.mark.createos(leak_check="off")
@pytest.mark.asyncio
async def test_orphan_is_left_for_the_janitor(createos_provider, createos_env, createos_fake):
    lease = await createos_provider.acquire_lease(createos_env)
    assert createos_fake.sandbox(lease.provider_lease_id).status == "running"
