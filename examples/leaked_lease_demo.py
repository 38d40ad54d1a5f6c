"""A failing test on purpose: it acquires a lease and never destroys it.

Not collected with the examples (its name does not end in ``_example.py``); the docs run
checks the error its teardown reports.
"""

import pytest


@pytest.mark.asyncio
async def test_forgets_its_lease(createos_provider, createos_env):
    lease = await createos_provider.acquire_lease(createos_env)
    assert lease.provider_lease_id.startswith("sb-")
