"""While a real program runs, fake time follows real time (docs/time.md, rule 8).

It never jumps past the program (a long deadline does not come at once) and never stands
still while it runs (a deadline comes when its real seconds have passed, whatever is busy).
No real durations are asserted: conditions are polled with a bound, and orderings checked.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from fake_server.clock import RealClock, VirtualClock

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Real seconds a poll below may take before the test fails instead of hanging.
BOUND = 10.0


@pytest.fixture(name="clock")
def _clock() -> Iterator[VirtualClock]:
    clock = VirtualClock(autojump_threshold=0.0)
    yield clock
    clock.close()


async def _until(condition: object) -> None:
    """Poll ``condition()`` with a real bound (the loop keeps running meanwhile)."""
    assert callable(condition)
    deadline = time.perf_counter() + BOUND
    while not condition():
        assert time.perf_counter() < deadline, "the condition never came"
        await asyncio.sleep(0.005)


@pytest.mark.asyncio
async def test_time_follows_real_time_while_a_program_runs(clock: VirtualClock) -> None:
    """A deadline 0.05 fake seconds away comes, with a busy token held all along: time
    flows, which is not a jump; a deadline far away does not come meanwhile."""
    far = asyncio.create_task(clock.sleep(3600))
    await asyncio.sleep(0)  # asleep from fake time 0
    running = clock.real_time()
    assert clock.following_real_time
    with clock.busy():  # work elsewhere: no jump, but time still flows
        near = asyncio.create_task(clock.sleep(0.05))
        with clock.idle():
            await asyncio.wait_for(near, BOUND)
        assert 0.05 <= clock.now() < 3600
    assert not far.done()  # never jumped past the running program
    running.release()
    running.release()  # idempotent
    assert not clock.following_real_time
    await asyncio.wait_for(far, BOUND)  # nothing runs: autojump again
    assert clock.now() == 3600.0


@pytest.mark.asyncio
async def test_time_stands_still_once_the_last_program_ends(clock: VirtualClock) -> None:
    first, second = clock.real_time(), clock.real_time()
    first.release()
    start = clock.now()
    await _until(lambda: clock.now() > start)  # the second still runs: time flows
    second.release()
    with clock.busy():  # nothing runs and work holds the clock: time stands
        stopped = clock.now()
        await asyncio.sleep(0.02)
        assert clock.now() == stopped


@pytest.mark.asyncio
async def test_an_earlier_sleeper_is_woken_on_time_while_time_flows(clock: VirtualClock) -> None:
    """The watcher waits for the next deadline in real time; a sleeper that comes sooner
    wakes it, so the later one does not delay the earlier one."""
    running = clock.real_time()
    try:
        later = asyncio.create_task(clock.sleep(3600))
        await asyncio.sleep(0)
        start = clock.now()
        await asyncio.wait_for(clock.sleep(0.05), BOUND)
        assert clock.now() - start < 3600
        assert not later.done()
        later.cancel()
    finally:
        running.release()


@pytest.mark.asyncio
async def test_without_autojump_a_program_moves_no_time() -> None:
    """``autojump=False`` leaves only ``advance()``, real programs or not; turned on, time
    flows from then on (not from when the program started)."""
    clock = VirtualClock(autojump=False)
    running = clock.real_time()
    try:
        assert not clock.following_real_time
        await asyncio.sleep(0.02)
        assert clock.now() == 0.0
        turned_on = time.perf_counter()
        clock.autojump = True
        assert clock.following_real_time
        await _until(lambda: clock.now() > 0)
        # At most the real time since autojump came on, not since the program started.
        assert clock.now() <= time.perf_counter() - turned_on
    finally:
        running.release()
        clock.close()


def test_the_real_clock_s_token_is_a_no_op() -> None:
    token = RealClock().real_time()
    token.release()
