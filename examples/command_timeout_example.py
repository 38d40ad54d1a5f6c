"""A command that outlives its timeout returns what it printed so far (on fake time)."""

import pytest


@pytest.mark.asyncio
async def test_timeout_keeps_partial_output(
    createos_provider, createos_env, createos_lease, createos_clock
):
    started = createos_clock.now()
    result = await createos_provider.execute(
        createos_env,
        createos_lease,
        "/bin/bash",
        ["-c", "echo partial; sleep 600"],
        timeout_ms=5_000,
    )
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.stdout == "partial\n"
    assert createos_clock.now() >= started + 5.0
