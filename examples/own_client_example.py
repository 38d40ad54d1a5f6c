"""Your own httpx client on the fake's virtual clock: it reports its requests, so time moves
only when the test says so, even with the fake serving from a background thread."""

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport


@pytest.mark.asyncio
async def test_a_sandbox_stays_pausing_until_fake_time_passes():
    clock = VirtualClock()
    with FakeCreateOS(clock=clock, transitions=TransitionPolicy.after(10)) as fake:
        async with httpx.AsyncClient(
            base_url=fake.api_url,
            headers={"X-Api-Key": fake.api_key},
            transport=clock_transport(clock),
        ) as api:
            created = await api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"})
            assert created.json()["data"]["status"] == "running"  # after 10 fake seconds
            url = f"/sandboxes/{created.json()['data']['id']}"
            await api.post(url + "/pause")
            assert (await api.get(url)).json()["data"]["status"] == "pausing"

            await clock.sleep(10)  # ten fake seconds, no real waiting
            assert (await api.get(url)).json()["data"]["status"] == "paused"
    clock.close()
