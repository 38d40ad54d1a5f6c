"""Latency costs fake seconds only; an out-of-band fault changes the world mid-test."""

import time

import pytest

from fake_server.faults import Fault, Latency, SetStatus
from pytest_createos.provider import CreateosError


@pytest.mark.asyncio
async def test_latency_runs_on_the_fake_clock(
    createos_provider, createos_env, createos_lease, createos_fake, createos_clock
):
    createos_fake.faults.add(Fault("create_process", Latency(30)))
    started, wall = createos_clock.now(), time.monotonic()

    result = await createos_provider.execute(createos_env, createos_lease, "echo", ["late"])
    assert result.stdout == "late\n"
    assert createos_clock.now() >= started + 30.0  # everybody's timers saw the 30 s
    assert time.monotonic() - wall < 30.0  # but it took no such real time


@pytest.mark.asyncio
async def test_set_status_fails_the_sandbox_under_the_provider(
    createos_provider, createos_env, createos_lease, createos_fake
):
    sandbox_id = createos_lease.provider_lease_id
    createos_fake.faults.add(Fault("create_process", SetStatus("failed"), sandbox_id=sandbox_id))

    with pytest.raises(CreateosError) as caught:
        await createos_provider.execute(createos_env, createos_lease, "echo", ["never"])
    assert str(caught.value) == "CreateOS request failed (HTTP 409) during process creation."
    assert createos_fake.sandbox(sandbox_id).status == "failed"
