"""Only what reaches the fake holds its clock: a reply from anywhere else holds nothing.

``clock_transport(clock, inner)`` announces every request; when ``inner`` answers without the
fake (``httpx.MockTransport``, respx, another host), the fake never claims the request. Once
the reply's head is back, that exchange must hold nothing, or every later wait on fake time
(a lease's transition) never ends.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio
from aiohttp import web

from fake_server import (
    TransitionPolicy,
    VirtualClock,
    clock_transport,
    sync_clock_transport,
)
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from tests._fakes import MakeFake

#: Real seconds any wait below may take before the test fails instead of hanging.
BOUND = 10.0


@pytest.fixture(name="clock")
def _clock() -> Iterator[VirtualClock]:
    clock = VirtualClock()
    yield clock
    clock.close()


def _canned(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"answered": "elsewhere"})


@pytest.mark.asyncio
async def test_a_mock_transport_s_reply_holds_nothing(clock: VirtualClock) -> None:
    """A reply with its body in memory closes its exchange at once; fake time moves after."""
    transport = clock_transport(clock, httpx.MockTransport(_canned))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get("http://elsewhere.invalid/")
        assert response.json() == {"answered": "elsewhere"}
        assert (clock.in_transit, clock.open_exchanges) == (0, 0)
        await asyncio.wait_for(clock.sleep(30), BOUND)
    assert clock.now() == 30.0


def test_a_mock_transport_s_reply_holds_nothing_for_a_sync_client(clock: VirtualClock) -> None:
    transport = sync_clock_transport(clock, httpx.MockTransport(_canned))
    with httpx.Client(transport=transport) as client:
        assert client.get("http://elsewhere.invalid/").json() == {"answered": "elsewhere"}
    assert (clock.in_transit, clock.open_exchanges) == (0, 0)


@pytest.mark.asyncio
async def test_a_streamed_reply_from_elsewhere_holds_nothing_while_it_is_open(
    clock: VirtualClock,
) -> None:
    """The head is back, so the request is no longer on its way; the fake sent none of the
    body, so none of it is on the wire: time moves while the response is still open."""

    def stream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(b"streamed"))

    transport = clock_transport(clock, httpx.MockTransport(stream))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("GET", "http://elsewhere.invalid/") as response,
    ):
        assert (clock.in_transit, clock.open_exchanges) == (0, 1)
        await asyncio.wait_for(clock.sleep(5), BOUND)
        assert await response.aread() == b"streamed"
    assert (clock.now(), clock.open_exchanges) == (5.0, 0)


@pytest_asyncio.fixture(name="other_host")
async def _other_host() -> AsyncIterator[str]:
    """A plain aiohttp server on loopback that knows nothing of any clock."""

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"host": "other"})

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.mark.asyncio
async def test_another_host_s_reply_holds_nothing(clock: VirtualClock, other_host: str) -> None:
    async with httpx.AsyncClient(transport=clock_transport(clock)) as client:
        async with client.stream("GET", f"{other_host}/") as response:
            assert clock.in_transit == 0  # the head is here; the fake sent nothing
            await response.aread()
        assert response.json() == {"host": "other"}
        assert (clock.in_transit, clock.open_exchanges) == (0, 0)
        await asyncio.wait_for(clock.sleep(7), BOUND)
    assert clock.now() == 7.0


@pytest.mark.asyncio
async def test_a_provider_whose_transport_answers_one_read_itself_still_waits_on_fake_time(
    make_fake: MakeFake,
    clock: VirtualClock,
) -> None:
    """The issue's case: the provider's transport answers one status read without the fake;
    the lease's later pause (2 fake seconds, realistic transitions) still completes."""
    fake = await make_fake(clock=clock, transitions=TransitionPolicy.realistic())
    real = httpx.AsyncHTTPTransport()
    answered: list[str] = []

    class AnswersOneRead(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sandbox = request.url.path.rsplit("/", 1)[-1]
            if request.method == "GET" and sandbox.startswith("sb-") and not answered:
                answered.append(sandbox)
                data = {"id": sandbox, "status": "running"}
                return httpx.Response(200, json={"status": "success", "data": data})
            return await real.handle_async_request(request)

    provider = CreateosProvider(
        clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock, AnswersOneRead())
    )
    config = {"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb"}
    env = Environment("c", "e", {**config, "reuseLease": True})
    try:
        lease = await asyncio.wait_for(provider.acquire_lease(env, run_id="r1"), BOUND)
        assert answered == [lease.provider_lease_id]
        assert (clock.in_transit, clock.open_exchanges) == (0, 0)
        paused_from = clock.now()
        await asyncio.wait_for(
            provider.release_lease(env, lease.provider_lease_id, lease.metadata), BOUND
        )
        assert clock.now() >= paused_from + 2.0
        await asyncio.wait_for(
            provider.destroy_lease(env, lease.provider_lease_id, lease.metadata), BOUND
        )
    finally:
        await provider.shutdown()
        await real.aclose()
    assert fake.errors == []
