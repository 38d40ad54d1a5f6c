"""The shared clock: virtual time moves only when everybody waits, across threads and loops."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import (
    FakeCreateOS,
    TransitionPolicy,
    clock_transport,
    tls_context,
)
from fake_server.clock import DEFAULT_EPOCH, EXCHANGE_HEADER, Clock, RealClock, VirtualClock
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def manual() -> Iterator[VirtualClock]:
    clock = VirtualClock(autojump=False)
    yield clock
    clock.close()


@pytest.fixture
def auto() -> Iterator[VirtualClock]:
    clock = VirtualClock()
    yield clock
    clock.close()


@pytest.fixture
def eager() -> Iterator[VirtualClock]:
    """Jumps the moment nothing blocks it: a negative check needs no real waiting."""
    clock = VirtualClock(autojump_threshold=0.0)
    yield clock
    clock.close()


async def spin(real_seconds: float = 0.02) -> None:
    """Yield to other tasks and threads for a few switch intervals (a bounded negative check).

    Nothing here waits on the wall clock for time to pass: this only gives the autojump
    watcher thread the GIL long enough that a jump, if allowed, would certainly happen.
    """
    end = time.perf_counter() + real_seconds
    while True:
        await asyncio.sleep(0)
        if time.perf_counter() >= end:
            return


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(RealClock(), Clock)
    clock = VirtualClock()
    assert isinstance(clock, Clock)
    clock.close()


def test_virtual_time_starts_where_asked_and_maps_to_a_fixed_epoch() -> None:
    clock = VirtualClock(start=5.0, autojump=False)
    assert clock.now() == 5.0
    assert clock.time() == DEFAULT_EPOCH + 5.0
    assert DEFAULT_EPOCH == 1_767_225_600.0  # 2026-01-01T00:00:00Z
    clock.close()


def test_advance_moves_time_and_refuses_to_go_back(manual: VirtualClock) -> None:
    manual.advance(2.5)
    manual.advance(0)
    assert manual.now() == 2.5
    assert manual.jumps == 2
    with pytest.raises(ValueError) as info:
        manual.advance(-1)
    assert str(info.value) == "a clock cannot go backwards; advance() takes seconds >= 0"


def test_bad_settings_and_sleeps_are_rejected() -> None:
    with pytest.raises(ValueError) as info:
        VirtualClock(autojump_threshold=-1)
    assert str(info.value) == "autojump_threshold must be >= 0 real seconds"

    async def nan() -> None:
        await VirtualClock(autojump=False).sleep(float("nan"))

    with pytest.raises(ValueError) as info:
        asyncio.run(nan())
    assert str(info.value) == "cannot sleep for NaN seconds"


@pytest.mark.asyncio
async def test_advance_wakes_sleepers_in_deadline_order(manual: VirtualClock) -> None:
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await manual.sleep(seconds)
        woke.append((name, manual.now()))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("c", 3), ("a", 1), ("b", 2))]
    await spin()
    assert manual.next_deadline() == 1.0
    manual.advance(2.5)
    await spin()
    # Both wake, in deadline order, and see the time advance() moved to.
    assert woke == [("a", 2.5), ("b", 2.5)]
    manual.advance(10)
    await asyncio.gather(*tasks)
    assert woke[-1] == ("c", 12.5)
    assert manual.next_deadline() is None


@pytest.mark.asyncio
async def test_zero_and_negative_sleeps_yield_without_moving_time(manual: VirtualClock) -> None:
    await manual.sleep(0)
    await manual.sleep(-5)
    assert manual.now() == 0.0
    assert manual.jumps == 0


@pytest.mark.asyncio
async def test_without_autojump_only_advance_moves_time(manual: VirtualClock) -> None:
    task = asyncio.create_task(manual.sleep(1))
    await spin()
    assert not task.done()
    manual.advance(1)
    await task
    assert manual.now() == 1.0


@pytest.mark.asyncio
async def test_autojump_ends_a_long_sleep_without_advance(auto: VirtualClock) -> None:
    await auto.sleep(3600)  # its real cost is measured in benchmarks/, not asserted here
    assert auto.now() == 3600.0


@pytest.mark.asyncio
async def test_autojump_goes_deadline_by_deadline(auto: VirtualClock) -> None:
    woke: list[float] = []

    async def sleeper(seconds: float) -> None:
        await auto.sleep(seconds)
        woke.append(auto.now())

    auto.autojump = False  # register all three before time may move
    tasks = [asyncio.create_task(sleeper(s)) for s in (30, 10, 20)]
    await asyncio.sleep(0)  # each task runs up to its sleep
    assert auto.next_deadline() == 10.0
    auto.autojump = True
    await asyncio.gather(*tasks)
    assert woke == [10.0, 20.0, 30.0]


@pytest.mark.asyncio
async def test_a_cancelled_sleep_no_longer_holds_a_deadline(auto: VirtualClock) -> None:
    auto.autojump = False
    long = asyncio.create_task(auto.sleep(100))
    await spin()
    long.cancel()
    with pytest.raises(asyncio.CancelledError):
        await long
    auto.autojump = True
    await auto.sleep(1)
    assert auto.now() == 1.0


@pytest.mark.asyncio
async def test_busy_work_blocks_a_jump_until_it_waits(eager: VirtualClock) -> None:
    sleeper = asyncio.create_task(eager.sleep(5))
    with eager.busy():
        await spin()
        assert eager.now() == 0.0
        assert not sleeper.done()
        with eager.idle():  # waiting on something external gives the token back
            await sleeper
        assert eager.now() == 5.0


@pytest.mark.asyncio
async def test_a_busy_task_that_sleeps_lets_time_jump(auto: VirtualClock) -> None:
    async def worker() -> float:
        with auto.busy():
            await auto.sleep(7)  # sleep() gives the busy token back while it waits
            return auto.now()

    assert await worker() == 7.0


@pytest.mark.asyncio
async def test_reports_never_wake_the_watcher(auto: VirtualClock) -> None:
    """Each report restarts the quiet period, so a wake-up for it could never bring a jump
    sooner: it only cost a thread switch, several per request. Time still jumps after them."""
    wakes = []
    notify_all = auto._cond.notify_all
    auto._cond.notify_all = lambda: (wakes.append(1), notify_all())  # type: ignore[method-assign]
    exchange = auto.request_sent()
    with auto.busy(), auto.idle():
        auto.hold().release()
        auto.request_arrived(exchange)
        auto.response_sent(exchange)
        auto.response_received(exchange)
        auto.exchange_closed(exchange)
    assert wakes == []
    await auto.sleep(3)
    assert auto.now() == 3.0


@pytest.mark.asyncio
async def test_an_exchange_blocks_a_jump_while_any_part_of_it_is_on_the_wire(
    eager: VirtualClock,
) -> None:
    sleeper = asyncio.create_task(eager.sleep(5))
    exchange = eager.request_sent()
    await spin()
    assert not sleeper.done()  # the request is on its way
    assert eager.request_arrived(exchange) is True
    eager.response_sent(exchange)
    await spin()
    assert not sleeper.done()  # the reply head is on its way
    eager.response_received(exchange)
    eager.response_sent(exchange, size=10)
    eager.response_received(exchange, size=4)
    await spin()
    assert not sleeper.done()  # six body bytes are still unread
    eager.response_received(exchange, size=6)
    await sleeper  # the exchange is open, but nothing of it is on the wire
    assert (eager.now(), eager.in_transit, eager.open_exchanges) == (5.0, 0, 1)
    eager.exchange_closed(exchange)
    eager.exchange_closed(exchange)  # idempotent
    assert eager.open_exchanges == 0


@pytest.mark.asyncio
async def test_a_slow_request_stays_in_flight_whatever_the_real_time(eager: VirtualClock) -> None:
    """No real-time expiry: a request the server has not got yet blocks every jump."""
    sleeper = asyncio.create_task(eager.sleep(30))
    exchange = eager.request_sent()
    await spin(0.15)  # longer than any "surely arrived by now" guess
    assert not sleeper.done()
    assert eager.now() == 0.0
    eager.exchange_closed(exchange)  # e.g. the transport failed: the client closes it
    await sleeper
    assert eager.now() == 30.0


def test_replies_to_unknown_or_closed_exchanges_count_for_nothing(eager: VirtualClock) -> None:
    assert eager.request_arrived(None) is False
    assert eager.request_arrived("not-announced") is False
    exchange = eager.request_sent()
    eager.exchange_closed(exchange)
    assert eager.request_arrived(exchange) is False
    eager.response_sent(exchange)
    eager.response_sent("not-announced", size=5)
    assert (eager.in_transit, eager.open_exchanges) == (0, 0)


@pytest.mark.asyncio
async def test_clock_transport_counts_the_reply_until_read_and_closes_the_exchange(
    eager: VirtualClock,
) -> None:
    def serve(request: httpx.Request) -> httpx.Response:
        exchange = request.headers[EXCHANGE_HEADER]
        assert eager.in_transit == 1  # the request is on its way
        assert eager.request_arrived(exchange) is True
        eager.response_sent(exchange)
        eager.response_sent(exchange, size=5)
        return httpx.Response(200, stream=httpx.ByteStream(b"hello"))

    transport = clock_transport(eager, httpx.MockTransport(serve))
    async with httpx.AsyncClient(transport=transport) as client:
        async with client.stream("GET", "http://fake.invalid/v1/sandboxes") as response:
            assert (eager.in_transit, eager.open_exchanges) == (1, 1)  # five bytes unread
            read = [
                (chunk, eager.in_transit, eager.open_exchanges)
                async for chunk in response.aiter_raw()
            ]
            assert read == [(b"hello", 0, 1)]  # claimed as read; closed once the body ended
    assert eager.open_exchanges == 0


@pytest.mark.asyncio
async def test_clock_transport_closes_the_exchange_of_a_failed_request(
    eager: VirtualClock,
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    transport = clock_transport(eager, httpx.MockTransport(refuse))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ConnectError, match=r"^connection refused$"):
            await client.get("http://fake.invalid/v1/sandboxes")
    assert (eager.in_transit, eager.open_exchanges) == (0, 0)


@pytest.mark.asyncio
async def test_a_clock_made_inside_a_loop_watches_that_loop_from_the_start() -> None:
    """The test loop's own work keeps time still even before it ever calls the clock."""
    clock = VirtualClock(autojump=False, autojump_threshold=0.0)
    thread = threading.Thread(target=lambda: asyncio.run(clock.sleep(5)))
    thread.start()
    try:
        await asyncio.to_thread(_wait_for_deadline, clock, 5.0)
        clock.autojump = True
        await spin()  # this loop keeps running callbacks: it is not parked
        assert clock.now() == 0.0
        await asyncio.to_thread(thread.join)  # now it waits, and the sleeper's deadline comes
        assert clock.now() == 5.0
    finally:
        clock.close()
        thread.join()


