"""A transient 503 on resume is raised, never treated as an expired lease."""

import pytest

from fake_server.faults import HttpError
from pytest_createos.provider import CreateosApiError


@pytest.mark.createos(reuse_lease=True)
@pytest.mark.createos_fault("resume_sandbox", HttpError(503))
@pytest.mark.asyncio
async def test_a_503_on_resume_keeps_the_lease(
    createos_provider, createos_env, createos_lease, createos_fake
):
    provider, env, lease = createos_provider, createos_env, createos_lease
    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)

    with pytest.raises(CreateosApiError) as caught:
        await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert str(caught.value) == "CreateOS request failed (HTTP 503) during sandbox lifecycle."
    assert createos_fake.sandbox(lease.provider_lease_id).status == "paused"
    assert createos_fake.journal.requests("delete_sandbox") == []

    resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert resumed.provider_lease_id == lease.provider_lease_id
