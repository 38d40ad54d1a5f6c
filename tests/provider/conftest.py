"""Fixtures for provider tests: a virtual clock and a tiny scripted API on real loopback HTTP.

The scripted server is for protocol edge cases the fake cannot produce on demand (a 3xx, a body
that is not JSON, a status sequence); everything else runs against ``FakeCreateOS``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from fake_server.clock import VirtualClock

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
        self.clock.request_arrived()
        body = await request.read()
        self.calls.append(Call(request.method, request.raw_path, dict(request.headers), body))
        if self.handler is None:
            raise AssertionError("no handler scripted for this test")
        try:
            return await self.handler(request)
        finally:
            self.clock.response_sent()

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