@pytest.mark.asyncio
async def test_sleepers_in_two_threads_share_one_timeline(auto: VirtualClock) -> None:
    """The fake runs in a background thread with its own loop; the test in another."""
    woke: list[tuple[str, float]] = []
    lock = threading.Lock()

    async def sleeper(name: str, seconds: float) -> None:
        await auto.sleep(seconds)
        with lock:
            woke.append((name, auto.now()))

    def background() -> None:
        asyncio.run(sleeper("server", 5))

    auto.autojump = False  # both sleeps must be registered before time may move
    thread = threading.Thread(target=background)
    thread.start()
    await asyncio.to_thread(_wait_for_deadline, auto, 5.0)
    mine = asyncio.create_task(sleeper("test", 10))
    await asyncio.sleep(0)
    auto.autojump = True
    await mine
    await asyncio.to_thread(thread.join)
    assert woke == [("server", 5.0), ("test", 10.0)]


def _wait_for_deadline(clock: VirtualClock, deadline: float, *, bound: float = 30.0) -> None:
    """Block (in a worker thread) until a sleeper with ``deadline`` is registered.

    ``bound`` real seconds only turn a bug into a clear failure instead of a hang.
    """
    give_up = time.monotonic() + bound
    while clock.next_deadline() != deadline:
        if time.monotonic() > give_up:
            raise AssertionError(
                f"no sleeper with deadline {deadline} registered within {bound} real seconds "
                f"(next deadline: {clock.next_deadline()})"
            )
        time.sleep(0.001)


