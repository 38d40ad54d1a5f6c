"""Reuse: release pauses the sandbox, resume brings it back with its files intact."""

import pytest


@pytest.mark.createos(reuse_lease=True, transitions="realistic")
@pytest.mark.asyncio
async def test_files_survive_pause_and_resume(
    createos_provider, createos_env, createos_lease, createos_fake
):
    provider, env, lease = createos_provider, createos_env, createos_lease
    await provider.execute(env, lease, "/bin/bash", ["-c", "echo kept > /paperclip-workspace/a"])

    await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    assert createos_fake.sandbox(lease.provider_lease_id).status == "paused"

    resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
    assert resumed.provider_lease_id == lease.provider_lease_id
    assert resumed.metadata["resumedLease"] is True
    result = await provider.execute(env, resumed, "cat", ["/paperclip-workspace/a"])
    assert result.stdout == "kept\n"
