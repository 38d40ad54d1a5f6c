"""A sandbox that is gone (404) expires the lease instead of failing the resume."""

import pytest

from pytest_createos.provider import Lease


@pytest.mark.createos(reuse_lease=True)
@pytest.mark.asyncio
async def test_a_404_on_resume_expires_the_lease(
    createos_provider, createos_env, createos_lease, createos_fake
):
    provider, env, lease = createos_provider, createos_env, createos_lease
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    createos_fake.faults.forget(lease.provider_lease_id)  # every later request: 404

    resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert resumed == Lease(provider_lease_id=None, metadata={"expired": True})
