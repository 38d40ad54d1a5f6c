"""Marked ``createos_live``: runs on the fake, or against the real API under --createos-live."""

import pytest


@pytest.mark.createos_live
@pytest.mark.asyncio
async def test_probe_creates_runs_and_deletes(createos_provider, createos_env):
    result = await createos_provider.probe(createos_env)
    assert result.ok, result.summary
    assert result.summary == "CreateOS sandbox creation and command execution succeeded."
