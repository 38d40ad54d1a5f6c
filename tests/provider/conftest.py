"""Fixtures for provider tests: a virtual clock and a tiny scripted API on real loopback HTTP.

The scripted server is for protocol edge cases the fake cannot produce on demand (a 3xx, a body
that is not JSON, a status sequence); everything else runs against ``FakeCreateOS``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from _leased import Leased
from aiohttp import web

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from fake_server.clock import EXCHANGE_HEADER
from fake_server.faults import EmptyReply, Fault, HttpError
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from tests._fakes import MakeFake

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
AioHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Call:
    """One request the scripted server received."""

    method: str
    path: str  # path and query, exactly as sent
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class ScriptedApi:
    """An aiohttp server on 127.0.0.1:0 whose answers a test scripts with ``handler``."""

    clock: VirtualClock
    handler: Handler | None = None
    calls: list[Call] = field(default_factory=list)
    url: str = ""

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        exchange = request.headers.get(EXCHANGE_HEADER)
        announced = self.clock.request_arrived(exchange)
        # Busy while handling, like the fake: a virtual clock must not jump meanwhile.
        with self.clock.busy():
            body = await request.read()
            self.calls.append(Call(request.method, request.raw_path, dict(request.headers), body))
            if self.handler is None:
                raise AssertionError("no handler scripted for this test")
            response = await self.handler(request)
            if announced and not response.prepared:
                self.clock.response_sent(exchange)  # the head, sent once this returns
            return response

    def requests(self) -> list[str]:
        """``"METHOD /path?query"`` for every call, in order."""
        return [f"{call.method} {call.path}" for call in self.calls]


def success(data: object, status: int = 200) -> web.Response:
    """A JSend success envelope."""
    return web.json_response({"status": "success", "data": data}, status=status)


@pytest.fixture(name="clock")
def _clock() -> Iterator[VirtualClock]:
    clock = VirtualClock()
    yield clock
    clock.close()


@pytest_asyncio.fixture(name="scripted")
async def _scripted(clock: VirtualClock) -> AsyncIterator[ScriptedApi]:
    api = ScriptedApi(clock=clock)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", api._dispatch)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    api.url = f"http://127.0.0.1:{port}"
    yield api
    await runner.cleanup()


def fail(fake: FakeCreateOS, operation: str, status: int) -> None:
    """Answer the next ``operation`` with ``status`` (0: close the connection without a reply).

    A one-shot ``Fault``; the ``fake`` fixture fails a test whose fault never fired.
    """
    action = EmptyReply() if status == 0 else HttpError(status, message="test-secret")
    fake.faults.add(Fault(operation, action))


@pytest_asyncio.fixture(name="fake")
async def _fake(clock: VirtualClock, make_fake: MakeFake) -> AsyncIterator[FakeCreateOS]:
    """A fake in the test's loop on the test's clock; every fault a test arms must fire."""
    fake = await make_fake(seed=0, clock=clock, transitions=TransitionPolicy.immediate())
    yield fake
    assert fake.faults.unfired() == []


@pytest_asyncio.fixture(name="provider")
async def _provider(clock: VirtualClock) -> AsyncIterator[CreateosProvider]:
    provider = CreateosProvider(
        clock=clock, pacer=Pacer.disabled(), environ={}, transport=clock_transport(clock)
    )
    yield provider
    await provider.shutdown()


def make_env(
    fake: FakeCreateOS, *, company: str = "company-a", environment: str = "env-a", **config: Any
) -> Environment:
    """An environment pointing at ``fake``; keyword arguments override config keys."""
    base: dict[str, Any] = {"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb"}
    base.update(config)
    return Environment(company_id=company, environment_id=environment, config=base)


@pytest.fixture(name="env")
def _env(fake: FakeCreateOS) -> Environment:
    return make_env(fake)


@pytest.fixture(name="reuse_env")
def _reuse_env(fake: FakeCreateOS) -> Environment:
    return make_env(fake, reuseLease=True)


def operations(fake: FakeCreateOS) -> list[str]:
    """The fake's request operation names so far, in order."""
    return fake.journal.operations()


@pytest_asyncio.fixture(name="leased")
async def _leased() -> AsyncIterator[Leased]:
    """A fake in the test's loop and one lease acquired on it by a provider on its clock."""
    clock = VirtualClock()
    async with FakeCreateOS(seed=0, clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        env = make_env(fake)
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )
        try:
            lease = await provider.acquire_lease(env, run_id="r1")
            yield Leased(fake, clock, provider, env, lease)
        finally:
            await provider.shutdown()
    clock.close()
