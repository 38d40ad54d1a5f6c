"""Threads without a loop attend the clock; a loop's executor work keeps it busy.

A synchronous test's thread runs its own code between two calls where no loop watch can see
it. Attending (``VirtualClock.attend()``), it holds time still except inside ``waiting()``; a
thread blocked in a call nobody announced stops counting after ``watch.STUCK`` real seconds,
so time is never frozen for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, sync_clock_transport
from fake_server.clock import EXCHANGE_HEADER, watch
from tests._helpers import settled

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Awaitable, Callable, Iterator


def _spin(seconds: float) -> None:
    """Python code running, not blocked: a test's own work."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(50))


def _compute_in_c() -> None:
    """One call of C code that releases the GIL for a long while: its caller's frame stands
    still, yet the thread computes. ``STUCK`` is 30 ms for the call only, so the call
    outlasts it several times; set earlier, a wait of the test's own set-up (a thread
    starting, a garbage collection) would count as blocked and let time move first."""
    stuck, watch.STUCK = watch.STUCK, 0.03
    try:
        hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 150_000)
    finally:
        watch.STUCK = stuck


class _Sleeper:
    """``clock.sleep(seconds)`` on a loop of its own thread; the fake time it woke at."""

    def __init__(self, clock: VirtualClock, seconds: float) -> None:
        self.woke = threading.Event()
        registered = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def sleep() -> float:
            waiter = asyncio.ensure_future(clock.sleep(seconds))
            await asyncio.sleep(0)  # its first step put the deadline on the clock
            registered.set()
            await waiter
            self.woke.set()
            return clock.now()

        self.result: concurrent.futures.Future[float] = asyncio.run_coroutine_threadsafe(
            sleep(), self.loop
        )
        assert registered.wait(timeout=30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(name="clock")
def _clock() -> Iterator[VirtualClock]:
    clock = VirtualClock()
    yield clock
    clock.close()


def test_an_attending_threads_own_code_holds_time_until_it_waits(clock: VirtualClock) -> None:
    with clock.attend():
        sleeper = _Sleeper(clock, 300)
        try:
            _spin(0.05)
            assert (clock.now(), sleeper.woke.is_set()) == (0.0, False)
            with clock.waiting():
                woke_at = sleeper.result.result(timeout=30)
            assert woke_at == 300.0
        finally:
            sleeper.close()


def test_a_thread_that_does_not_attend_is_not_waited_for(clock: VirtualClock) -> None:
    """The old hazard, kept as a contrast: unseen code of a plain thread lets time jump."""
    sleeper = _Sleeper(clock, 300)
    try:
        assert sleeper.result.result(timeout=30) == 300.0  # no waiting() needed
    finally:
        sleeper.close()


def test_a_thread_blocked_in_a_call_nobody_announced_stops_counting(clock: VirtualClock) -> None:
    """Blocked for ``STUCK`` real seconds (here on an event the sleeper sets), it lets time
    move: an unknown wait on the fake never freezes it for good."""
    with clock.attend():
        sleeper = _Sleeper(clock, 300)
        try:
            assert sleeper.woke.wait(timeout=30)
            assert clock.now() == 300.0
        finally:
            sleeper.close()


def test_an_attending_thread_computing_in_c_code_holds_time(clock: VirtualClock) -> None:
    """Its frame stands still in the C call, but the kernel shows it running: not blocked."""
    with clock.attend():
        sleeper = _Sleeper(clock, 300)
        try:
            _compute_in_c()
            assert (clock.now(), sleeper.woke.is_set()) == (0.0, False)
            with clock.waiting():
                assert sleeper.result.result(timeout=30) == 300.0
        finally:
            sleeper.close()


@contextlib.contextmanager
def _blocked_thread() -> Iterator[tuple[int, int]]:
    """A thread that has started and blocks on an event until the block ends: its ident and
    its kernel id. It may still be on its way into the wait when the block starts."""
    started, released = threading.Event(), threading.Event()
    native: list[int] = []

    def wait() -> None:
        native.append(threading.get_native_id())
        started.set()
        released.wait()

    blocked = threading.Thread(target=wait)
    blocked.start()
    try:
        assert started.wait(timeout=30)
        yield blocked.ident or 0, native[0]
    finally:
        released.set()
        blocked.join(timeout=30)


def test_the_kernel_tells_a_running_thread_from_a_blocked_one() -> None:
    assert watch.runnable(threading.get_native_id()) is True
    with _blocked_thread() as (_, native):
        # Running until it enters the wait; from then on sleeping, for as long as it waits. A
        # loaded machine may keep it off a CPU for a while: the check yields the CPU between
        # reads and waits (in real time, bounded) for the wait the thread is bound to reach.
        assert settled(lambda: not watch.runnable(native), bound=30.0)
    # join() returns once Python is done with the thread; the kernel's task ends just after
    assert settled(lambda: not os.path.exists(f"/proc/self/task/{native}"), bound=30.0)
    assert (watch.runnable(native), watch.runnable(0)) == (False, False)  # ended; unknown


def test_a_sleeping_thread_is_blocked_only_where_it_was_seen() -> None:
    """The state is read after the frame: a thread that moved meanwhile (out of a C call
    into the clock's own lock, say) sleeps elsewhere and does not count as stuck."""
    with _blocked_thread() as (ident, native):

        def seen_sleeping() -> bool:  # once inside the wait, it sleeps where it was seen
            frame = sys._current_frames()[ident]
            return watch.sleeps_at(ident, native, (id(frame), frame.f_lasti))

        assert any(seen_sleeping() for _ in range(100_000))
        assert watch.sleeps_at(ident, native, (0, 0)) is False


def test_attending_nests_and_ends_with_the_outermost(clock: VirtualClock) -> None:
    with clock.attend():
        with clock.attend():
            pass
        sleeper = _Sleeper(clock, 300)
        try:
            _spin(0.03)
            assert clock.now() == 0.0  # still attending
        finally:
            with clock.waiting():
                sleeper.result.result(timeout=30)
            sleeper.close()
    assert clock.now() == 300.0


def test_a_sync_request_through_the_clock_transport_waits_and_reports(
    clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocked in the transport, the attending thread lets time move (no ``STUCK`` fallback
    here); the exchange counts the reply until it is read and closes with the response."""
    monkeypatch.setattr(watch, "STUCK", 3600.0)
    with clock.attend():
        sleeper = _Sleeper(clock, 300)

        def serve(request: httpx.Request) -> httpx.Response:
            exchange = request.headers[EXCHANGE_HEADER]
            assert clock.request_arrived(exchange) is True
            assert sleeper.woke.wait(timeout=30)  # time moved while this thread waited
            clock.response_sent(exchange)
            return httpx.Response(200, stream=httpx.ByteStream(b"done"))

        try:
            transport = sync_clock_transport(clock, httpx.MockTransport(serve))
            with httpx.Client(transport=transport) as client:
                response = client.get("http://fake.invalid/v1/sandboxes")
            assert (response.content, clock.now()) == (b"done", 300.0)
            assert (clock.in_transit, clock.open_exchanges) == (0, 0)
        finally:
            sleeper.close()


def test_a_failed_sync_request_closes_its_exchange(clock: VirtualClock) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with httpx.Client(transport=sync_clock_transport(clock, httpx.MockTransport(refuse))) as client:
        with pytest.raises(httpx.ConnectError, match=r"^connection refused$"):
            client.get("http://fake.invalid/v1/sandboxes")
    assert (clock.in_transit, clock.open_exchanges) == (0, 0)


def test_waiting_outside_attend_changes_nothing(clock: VirtualClock) -> None:
    with clock.waiting():
        assert clock.busy_tokens == 0
    sleeper = _Sleeper(clock, 5)
    try:
        assert sleeper.result.result(timeout=30) == 5.0
    finally:
        sleeper.close()


async def _loop_busy_during(work: Callable[[], Awaitable[object]]) -> None:
    """A fake sleep of 300 s stays pending while the loop awaits ``work``, and ends after."""
    clock = VirtualClock()
    try:
        sleeper = asyncio.ensure_future(clock.sleep(300))
        await asyncio.sleep(0)
        await work()
        assert (clock.now(), sleeper.done()) == (0.0, False)
        await sleeper
        assert clock.now() == 300.0
    finally:
        clock.close()


@pytest.mark.asyncio
async def test_a_loop_waiting_for_its_executor_is_not_idle() -> None:
    """``asyncio.to_thread`` work (a provider packing an archive) is the loop's own work."""
    await _loop_busy_during(lambda: asyncio.to_thread(_spin, 0.05))


@pytest.mark.asyncio
async def test_a_loop_computing_in_c_code_is_not_idle() -> None:
    """A loop out of ``select()`` for longer than ``STUCK`` that the kernel shows running is
    working (hashing a large upload, say), not blocked in an unknown call."""

    async def compute() -> None:
        _compute_in_c()  # on the loop's own thread

    await _loop_busy_during(compute)


@pytest.mark.asyncio
async def test_executor_work_in_c_code_keeps_its_loop_busy() -> None:
    await _loop_busy_during(lambda: asyncio.to_thread(_compute_in_c))


def test_a_reply_body_counts_on_the_wire_until_the_client_reads_it(clock: VirtualClock) -> None:
    """The fake writes a JSON reply's body with its head; until the client has read it, the
    body is on the wire. Counting only the head let time jump while a sync test's thread,
    inside the transport between the head and the body, was off the CPU for the debounce."""
    fake = FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()).start()
    try:
        transport = sync_clock_transport(clock)
        headers = {"X-Api-Key": fake.api_key}
        with httpx.Client(transport=transport, base_url=fake.api_url, headers=headers) as client:
            with client.stream("GET", "/sandboxes") as response:
                assert (response.status_code, clock.in_transit) == (200, 1)  # head claimed
                body = response.read()
                assert clock.in_transit == 0
            assert body.startswith(b'{"status": "success"')
            assert (clock.in_transit, clock.open_exchanges) == (0, 0)
    finally:
        fake.close()


def test_the_end_of_a_body_read_whole_is_not_a_wait(clock: VirtualClock) -> None:
    """Once the bytes its head announced are read, the thread learns that the body ended
    without a wait on the fake: counting it as waiting there let time jump while a loaded
    machine kept the thread off the CPU between the last byte and its own next call."""
    seen: list[int] = []

    class Body(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b"do"
            yield b"ne"
            # The end of the body, read after its last byte: is the thread waiting here?
            seen.append(clock._threads[threading.get_ident()].waiting)

    def serve(request: httpx.Request) -> httpx.Response:
        assert clock.request_arrived(request.headers[EXCHANGE_HEADER]) is True
        return httpx.Response(200, headers={"Content-Length": "4"}, stream=Body())

    with clock.attend():
        transport = sync_clock_transport(clock, httpx.MockTransport(serve))
        with httpx.Client(transport=transport) as client:
            assert client.get("http://fake.invalid/v1/sandboxes").content == b"done"
    assert seen == [0]
    assert (clock.in_transit, clock.open_exchanges) == (0, 0)
