"""A failing test on purpose, to show the report: resume hits a 503 the code does not retry.

Not collected with the examples (its name does not end in ``_example.py``); the plugin's tests
run it and check the report's shape.
"""

import pytest

from pytest_createos import HttpError


@pytest.mark.createos(transitions="realistic", reuse_lease=True)
@pytest.mark.createos_fault("resume_sandbox", HttpError(503))
@pytest.mark.asyncio
async def test_resume_after_pause(createos_provider, createos_env, createos_lease):
    lease_id, metadata = createos_lease.provider_lease_id, createos_lease.metadata
    await createos_provider.release_lease(createos_env, lease_id, metadata)
    resumed = await createos_provider.resume_lease(createos_env, lease_id, metadata)
    assert resumed.provider_lease_id == lease_id
