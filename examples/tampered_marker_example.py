"""A lease marker changed inside the sandbox means the sandbox is not ours: expired."""

import pytest

from pytest_createos.provider import Lease

MARKER = "/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease"


@pytest.mark.createos(reuse_lease=True)
@pytest.mark.asyncio
async def test_a_tampered_marker_expires_the_lease(
    createos_provider, createos_env, createos_lease, createos_fake
):
    provider, env, lease = createos_provider, createos_env, createos_lease
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    createos_fake.faults.tamper_file(lease.provider_lease_id, MARKER, b"someone else")

    resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert resumed == Lease(provider_lease_id=None, metadata={"expired": True})
