"""A request still arriving holds a virtual clock, whoever sends it and however slowly.

A raw client that reports nothing to the clock writes its request in pieces with real pauses
between them: from the moment its connection opens until the request reaches the fake's
handler, fake time must not move, even though every event loop waits meanwhile.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from typing import TYPE_CHECKING, Any

import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Real seconds between two pieces of the request: longer than any "surely arrived" guess.
PAUSE = 0.15


@pytest.fixture(name="threaded")
def _threaded() -> Iterator[FakeCreateOS]:
    clock = VirtualClock()
    fake = FakeCreateOS(seed=0, clock=clock, transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()
    clock.close()
    assert fake.errors == []


def _request(fake: FakeCreateOS) -> bytes:
    return (
        f"GET /v1/sandboxes HTTP/1.1\r\nHost: {fake.host}\r\nX-Api-Key: {fake.api_key}\r\n\r\n"
    ).encode()


@pytest.mark.asyncio
async def test_a_request_written_in_slow_pieces_keeps_fake_time_still(
    threaded: FakeCreateOS,
) -> None:
    clock = threaded.clock
    assert isinstance(clock, VirtualClock)
    deadline = asyncio.ensure_future(clock.sleep(30))  # what a wrong jump would reach
    reader, writer = await asyncio.open_connection(threaded.host, threaded.port)
    try:
        await asyncio.sleep(PAUSE)  # connected, nothing sent yet
        assert clock.now() == 0.0
        request = _request(threaded)
        for piece in (request[:7], request[7:40]):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(PAUSE)  # real pause, every loop parked in select()
            assert clock.now() == 0.0
        writer.write(request[40:])
        status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 200")
        # The connection stays open (keep-alive) but idle: it no longer holds the clock.
        await deadline
        assert clock.now() == 30.0
    finally:
        writer.close()
        await writer.wait_closed()
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_a_connection_closed_half_way_lets_time_move(threaded: FakeCreateOS) -> None:
    clock = threaded.clock
    assert isinstance(clock, VirtualClock)
    deadline = asyncio.ensure_future(clock.sleep(30))
    _, writer = await asyncio.open_connection(threaded.host, threaded.port)
    writer.write(_request(threaded)[:20])
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    await deadline
    assert (clock.now(), clock.busy_tokens) == (30.0, 0)


@pytest.mark.asyncio
async def test_a_connection_the_serving_loop_has_not_accepted_yet_keeps_fake_time_still(
    threaded: FakeCreateOS,
) -> None:
    """The kernel has accepted the connection; the serving thread has not run since."""
    clock = threaded.clock
    assert isinstance(clock, VirtualClock)
    loop: Any = threaded._loop
    selector = loop._selector
    if not isinstance(selector, selectors.BaseSelector):
        selector = selector._selector  # the real one, under the clock's probe
    real_select = selector.select
    gate = threading.Event()
    waiting = threading.Event()

    def unscheduled_select(timeout: float | None = None) -> Any:
        # A waiting select() returns only once the gate opens, ready sockets or not: what a
        # loaded machine does to a thread it does not schedule. Polls (timeout 0) go through.
        if timeout is None or timeout > 0:
            waiting.set()
            gate.wait()
        return real_select(timeout)

    selector.select = unscheduled_select
    try:
        loop.call_soon_threadsafe(lambda: None)  # leave the select() entered before the patch
        assert await asyncio.to_thread(waiting.wait, 5.0)
        deadline = asyncio.ensure_future(clock.sleep(30))
        reader, writer = await asyncio.open_connection(threaded.host, threaded.port)
        try:
            writer.write(_request(threaded))
            await writer.drain()
            await asyncio.sleep(PAUSE)  # every loop parked, the serving one with a socket ready
            assert (clock.now(), clock.jumps) == (0.0, 0)
            gate.set()
            status = await reader.readline()
            assert status.startswith(b"HTTP/1.1 200")
            await deadline
            assert clock.now() == 30.0
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        gate.set()
        del selector.select
