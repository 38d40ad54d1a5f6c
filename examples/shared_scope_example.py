"""One lease for a whole module: createos_shared has its own fake, never reset per test."""

import pytest


@pytest.fixture(scope="module")
def module_lease(createos_shared):
    """Prepared once per module (and per pytest-xdist worker that runs tests of it)."""
    shared = createos_shared
    with shared.leases() as leases:  # destroyed when the module is done
        lease = leases.acquire_sync()
        shared.run(shared.provider.execute(shared.env, lease, "touch", ["/tmp/kept"]))
        yield lease


@pytest.mark.asyncio
async def test_sees_the_prepared_file(createos_shared, module_lease):
    shared = createos_shared
    result = await shared.provider.execute(shared.env, module_lease, "ls", ["/tmp/kept"])
    assert result.stdout == "/tmp/kept\n"


@pytest.mark.asyncio
async def test_another_test_shares_the_same_sandbox(createos_shared, module_lease):
    shared = createos_shared
    result = await shared.provider.execute(shared.env, module_lease, "ls", ["/tmp/kept"])
    assert result.stdout == "/tmp/kept\n"
