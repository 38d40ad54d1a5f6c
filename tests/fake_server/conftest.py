"""Fixtures for the fake's own tests: a fake served in the test's loop and a client for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _runtime_box import Box, new_box

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from tests._fakes import api_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    import httpx

    from fake_server.faults import Faults
    from tests._fakes import MakeFake


@pytest_asyncio.fixture(name="fake")
async def _fake(make_fake: MakeFake) -> FakeCreateOS:
    """A fake in the test's loop: VirtualClock, immediate transitions, seed 0."""
    return await make_fake(clock=VirtualClock(), transitions=TransitionPolicy.immediate())


@pytest_asyncio.fixture(name="client")
async def _client(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client authenticated as the fake's default account that reports its requests
    to the clock (so the virtual clock never waits for a stale in-flight reply)."""
    async with api_client(fake) as client:
        yield client


@pytest.fixture(name="make_sandbox")
def _make_sandbox(
    client: httpx.AsyncClient,
) -> Callable[..., Awaitable[str]]:
    """Create a sandbox and wait until it is running; returns its id."""

    async def make(**fields: Any) -> str:
        body = {"shape": "s-1vcpu-1gb", **fields}
        response = await client.post("/v1/sandboxes", json=body)
        assert response.status_code == 200, response.text
        sandbox_id: str = response.json()["data"]["id"]
        for _ in range(10):
            status = (await client.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"]
            if status == "running":
                return sandbox_id
        raise AssertionError("sandbox never reached running")

    return make


@pytest_asyncio.fixture(name="box")
async def _box() -> AsyncIterator[Box]:
    """One sandbox disk and shell on a virtual clock (the runtime tests' harness)."""
    box = new_box()
    yield box
    box.clock.close()


@pytest.fixture(name="faulty")
def _faulty(fake: FakeCreateOS) -> FakeCreateOS:
    """The fake, under the fault tests' name (fault injection is installed at construction)."""
    return fake


@pytest.fixture(name="faults")
def _faults(fake: FakeCreateOS) -> Faults:
    return fake.faults
