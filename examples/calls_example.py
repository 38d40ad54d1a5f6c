"""Assert on what the code sent: fake.calls, and the fault handle faults.add() returns."""

import pytest

from pytest_createos import Fault, HttpError
from pytest_createos.provider import CreateosApiError


@pytest.mark.asyncio
async def test_resume_polls_then_gives_up_on_a_503(
    createos_fake, createos_provider, createos_env, createos_lease
):
    lease_id = createos_lease.provider_lease_id
    fault = createos_fake.faults.add(Fault("exec", HttpError(503), sandbox_id=lease_id))

    with pytest.raises(CreateosApiError):
        await createos_provider.resume_lease(createos_env, lease_id, createos_lease.metadata)

    assert fault.fired == 1
    assert fault.calls[0].path == f"/v1/sandboxes/{lease_id}/exec"
    calls = createos_fake.calls.filter(sandbox_id=lease_id)
    calls.assert_called("get_sandbox")
    failed = calls.assert_called_once("exec", status=503)
    assert failed.faults  # the fault is named on the call it hit
    calls.assert_not_called("delete_sandbox")
