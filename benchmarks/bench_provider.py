"""Benchmark 4: the provider's fixed costs and a full reuse lifecycle against the fake.

* construction plus a first request (``destroy_lease`` of a sandbox that is already gone: one
  DELETE answered 404): the first provider in a fresh process, then later ones (goal < 5 ms
  after the first). The first is measured in a child process so nothing warmed it up;
* acquire → realize → execute → release (pause) → resume → execute → destroy against the fake
  (virtual clock, immediate transitions, pacing off) against the same lifecycle through
  ``httpx.MockTransport`` with canned answers, the floor without sockets or a shell
  (goal: within 4x of the floor);
* no wall-clock sleeping during a fake-backed lifecycle: ``asyncio.sleep``/``time.sleep`` with
  a non-zero delay, and wall-clock timers armed from provider code, are counted (goal: 0).

Run: ``python benchmarks/bench_provider.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from benchmarks._canned import CANNED_OUTPUT, CannedApi
from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from benchmarks._servers import serve_fake
from benchmarks._sleepspy import SleepSpy
from fake_server import VirtualClock
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Sequence

    import httpx

    from fake_server import FakeCreateOS

__all__ = ["lifecycle", "main", "run"]

FIRST_REQUEST_GOAL_MS = 5.0
LIFECYCLE_GOAL_RATIO = 4.0
GONE_SANDBOX = "sb-01KBENCH0000000000000GONE0"


def environment(api_url: str, api_key: str) -> Environment:
    return Environment(
        company_id="bench",
        environment_id="bench-env",
        config={"apiUrl": api_url, "apiKey": api_key, "shape": "s-1vcpu-1gb", "reuseLease": True},
    )


def _metadata(env: Environment) -> dict[str, Any]:
    """Lease metadata as a host persists it: enough for ``destroy_lease`` to own the lease."""
    return {
        "provider": "createos",
        "apiUrl": env.config["apiUrl"],
        "companyId": env.company_id,
        "environmentId": env.environment_id,
    }


async def lifecycle(provider: CreateosProvider, env: Environment) -> None:
    """One reuse lifecycle; raises if any step does not do what a host relies on."""
    lease = await provider.acquire_lease(env, run_id="bench")
    lease_id = lease.provider_lease_id
    if lease_id is None:
        raise RuntimeError("acquire_lease returned no lease id")
    await provider.realize_workspace(env, lease)
    await _check_execute(provider, env, lease)
    await provider.release_lease(env, lease_id, lease.metadata)
    resumed = await provider.resume_lease(env, lease_id, lease.metadata)
    if resumed.provider_lease_id != lease_id:
        raise RuntimeError("the paused lease did not resume")
    await _check_execute(provider, env, resumed)
    await provider.destroy_lease(env, lease_id, resumed.metadata)


async def _check_execute(provider: CreateosProvider, env: Environment, lease: Any) -> None:
    result = await provider.execute(env, lease, "printf", [CANNED_OUTPUT])
    if result.exit_code != 0 or result.stdout != CANNED_OUTPUT:
        raise RuntimeError("the benchmark command did not print its output")


def _provider(
    clock: VirtualClock, transport: httpx.AsyncBaseTransport | None = None
) -> CreateosProvider:
    return CreateosProvider(clock=clock, pacer=Pacer.disabled(), environ={}, transport=transport)


async def first_requests(count: int) -> list[float]:
    """Seconds for ``count`` providers, in order, each constructed and sending one request."""
    async with serve_fake() as fake:
        clock = fake.clock
        assert isinstance(clock, VirtualClock)
        env = environment(fake.url, fake.api_key)
        metadata = _metadata(env)
        costs = []
        for _ in range(count):
            start = timer()
            provider = _provider(clock)
            await provider.destroy_lease(env, GONE_SANDBOX, metadata)
            costs.append(timer() - start)
            await provider.shutdown()
    return costs


def _first_in_child(count: int) -> list[float]:
    """``first_requests`` in a fresh interpreter, so the first provider really is the first."""
    code = (
        "import asyncio, json\n"
        "from benchmarks.bench_provider import first_requests\n"
        f"print(json.dumps(asyncio.run(first_requests({count}))))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,  # so ``benchmarks`` imports from the checkout
    ).stdout
    costs: list[float] = json.loads(output.strip().splitlines()[-1])
    return costs


async def _timed_lifecycle(provider: CreateosProvider, env: Environment) -> float:
    start = timer()
    await lifecycle(provider, env)
    return timer() - start


async def _spied_lifecycle(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment
) -> tuple[SleepSpy, float, int]:
    """One lifecycle under a ``SleepSpy``; also its virtual seconds and request count."""
    before, requests = fake.clock.now(), len(fake.journal.operations())
    with SleepSpy(asyncio.get_running_loop()) as spy:
        await lifecycle(provider, env)
    return spy, fake.clock.now() - before, len(fake.journal.operations()) - requests


async def _sleeping_command(
    fake: FakeCreateOS, provider: CreateosProvider, env: Environment, seconds: int
) -> float:
    """Real seconds for ``execute("sleep N")``: the fake's clock should make it nearly free."""
    lease = await provider.acquire_lease(env, run_id="bench-sleep")
    assert lease.provider_lease_id is not None
    try:
        start, virtual = timer(), fake.clock.now()
        result = await provider.execute(env, lease, "sleep", [str(seconds)])
        real = timer() - start
        if result.exit_code != 0 or fake.clock.now() < virtual + seconds:
            raise RuntimeError("the sleeping command did not sleep on the fake's clock")
    finally:
        await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
    return real


