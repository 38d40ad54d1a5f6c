"""A lost reply to process creation blocks reuse of the lease until it is destroyed."""

import pytest

from fake_server.faults import LostReply
from pytest_createos.provider import CreateosCleanupError, CreateosError


@pytest.mark.createos(reuse_lease=True)
@pytest.mark.createos_fault("create_process", LostReply())
@pytest.mark.asyncio
async def test_ambiguous_creation_blocks_reuse(
    createos_provider, createos_env, createos_lease, createos_fake
):
    provider, env, lease = createos_provider, createos_env, createos_lease
    with pytest.raises(CreateosCleanupError) as caught:
        await provider.execute(env, lease, "echo", ["hi"])
    assert str(caught.value) == (
        "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
    )

    with pytest.raises(CreateosError) as refused:
        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    assert str(refused.value) == (
        "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
    )
    assert createos_fake.journal.requests("pause_sandbox") == []

    await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
    assert createos_fake.sandbox(lease.provider_lease_id).status in ("destroying", "destroyed")
