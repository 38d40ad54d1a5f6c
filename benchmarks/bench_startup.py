"""Benchmark 3: what a test pays to have a fake, and what an idle sandbox costs.

* start + stop of an in-process fake (``async with FakeCreateOS()``) against a bare aiohttp
  app started and cleaned up the same way (goals: the fake within 1 ms, and within 5x the
  bare app in CPU time, which the regression gate watches; the fake has two listeners, the
  API's and the
  preview port's); thread mode (``start()``/``close()``) is reported for information;
* memory per idle sandbox with 1,000 alive, created over HTTP and settled to ``running``
  (goal < 2 MiB): the tracemalloc delta of Python allocations, and the RSS delta, which also
  counts native memory such as bashkit's filesystems.

Run: ``python benchmarks/bench_startup.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import tracemalloc
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from benchmarks._common import (
    Report,
    finish,
    growth_per,
    interleave_async,
    median,
    parse_args,
    rss_bytes,
    timer,
)
from benchmarks._servers import SHAPE, BareServer, serve_fake
from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

MIB = 1024 * 1024
START_STOP_GOAL_MS = 1.0
#: The fake's start + stop / a bare aiohttp app's.
START_STOP_GOAL_RATIO = 5.0
SANDBOX_GOAL_MIB = 2.0


async def _fake_cycle(clock: VirtualClock) -> tuple[float, float]:
    """Wall and CPU (this thread) seconds of one start + stop."""
    start, cpu = timer(), time.thread_time()
    async with FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()):
        pass
    return timer() - start, time.thread_time() - cpu


async def _bare_cycle() -> tuple[float, float]:
    start, cpu = timer(), time.thread_time()
    server = BareServer(web.Application())
    await server.start()
    await server.stop()
    return timer() - start, time.thread_time() - cpu


def _thread_cycle(clock: VirtualClock) -> float:
    start = timer()
    FakeCreateOS(clock=clock).start().close()
    return timer() - start


async def _idle_sandboxes(count: int) -> tuple[float, float]:
    """Bytes per sandbox (tracemalloc, RSS) with ``count`` running sandboxes on one fake."""
    async with serve_fake() as fake, aiohttp.ClientSession() as session:
        session.headers["X-Api-Key"] = fake.api_key
        create = f"{fake.api_url}/sandboxes"
        # One sandbox first, so one-off costs (imports, caches) are not charged per sandbox.
        async with session.post(create, json={"shape": SHAPE}) as response:
            await response.read()
        fake.sandboxes()
        gc.collect()
        tracing_already = tracemalloc.is_tracing()  # e.g. python -X tracemalloc: leave it on
        if not tracing_already:
            tracemalloc.start()
        try:
            traced_before = tracemalloc.get_traced_memory()[0]
            rss_before = rss_bytes()
            for _ in range(count):
                async with session.post(create, json={"shape": SHAPE}) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"create_sandbox answered HTTP {response.status}")
            alive = [s for s in fake.sandboxes() if s.status == "running"]
            if len(alive) != count + 1:
                raise RuntimeError("not every sandbox reached running")
            del alive
            gc.collect()
            traced_after = tracemalloc.get_traced_memory()[0]
            rss_after = rss_bytes()
        finally:
            if not tracing_already:
                tracemalloc.stop()
    return growth_per(traced_before, traced_after, count), growth_per(rss_before, rss_after, count)


async def run(rounds: int, cycles: int, sandboxes: int) -> Report:
    report = Report("fake start/stop and memory per idle sandbox", rounds)
    clock = VirtualClock()
    try:
        await _fake_cycle(clock)  # imports and first-use caches outside the measurement
        await _bare_cycle()

        async def fake_batch() -> tuple[float, float]:
            cycled = [await _fake_cycle(clock) for _ in range(cycles)]
            return median([w for w, _ in cycled]), median([c for _, c in cycled])

        async def bare_batch() -> tuple[float, float]:
            cycled = [await _bare_cycle() for _ in range(cycles)]
            return median([w for w, _ in cycled]), median([c for _, c in cycled])

        samples = await interleave_async({"fake": fake_batch, "bare": bare_batch}, rounds)
        threaded = median(
            [await asyncio.to_thread(_thread_cycle, clock) for _ in range(max(1, rounds))]
        )
    finally:
        clock.close()
    fake_ms, bare_ms = (median([w for w, _ in samples[k]]) * 1e3 for k in ("fake", "bare"))
    # The ratio compares CPU time (nothing here waits): a loaded machine moves it far less.
    fake_cpu, bare_cpu = (median([c for _, c in samples[k]]) for k in ("fake", "bare"))
    report.add("fake start+stop (in loop)", fake_ms, "ms")
    report.add("bare aiohttp start+stop", bare_ms, "ms")
    report.add("fake start+stop, CPU", fake_cpu * 1e3, "ms", "this thread")
    report.add("bare aiohttp start+stop, CPU", bare_cpu * 1e3, "ms", "this thread")
    report.add("fake start+close (thread)", threaded * 1e3, "ms", "for information")
    traced, rss = await _idle_sandboxes(sandboxes)
    report.add("idle sandboxes alive", sandboxes + 1, "sandboxes")
    report.add("per sandbox (tracemalloc)", traced / 1024, "KiB")
    report.add("per sandbox (RSS delta)", rss / 1024, "KiB", "native memory too; 0 if it shrank")
    report.goal("fake start+stop", fake_ms, START_STOP_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "fake / bare start+stop", fake_cpu / bare_cpu, START_STOP_GOAL_RATIO, "x",
        higher_is_better=False,
    )  # fmt: skip
    worst = max(traced, rss) / MIB
    report.goal("memory per idle sandbox", worst, SANDBOX_GOAL_MIB, "MiB", higher_is_better=False)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=7)
    cycles = args.scale.pick(full=10, smoke=2)
    sandboxes = args.scale.pick(full=1000, smoke=5)
    return finish(asyncio.run(run(args.rounds, cycles, sandboxes)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