def test_advance_from_another_thread_wakes_a_sleeper() -> None:
    clock = VirtualClock(autojump=False)
    ready = threading.Event()
    result: list[float] = []

    async def sleeper() -> None:
        task = asyncio.create_task(clock.sleep(30))
        await asyncio.sleep(0)
        ready.set()
        await task
        result.append(clock.now())

    thread = threading.Thread(target=asyncio.run, args=(sleeper(),))
    thread.start()
    ready.wait()
    _wait_for_deadline(clock, 30.0)
    clock.advance(30)
    thread.join()
    assert result == [30.0]
    clock.close()


def test_a_sleeper_whose_loop_closed_does_not_break_advance() -> None:
    clock = VirtualClock(autojump=False)

    async def abandon() -> None:
        task = asyncio.create_task(clock.sleep(5))
        await asyncio.sleep(0)
        del task  # asyncio.run cancels it when the loop closes

    asyncio.run(abandon())
    clock.advance(10)
    assert clock.now() == 10.0
    clock.close()


@pytest.mark.asyncio
async def test_real_clock_is_wall_time_with_no_op_hooks() -> None:
    clock = RealClock()
    assert 0.0 <= clock.now() < 1.0
    assert abs(clock.time() - time.time()) < 1.0
    with clock.busy(), clock.idle():
        assert clock.request_sent() is None
        assert clock.request_arrived("x") is False
        clock.response_sent("x")
        clock.response_received("x", size=3)
        clock.exchange_closed("x")
    await clock.sleep(0)
    clock.close()


