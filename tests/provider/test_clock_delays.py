"""Real-time delays on the wire never fire a fake deadline: time jumps only on proof.

A loaded machine or a slow first connection can hold a request for hundreds of milliseconds
of real time. The clock transport the test installs keeps the exchange in flight until the
provider is done with the reply, so a virtual clock never takes the delay for quiet and jumps
to the provider's own deadline. The provider itself knows nothing of the fake's clock.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Real seconds a delayed request waits before it goes out: small, to keep the suite fast
#: (benchmarks/wire_delays.py runs the same lifecycle with 1 s on every request).
DELAY = 0.3


class DelayingTransport(httpx.AsyncBaseTransport):
    """Holds the chosen requests (1-based, in sending order) back for ``DELAY`` real seconds."""

    def __init__(self, delayed: tuple[int, ...]) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._delayed = delayed
        self.sent = 0
        self.held = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.sent in self._delayed:
            self.held += 1
            await asyncio.sleep(DELAY)  # real time, like a stalled connection
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture(name="threaded")
def _threaded() -> Iterator[FakeCreateOS]:
    """The fake serving from its own thread and loop, as the plugin runs it."""
    clock = VirtualClock()
    fake = FakeCreateOS(seed=0, clock=clock, transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()
    clock.close()
    assert fake.errors == []


@pytest.mark.parametrize("delayed", [(1,), (3, 6)], ids=["the first request", "two later requests"])
@pytest.mark.asyncio
async def test_a_delayed_request_never_fires_a_fake_deadline(
    threaded: FakeCreateOS, delayed: tuple[int, ...]
) -> None:
    clock = threaded.clock
    assert isinstance(clock, VirtualClock)
    transport = DelayingTransport(delayed)
    provider = CreateosProvider(
        clock=clock, pacer=Pacer.disabled(), environ={}, transport=clock_transport(clock, transport)
    )
    env = Environment(
        company_id="c",
        environment_id="e",
        # A 2 s deadline: any jump to it during a 0.3 s real delay fails the operation.
        config={
            "apiUrl": threaded.url,
            "apiKey": threaded.api_key,
            "shape": "s-1vcpu-1gb",
            "timeoutMs": 2000,
        },
    )
    try:
        lease = await provider.acquire_lease(env, run_id="r1")
        assert lease.provider_lease_id is not None
        result = await provider.execute(env, lease, "/bin/bash", ["-c", "echo hi"])
        assert (result.exit_code, result.stdout, result.timed_out) == (0, "hi\n", False)
        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    finally:
        await provider.shutdown()
    assert transport.held == len(delayed)  # the delays really happened
    assert clock.now() < 2.0  # no fake deadline came near
    assert (clock.in_transit, clock.open_exchanges, clock.busy_tokens) == (0, 0, 0)


def test_the_provider_a_project_ships_has_no_fake_clock_code() -> None:
    """Busy/idle reports and exchange ids live in the fake and the plugin's transports."""
    import pathlib
    import re

    import pytest_createos.provider as provider

    root = pathlib.Path(provider.__file__).parent
    hooks = re.compile(
        r"X-Fake-Clock|request_sent|response_received|exchange_closed|\b(busy|idle|hold)\(\)"
        r"|\b(busy|idle)\((self\._)?clock\)"
    )
    found = [
        f"{path.name}: {match.group()}"
        for path in sorted(root.glob("*.py"))
        for match in hooks.finditer(path.read_text())
    ]
    assert found == []
