"""A lost reply to sandbox creation: the provider fails, the sandbox exists anyway.

This example is a sync test: provider coroutines run through ``createos_run``.
"""

import httpx
import pytest

from fake_server.faults import LostReply
from pytest_createos.provider import CreateosError


@pytest.mark.createos_fault("create_sandbox", LostReply())
def test_lost_create_reply_leaves_an_orphan(
    createos_provider, createos_env, createos_run, createos_fake
):
    with pytest.raises(CreateosError) as caught:
        createos_run(createos_provider.acquire_lease(createos_env))
    assert str(caught.value) == "CreateOS connection failed."

    # Nobody holds a lease for it: inspect the account, then clean up by hand.
    [orphan] = createos_fake.sandboxes()
    assert orphan.status == "running"
    httpx.delete(
        f"{createos_fake.url}/v1/sandboxes/{orphan.id}",
        headers={"X-Api-Key": createos_fake.api_key},
    ).raise_for_status()