# -- end to end: the fake and its sandboxes run on the clock ---------------------------------


async def _until_arrived(fake: FakeCreateOS, operation: str, count: int = 1) -> None:
    """Yield until the fake has received ``count`` requests for ``operation``."""
    while True:
        await asyncio.sleep(0)
        if len(fake.journal.requests(operation)) >= count:
            return


async def _sandbox(api: httpx.AsyncClient) -> str:
    created = await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id: str = created.json()["data"]["id"]
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "running"
    return sandbox_id


@pytest.mark.asyncio
async def test_sleep_inside_a_sandbox_and_wait_timeouts_run_on_the_fake_clock() -> None:
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=10
        ) as api:
            sandbox_id = await _sandbox(api)
            before = clock.now()
            body = {"cmd": "/bin/bash", "args": ["-c", "sleep 120; echo done"]}
            result = await api.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
            assert result.json()["data"]["result"]["stdout"] == "done\n"
            assert before + 120 <= clock.now() < before + 121

            body = {"cmd": "/bin/bash", "args": ["-c", "sleep 1000"]}
            with clock.busy():  # no jump to t+1000 before the wait is registered
                created = await api.post(f"/v1/sandboxes/{sandbox_id}/processes", json=body)
                process_id = created.json()["data"]["process_id"]
                before = clock.now()
                wait = asyncio.create_task(
                    api.get(
                        f"/v1/sandboxes/{sandbox_id}/processes/{process_id}/wait",
                        params={"scope": "tree", "timeout_ms": 30000},
                    )
                )
                await _until_arrived(fake, "wait_process")
            waited = await wait
            assert waited.status_code == 408
            assert before + 30 <= clock.now() < before + 31
        assert fake.errors == []
    clock.close()