async def run(rounds: int, providers: int, *, child: bool, sleep_seconds: int) -> Report:
    report = Report("provider: first request and reuse lifecycle", rounds)
    firsts = _first_in_child(providers) if child else await first_requests(providers)
    async with serve_fake() as fake:
        clock = fake.clock
        assert isinstance(clock, VirtualClock)
        fake_env = environment(fake.url, fake.api_key)
        on_fake = _provider(clock)
        canned = _provider(clock, CannedApi(clock).transport())
        canned_env = environment("https://canned.invalid", "cos_canned_key")
        try:
            await lifecycle(on_fake, fake_env)  # warm-up, outside the measurement
            await lifecycle(canned, canned_env)
            samples = await interleave_async(
                {
                    "fake": lambda: _timed_lifecycle(on_fake, fake_env),
                    "canned": lambda: _timed_lifecycle(canned, canned_env),
                },
                rounds,
            )
            spy, virtual_seconds, requests = await _spied_lifecycle(fake, on_fake, fake_env)
            sleeping = await _sleeping_command(fake, on_fake, fake_env, sleep_seconds)
        finally:
            await on_fake.shutdown()
            await canned.shutdown()
    later = median(firsts[1:]) if len(firsts) > 1 else firsts[0]
    note = "fresh process" if child else "in this process: may be warm"
    report.add("first provider + request", firsts[0] * 1e3, "ms", note)
    report.add("later provider + request", later * 1e3, "ms")
    fake_s, canned_s = median(samples["fake"]), median(samples["canned"])
    report.add("lifecycle on the fake", fake_s * 1e3, "ms")
    report.add("lifecycle on MockTransport", canned_s * 1e3, "ms", "canned floor")
    report.add("requests per lifecycle", requests, "requests")
    report.add("virtual time of one lifecycle", virtual_seconds, "s", "on the fake's clock")
    report.add("wall-clock timers from provider", spy.provider_timers, "timers")
    report.add(
        f"execute sleep {sleep_seconds} (virtual s)",
        sleeping * 1e3,
        "ms",
        "real time; heartbeats every 5 virtual s",
    )
    report.goal(
        "later provider + request", later * 1e3, FIRST_REQUEST_GOAL_MS, "ms", higher_is_better=False
    )
    report.goal(
        "lifecycle fake / canned",
        fake_s / canned_s,
        LIFECYCLE_GOAL_RATIO,
        "x",
        higher_is_better=False,
    )
    report.goal("wall-clock sleeps in a lifecycle", spy.sleeps, 0, "sleeps", higher_is_better=False)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=9)
    providers = args.scale.pick(full=21, smoke=2)
    sleep_seconds = args.scale.pick(full=30, smoke=5)
    report = asyncio.run(
        run(args.rounds, providers, child=not args.smoke, sleep_seconds=sleep_seconds)
    )
    return finish(report, args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
