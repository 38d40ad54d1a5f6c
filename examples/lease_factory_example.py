"""Several leases in one test: createos_leases destroys whatever the test did not."""

import pytest


@pytest.mark.asyncio
async def test_two_sandboxes_do_not_share_files(createos_provider, createos_env, createos_leases):
    first = await createos_leases.acquire()
    second = await createos_leases.acquire()
    await createos_provider.execute(createos_env, first, "touch", ["/tmp/only-here"])

    result = await createos_provider.execute(createos_env, second, "ls", ["/tmp/only-here"])
    assert result.exit_code != 0
    assert len(createos_leases) == 2  # both destroyed at teardown