@pytest.mark.asyncio
async def test_heartbeats_are_paced_by_the_fake_clock() -> None:
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()) as fake:
        async with httpx.AsyncClient(
            verify=tls_context(),
            base_url=fake.url + "/v1",
            headers={"X-Api-Key": fake.api_key},
            timeout=10,
        ) as api:
            sandbox_id = await _sandbox_v1(api)
            body = {"cmd": "/bin/bash", "args": ["-c", "sleep 12; echo late"]}
            # Hold time still until the connection is in: heartbeats then count from the
            # moment the process started sleeping, with nothing racing the wall clock.
            with clock.busy():
                created = await api.post(f"/sandboxes/{sandbox_id}/processes", json=body)
                process_id = created.json()["data"]["process_id"]
                await api.post(f"/sandboxes/{sandbox_id}/processes/{process_id}/stdin/close")
                connect = asyncio.create_task(
                    api.get(
                        f"/sandboxes/{sandbox_id}/processes/{process_id}/connect",
                        params={"after": 0},
                    )
                )
                await _until_arrived(fake, "connect_process")
                assert clock.now() == 0.0
            stream = await connect
            kinds = [json.loads(line)["type"] for line in stream.text.splitlines()]
            assert kinds == ["heartbeat", "heartbeat", "data", "exit"]  # at 5 s and 10 s
    clock.close()


async def _sandbox_v1(api: httpx.AsyncClient) -> str:
    created = await api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id: str = created.json()["data"]["id"]
    await api.get(f"/sandboxes/{sandbox_id}")
    return sandbox_id


@pytest.mark.asyncio
async def test_a_threaded_fake_and_the_test_loop_share_one_timeline() -> None:
    """Thread mode: the fake serves from its own loop; the test waits in this one."""
    clock = VirtualClock()
    fake = FakeCreateOS(clock=clock, transitions=TransitionPolicy.after(10)).start()
    try:
        async with httpx.AsyncClient(
            base_url=fake.url + "/v1",
            headers={"X-Api-Key": fake.api_key},
            timeout=10,
            transport=clock_transport(clock),
        ) as api:
            created = await api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"})
            assert clock.now() >= 10  # create answers once the sandbox runs, on the clock
            sandbox_id = created.json()["data"]["id"]
            await api.post(f"/sandboxes/{sandbox_id}/pause")
            paused = f"/sandboxes/{sandbox_id}"
            assert (await api.get(paused)).json()["data"]["status"] == "pausing"
            await clock.sleep(10)  # the test's own wait moves the fake's transitions too
            assert (await api.get(paused)).json()["data"]["status"] == "paused"
            await api.post(f"/sandboxes/{sandbox_id}/resume")
            await clock.sleep(10)
            status = (await api.get(f"/sandboxes/{sandbox_id}")).json()["data"]["status"]
            assert status == "running"
            body = {"cmd": "/bin/bash", "args": ["-c", "sleep 30; echo ok"]}
            before = clock.now()
            result = await api.post(f"/sandboxes/{sandbox_id}/exec", json=body)
            assert result.json()["data"]["result"]["stdout"] == "ok\n"
            assert clock.now() >= before + 30
    finally:
        fake.close()
        clock.close()
    assert fake.errors == []


@pytest.mark.asyncio
async def test_the_provider_waits_for_realistic_transitions_on_the_clock() -> None:
    clock = VirtualClock()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.realistic()) as fake:
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )
        env = Environment(
            company_id="c",
            environment_id="e",
            config={
                "apiUrl": fake.url,
                "apiKey": fake.api_key,
                "shape": "s-1vcpu-1gb",
                "reuseLease": True,
            },
        )
        lease = await provider.acquire_lease(env, run_id="r")
        assert lease.provider_lease_id is not None
        before = clock.now()
        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
        assert fake.sandbox(lease.provider_lease_id).status == "paused"
        assert clock.now() >= before + 2.0  # pausing takes 2 s in the realistic policy
        before = clock.now()
        resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
        assert resumed.provider_lease_id == lease.provider_lease_id
        assert clock.now() >= before + 3.0  # resuming takes 3 s
        await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
        await provider.shutdown()
    clock.close()
