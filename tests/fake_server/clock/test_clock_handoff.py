"""Hand-offs that must never leave a virtual clock free to jump: holds, wake-ups, transit claims."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from fake_server import TransitionPolicy, VirtualClock, clock_transport
from fake_server.models.waiting import Wakeup, wait_event
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from tests._fakes import MakeFake


def test_hold_counts_as_busy_until_released_once() -> None:
    """A hold is a busy token of no task; releasing it twice does not free anyone else's."""
    clock = VirtualClock(autojump=False)
    with clock.busy():
        hold = clock.hold()
        assert clock.busy_tokens == 2
        hold.release()
        hold.release()
        assert clock.busy_tokens == 1
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_idle_does_not_drop_a_hold_taken_in_the_same_task() -> None:
    """``idle()`` gives back the task's own tokens only; a hold bridges past it."""
    clock = VirtualClock(autojump=False)
    with clock.hold():
        with clock.idle():
            assert clock.busy_tokens == 1
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_a_held_clock_does_not_jump_and_moves_once_released() -> None:
    """With a hold in place, a sleeper waits; the jump happens only after release."""
    clock = VirtualClock()
    hold = clock.hold()
    sleeper = asyncio.ensure_future(clock.sleep(30))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not sleeper.done()
    assert clock.now() == 0.0
    hold.release()
    await sleeper
    assert clock.now() == 30.0


def test_only_announced_requests_count_in_transit() -> None:
    """A request nobody announced (curl, the SDK) gets no reply counted in transit."""
    clock = VirtualClock(autojump=False)
    assert clock.request_arrived() is False
    exchange = clock.request_sent()
    assert clock.in_transit == 1
    assert clock.request_arrived() is False  # someone else's request does not claim it
    assert clock.in_transit == 1
    assert clock.request_arrived(exchange) is True
    assert clock.in_transit == 0


@pytest.mark.asyncio
async def test_wakeup_holds_the_clock_until_the_waiter_has_resumed() -> None:
    """Between ``set()`` and the waiter running again the clock stays busy."""
    clock = VirtualClock(autojump=False)
    wakeup = Wakeup(clock)
    seen: list[int] = []

    async def waiter() -> None:  # like a request handler: busy except while it waits
        with clock.busy():
            assert await wait_event(clock, wakeup, None)
            seen.append(clock.busy_tokens)

    task = asyncio.ensure_future(waiter())
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.busy_tokens == 0  # the waiter is idle while it waits
    wakeup.set()
    assert clock.busy_tokens == 1  # held for the waiter, before it has run
    await task
    assert seen == [1]  # the handler's own token is back and the hold is gone
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_wait_event_times_out_on_the_clock_and_leaves_nothing_held() -> None:
    """A timed-out wait takes no real time and releases its enrolment."""
    clock = VirtualClock()
    wakeup = Wakeup(clock)
    assert await wait_event(clock, wakeup, 5.0) is False
    assert clock.now() == 5.0
    wakeup.set()
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_a_provider_lifecycle_claims_every_reply_and_frame_exactly(
    make_fake: MakeFake,
) -> None:
    """Counts match on both sides and every exchange is closed: nothing is left over."""
    clock = VirtualClock()
    fake = await make_fake(clock=clock, transitions=TransitionPolicy.immediate())
    provider = CreateosProvider(
        clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
    )
    env = Environment(
        company_id="c",
        environment_id="e",
        config={"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb"},
    )
    lease = await provider.acquire_lease(env, run_id="r1")
    result = await provider.execute(
        env, lease, "/bin/bash", ["-c", "echo out; sleep 2; echo err >&2; exit 3"]
    )
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert clock.in_transit == 0
    assert lease.provider_lease_id is not None
    await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
    await provider.shutdown()
    assert clock.in_transit == 0
    assert clock.open_exchanges == 0
    assert clock.busy_tokens == 0


@pytest.mark.asyncio
async def test_code_running_between_awaits_is_never_skipped_over() -> None:
    """While the test's loop runs code (not parked in select), time does not jump.

    The loop is busy for 25 times the autojump threshold without touching the clock: exactly
    what a test does between two requests on a loaded machine.
    """
    clock = VirtualClock()
    sleeper = asyncio.ensure_future(clock.sleep(10))
    await asyncio.sleep(0)  # the sleeper is registered; this loop is now watched
    started = time.perf_counter()
    while time.perf_counter() - started < 0.05:
        pass  # CPU work standing in for user code; not a sleep
    assert clock.now() == 0.0
    await sleeper
    assert clock.now() == 10.0


def test_a_watched_loop_that_stopped_running_does_not_freeze_time() -> None:
    """A loop between ``run_until_complete()`` calls cannot run anything: it does not count."""
    clock = VirtualClock()

    async def register_then_block() -> None:
        clock.now()  # this loop is now watched ...

    blocked = asyncio.new_event_loop()
    try:
        blocked.run_until_complete(register_then_block())
        # ... and has stopped: another loop's sleep completes without waiting for it.
        assert asyncio.run(_sleep_and_read(clock, 5.0)) == 5.0
    finally:
        blocked.close()


async def _sleep_and_read(clock: VirtualClock, seconds: float) -> float:
    await clock.sleep(seconds)
    return clock.now()


@pytest.mark.asyncio
async def test_many_clocks_on_one_loop_share_one_selector_proxy() -> None:
    """Each clock adds a probe, not another wrapper, and ``close()`` takes its probe away."""
    loop = asyncio.get_running_loop()
    first, second = VirtualClock(), VirtualClock()
    first.now()
    proxy = loop._selector  # type: ignore[attr-defined]
    second.now()
    assert loop._selector is proxy  # type: ignore[attr-defined]
    assert len(proxy.probes) == 2
    first.close()
    second.close()
    second.now()  # a closed clock does not watch again
    assert proxy.probes == ()
