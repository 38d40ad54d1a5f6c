"""Credit exhaustion: an account without credit gets 402 on every cost-incurring call.

``@pytest.mark.createos(credit=0)`` starts the test with none; the ``ExhaustCredit`` fault
action runs the account out in the middle of a test, here on its second sandbox create.
"""

import pytest
from createos import CreateSandboxRequest
from createos.errors import APIError

from pytest_createos import ExhaustCredit
from pytest_createos.provider import CreateosApiError


@pytest.mark.createos(credit=0)
@pytest.mark.asyncio
async def test_no_credit_no_lease(createos_provider, createos_env, createos_fake):
    with pytest.raises(CreateosApiError) as caught:
        await createos_provider.acquire_lease(createos_env)
    assert "HTTP 402" in str(caught.value)
    assert createos_fake.sandboxes() == []  # the refused create changed nothing


@pytest.mark.createos_fault("create_sandbox", ExhaustCredit(), after=1, times=1)
def test_credit_runs_out_mid_test(createos_sdk, createos_fake):
    first = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    with pytest.raises(APIError) as caught:
        createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    assert caught.value.status_code == 402
    assert "payment_required" in str(caught.value)

    createos_fake.set_credit(None)  # topped up: cost-incurring calls work again
    second = createos_sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    first.destroy()
    second.destroy()
