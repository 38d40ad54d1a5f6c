"""Benchmark: requests per second over HTTP/2 against HTTP/1.1 on the same fake, side by side
(goal: HTTP/2 at least 0.8x HTTP/1.1 with requests in flight together, as the TS SDK 0.8 sends
them on its one session).

One fake in this loop, ``get_sandbox`` driven by httpx for both protocols (one client library,
so the difference is the protocol): HTTP/1.1 over a pool of keep-alive connections, HTTP/2
with prior knowledge over one connection. Each round runs both, in alternating order, with 8
requests in flight and then one at a time; figures are medians over rounds. Client and fake
share this process, as in a test; the fake's HTTP/2 front and httpx's HTTP/2 client are both
pure Python (``h2``), the HTTP/1.1 paths partly C (aiohttp's parser), which is what one
request at a time shows.

Run: ``python benchmarks/bench_http2.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING

import aiohttp
import httpx

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from benchmarks._servers import fake_with_sandbox, serve_fake

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

#: HTTP/2 / HTTP/1.1 requests per second, 8 in flight.
GOAL_RATIO = 0.8
IN_FLIGHT = 8


async def _rate(
    client: httpx.AsyncClient, url: str, count: int, in_flight: int
) -> tuple[float, float]:
    """Requests per second over ``count`` GETs, ``in_flight`` at a time: per second of wall
    time, and per second of this thread's CPU time (client and fake)."""
    left = count

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            reply = await client.get(url)
            if reply.status_code != 200:
                raise RuntimeError(f"GET answered HTTP {reply.status_code}")

    start, cpu = timer(), time.thread_time()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return count / (timer() - start), count / (time.thread_time() - cpu)


async def run(rounds: int, requests: int) -> Report:
    report = Report("get_sandbox: HTTP/2 vs HTTP/1.1 on one fake", rounds)
    async with serve_fake() as fake, aiohttp.ClientSession() as session:
        session.headers["X-Api-Key"] = fake.api_key
        sandbox_id, _ = await fake_with_sandbox(fake, session)
        url = f"{fake.api_url}/sandboxes/{sandbox_id}"
        headers = {"X-Api-Key": fake.api_key}
        limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
        async with (
            httpx.AsyncClient(headers=headers, limits=limits) as http1,
            httpx.AsyncClient(headers=headers, http1=False, http2=True) as http2,
        ):
            for client in (http1, http2):  # connections and caches, outside the measurement
                await _rate(client, url, IN_FLIGHT * 2, IN_FLIGHT)
            versions = {(await c.get(url)).http_version for c in (http1, http2)}
            if versions != {"HTTP/1.1", "HTTP/2"}:
                raise RuntimeError(f"expected both protocols, got {sorted(versions)}")
            samples = await interleave_async(
                {
                    "http1": lambda: _rate(http1, url, requests, IN_FLIGHT),
                    "http2": lambda: _rate(http2, url, requests, IN_FLIGHT),
                    "http1 serial": lambda: _rate(http1, url, requests, 1),
                    "http2 serial": lambda: _rate(http2, url, requests, 1),
                },
                rounds,
            )
    wall = {name: median([w for w, _ in values]) for name, values in samples.items()}
    cpu = {name: median([c for _, c in values]) for name, values in samples.items()}
    report.add(
        "HTTP/1.1 rate", wall["http1"], "req/s", f"{IN_FLIGHT} in flight, {IN_FLIGHT} connections"
    )
    report.add("HTTP/2 rate", wall["http2"], "req/s", f"{IN_FLIGHT} in flight, one connection")
    report.add("HTTP/1.1 rate, one at a time", wall["http1 serial"], "req/s")
    report.add("HTTP/2 rate, one at a time", wall["http2 serial"], "req/s")
    report.add("HTTP/2 / HTTP/1.1, wall time", wall["http2"] / wall["http1"], "x")
    report.add(
        "HTTP/2 / HTTP/1.1, one at a time", cpu["http2 serial"] / cpu["http1 serial"], "x", "CPU"
    )
    report.add("HTTP/1.1 requests per CPU second", cpu["http1"], "req/s", "client and fake")
    report.add("HTTP/2 requests per CPU second", cpu["http2"], "req/s", "client and fake")
    report.goal(
        "HTTP/2 / HTTP/1.1 rate", cpu["http2"] / cpu["http1"], GOAL_RATIO, "x",
        higher_is_better=True,
    )  # fmt: skip
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=9)
    requests = args.scale.pick(full=400, smoke=8)
    return finish(asyncio.run(run(args.rounds, requests)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
