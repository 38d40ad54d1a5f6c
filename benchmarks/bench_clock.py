"""Benchmark 7: what fake time costs in real time, and that real delays never fire it.

Speed claims that used to be wall-clock asserts in the test suite live here, measured side by
side in one run:

* ``fake.reset()`` against building a fresh ``FakeCreateOS`` (goal: a reset under 1 ms);
* ``sleep 30; sleep 1.5 0.5s; sleep 2m`` (152 fake seconds) in a sandbox shell against
  ``true``: the real cost of a fake sleep, as a ratio;
* SIGTERM to a shell in ``sleep 1000``: how long the cancelled run takes to end;
* a provider lease lifecycle (acquire, execute, release) with every request held back by 1 s
  of real time (``--smoke``: 0.02 s) through a delaying httpx transport, the fake serving from
  its own thread: how many fake deadlines fired (goal: none).

Run: ``python benchmarks/bench_clock.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

import httpx

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from fake_server.runtime.bashkit import CommandRegistry, SandboxDisk, Shell
from pytest_createos.provider import CreateosError, CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

RESET_GOAL_MS = 1.0
LONG_SLEEP = ["/bin/bash", "-c", "sleep 30; sleep 1.5 0.5s; sleep 2m"]


async def _drop(data: bytes) -> None:
    return None


async def _shell_run(argv: list[str]) -> float:
    clock = VirtualClock()
    try:
        shell = Shell(SandboxDisk(), clock, CommandRegistry())
        start = timer()
        await shell.run(argv, on_stdout=_drop, on_stderr=_drop)
        return timer() - start
    finally:
        clock.close()


async def _cancel_mid_sleep() -> float:
    clock = VirtualClock(autojump=False)
    try:
        shell = Shell(SandboxDisk(), clock, CommandRegistry())
        task = asyncio.create_task(
            shell.run(["/bin/bash", "-c", "sleep 1000"], on_stdout=_drop, on_stderr=_drop)
        )
        for _ in range(100_000):  # bounded: until the shell sleeps on the clock
            if clock.next_deadline() is not None:
                break
            await asyncio.sleep(0)
        else:
            raise RuntimeError("the shell never started sleeping")
        start = timer()
        shell.deliver_sigterm(task)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return timer() - start
    finally:
        clock.close()


async def _resets(count: int) -> float:
    fake = FakeCreateOS(clock=VirtualClock())
    start = timer()
    for seed in range(count):
        fake.reset(seed=seed)
    return (timer() - start) / count


async def _fresh(count: int) -> float:
    clock = VirtualClock()
    start = timer()
    for seed in range(count):
        FakeCreateOS(seed=seed, clock=clock)
    elapsed = (timer() - start) / count
    clock.close()
    return elapsed


class _Delaying(httpx.AsyncBaseTransport):
    def __init__(self, delay: float) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._delay = delay
        self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        await asyncio.sleep(self._delay)  # real time on the wire
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _delayed_lifecycle(delay: float) -> tuple[int, int, float]:
    """(requests, fake deadlines fired, fake seconds elapsed) with every request delayed."""
    clock = VirtualClock()
    fake = FakeCreateOS(seed=0, clock=clock, transitions=TransitionPolicy.immediate()).start()
    transport = _Delaying(delay)
    provider = CreateosProvider(
        clock=clock,
        pacer=Pacer.disabled(),
        environ={},
        transport=clock_transport(clock, transport),
    )
    config = {"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb", "timeoutMs": 2000}
    env = Environment(company_id="c", environment_id="e", config=config)
    fired = 0
    try:
        lease = await provider.acquire_lease(env, run_id="bench")
        assert lease.provider_lease_id is not None
        result = await provider.execute(env, lease, "/bin/bash", ["-c", "echo hi"])
        fired += int(result.timed_out)
        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
    except CreateosError as error:
        fired += int(str(error) == "CreateOS operation timed out.")
    finally:
        await provider.shutdown()
        fake.close()
        clock.close()
    return transport.sent, fired, clock.now()


async def run(rounds: int, resets: int, delay: float) -> Report:
    report = Report("fake time in real time; real delays on the wire", rounds)
    await _shell_run(["true"])  # imports and first-use caches outside the measurement

    async def reset() -> float:
        return await _resets(resets)

    async def fresh() -> float:
        return await _fresh(max(1, resets // 10))

    async def long_sleep() -> float:
        return await _shell_run(LONG_SLEEP)

    async def no_op() -> float:
        return await _shell_run(["true"])

    samples = await interleave_async(
        {"reset": reset, "fresh": fresh, "sleep": long_sleep, "true": no_op}, rounds
    )
    cancel = median([await _cancel_mid_sleep() for _ in range(rounds)])
    reset_ms, fresh_ms = median(samples["reset"]) * 1e3, median(samples["fresh"]) * 1e3
    sleep_s, true_s = median(samples["sleep"]), median(samples["true"])
    report.add("fake.reset()", reset_ms, "ms")
    report.add("FakeCreateOS() fresh", fresh_ms, "ms")
    report.add("reset / fresh", reset_ms / fresh_ms, "x")
    report.add("152 fake s of sleep in a shell", sleep_s * 1e3, "ms real")
    report.add("`true` in a shell", true_s * 1e3, "ms real")
    report.add("sleep 152 s / true", sleep_s / true_s, "x")
    report.add("SIGTERM mid-sleep to end of run", cancel * 1e3, "ms real")
    requests, fired, fake_elapsed = await _delayed_lifecycle(delay)
    report.add("lifecycle requests delayed", requests, "requests", f"{delay} s real each")
    report.add("fake time for that lifecycle", fake_elapsed, "s")
    report.goal("fake.reset()", reset_ms, RESET_GOAL_MS, "ms", higher_is_better=False)
    report.goal("fake deadlines fired by real delays", fired, 0, "", higher_is_better=False)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=5)
    resets = args.scale.pick(full=200, smoke=5)
    delay = 0.02 if args.scale.smoke else 1.0
    return finish(asyncio.run(run(args.rounds, resets, delay)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
