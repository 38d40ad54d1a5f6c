"""One lease for a whole module: createos_shared has its own fake, never reset per test."""

import pytest


@pytest.fixture(scope="module")
def module_lease(createos_shared):
    with createos_shared.leases() as leases:  # destroyed when the module is done
        yield leases.acquire_sync()


@pytest.mark.asyncio
async def test_writes_a_file(createos_shared, module_lease):
    shared = createos_shared
    await shared.provider.execute(shared.env, module_lease, "touch", ["/tmp/kept"])


@pytest.mark.asyncio
async def test_a_later_test_still_sees_it(createos_shared, module_lease):
    shared = createos_shared
    result = await shared.provider.execute(shared.env, module_lease, "ls", ["/tmp/kept"])
    assert result.stdout == "/tmp/kept\n"
