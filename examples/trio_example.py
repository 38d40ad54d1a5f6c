"""The provider and fixtures under anyio, on both of its backends (trio included)."""

import pytest


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_runs_under_either_backend(
    anyio_backend, createos_provider, createos_env, createos_lease
):
    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["hi"])
    assert result.stdout == "hi\n"
