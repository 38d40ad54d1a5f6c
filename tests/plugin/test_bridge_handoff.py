"""The plugin's loop holds the shared clock across thread hand-offs, never longer."""

from __future__ import annotations

import asyncio

import pytest

from fake_server import VirtualClock
from pytest_createos._bridge import BackgroundLoop, _Handoff


def test_a_handoff_holds_the_clock_until_the_coroutine_runs_and_after_it_ends() -> None:
    clock = VirtualClock(autojump=False)
    seen: list[int] = []

    async def work() -> str:
        seen.append(clock.busy_tokens)
        return "done"

    handoff = _Handoff(clock)
    assert clock.busy_tokens == 1  # scheduled, not yet running on the other loop
    assert asyncio.run(handoff.run(work())) == "done"
    assert seen == [0]  # running there: the hand-off hold is gone
    assert clock.busy_tokens == 1  # finished, the caller has not resumed yet
    handoff.caller_resumed()
    handoff.caller_resumed()  # idempotent
    assert clock.busy_tokens == 0
    clock.close()


def test_a_handoff_that_never_started_lets_go() -> None:
    clock = VirtualClock(autojump=False)
    handoff = _Handoff(clock)
    handoff.caller_resumed()  # e.g. cancelled before the coroutine ran
    assert clock.busy_tokens == 0
    clock.close()


@pytest.mark.asyncio
async def test_relayed_and_blocking_runs_leave_no_hold_behind() -> None:
    clock = VirtualClock()
    bridge = BackgroundLoop()
    bridge.clock = clock
    try:
        await bridge.relay(clock.sleep(5))  # time still jumps while the coroutine waits
        assert clock.now() == 5.0
        assert await asyncio.to_thread(bridge.run, asyncio.sleep(0)) is None
        with pytest.raises(ZeroDivisionError):
            await bridge.relay(_fails())
        assert clock.busy_tokens == 0
    finally:
        bridge.close()
        clock.close()


async def _fails() -> None:
    raise ZeroDivisionError
