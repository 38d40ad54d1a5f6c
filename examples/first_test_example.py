"""A first test: a lease on the fake CreateOS, one command, its output."""

import pytest


@pytest.mark.asyncio
async def test_runs_a_command(createos_provider, createos_env, createos_lease):
    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["hello"])
    assert result.exit_code == 0
    assert result.stdout == "hello\n"
