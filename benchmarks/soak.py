"""Soak: file descriptors and memory stay flat over thousands of runs and lifecycles.

Not part of CI (``tests/reliability/test_leaks.py`` is its cheap version). First 2,000 command
executions in one sandbox and 500 sandbox lifecycles with ``reset()`` between them, each
checked against the starting fd count and the interpreter's allocated memory blocks; then
lifecycles until ``--minutes`` (default 10) have passed, printing RSS and open fds every
``--interval`` seconds. Exits 1 when fds or memory grew past the bounds.

    python -m benchmarks.soak [--minutes 10] [--interval 30]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time

import httpx

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, httpx_event_hooks

#: Growth allowed after the warm-up: fds none, 10,000 interpreter memory blocks (caches,
#: interned strings), RSS 32 MiB (the allocator keeps freed arenas).
FD_BOUND = 0
BLOCKS_BOUND = 10_000
RSS_BOUND = 32 << 20


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def create(client: httpx.AsyncClient) -> str:
    reply = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    reply.raise_for_status()
    return f"/v1/sandboxes/{reply.json()['data']['id']}"


async def execute(client: httpx.AsyncClient, sandbox: str, index: int) -> None:
    script = f"echo {index} >/tmp/f; cat /tmp/f; sleep 1"
    reply = await client.post(sandbox + "/exec", json={"cmd": "bash", "args": ["-c", script]})
    reply.raise_for_status()
    assert reply.json()["data"]["result"]["stdout"] == f"{index}\n"


async def lifecycle(fake: FakeCreateOS, client: httpx.AsyncClient, index: int) -> None:
    """Create, two execs, a managed process left running, destroy (odd) or reset (even)."""
    sandbox = await create(client)
    for step in range(2):
        await execute(client, sandbox, index * 2 + step)
    (await client.post(sandbox + "/processes", json={"cmd": "cat"})).raise_for_status()
    if index % 2:
        (await client.delete(sandbox)).raise_for_status()
    fake.reset()
    client.headers["X-Api-Key"] = fake.api_key


def line(label: str, start: float, fds0: int, rss0: int) -> str:
    return (
        f"{time.monotonic() - start:7.1f}s {label:<22} fds {open_fds():5d} ({open_fds() - fds0:+d})"
        f"  rss {rss() / 2**20:7.1f} MiB ({(rss() - rss0) / 2**20:+.1f})"
    )


async def soak(minutes: float, interval: float, executions: int, lifecycles: int) -> bool:
    fake = FakeCreateOS(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
    async with (
        fake,
        httpx.AsyncClient(
            base_url=fake.url,
            headers={"X-Api-Key": fake.api_key},
            timeout=30,
            event_hooks=httpx_event_hooks(fake.clock),
        ) as client,
    ):
        for index in range(5):  # warm-up: imports, caches, the connection
            await lifecycle(fake, client, index)
        gc.collect()
        start, fds0, rss0 = time.monotonic(), open_fds(), rss()
        print(line("start", start, fds0, rss0), flush=True)
        # Not tracemalloc: on CPython 3.11 it crashes when a foreign thread (bashkit's workers
        # calling back into Python) creates its thread state while tracing.
        blocks0 = sys.getallocatedblocks()
        sandbox = await create(client)
        for index in range(executions):
            await execute(client, sandbox, index)
        fake.reset()
        client.headers["X-Api-Key"] = fake.api_key
        gc.collect()
        print(line(f"{executions} executions", start, fds0, rss0), flush=True)
        ok = open_fds() - fds0 <= FD_BOUND
        for index in range(lifecycles):
            await lifecycle(fake, client, index)
        gc.collect()
        blocks = sys.getallocatedblocks() - blocks0
        print(line(f"{lifecycles} lifecycles", start, fds0, rss0), flush=True)
        print(f"allocated blocks kept: {blocks}", flush=True)
        ok = ok and open_fds() - fds0 <= FD_BOUND and blocks <= BLOCKS_BOUND
        deadline = start + minutes * 60
        next_report, count = time.monotonic() + interval, 0
        while time.monotonic() < deadline:
            await lifecycle(fake, client, count)
            count += 1
            if time.monotonic() >= next_report:
                gc.collect()
                print(line(f"{count} more lifecycles", start, fds0, rss0), flush=True)
                next_report += interval
        gc.collect()
        print(line(f"end ({count} more)", start, fds0, rss0), flush=True)
        return ok and open_fds() - fds0 <= FD_BOUND and rss() - rss0 <= RSS_BOUND


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=30.0)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--lifecycles", type=int, default=500)
    args = parser.parse_args(argv)
    ok = asyncio.run(soak(args.minutes, args.interval, args.executions, args.lifecycles))
    print("flat" if ok else "GREW: fds or memory past the bounds")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
