"""Benchmark 1: ``get_sandbox`` on the fake against a bare aiohttp handler (goal >= 50%).

Both servers run in this loop and are driven by one ``aiohttp.ClientSession`` each, with
keep-alive: httpx's ``AsyncClient`` adds several hundred microseconds per call and would hide the
server's own cost. The bare handler returns the very JSON the fake returned for the sandbox, so
the difference is the fake's middlewares (operation name, journal, clock, auth), its lookup and
its serialisation.

Run: ``python benchmarks/bench_requests.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from benchmarks._servers import bare_server, fake_with_sandbox, serve_fake

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

GOAL_FRACTION = 0.5


def bare_app(body: dict[str, Any]) -> web.Application:
    """One route answering with ``body``, serialised per request like the fake does."""

    async def get_sandbox(request: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/v1/sandboxes/{sandbox_id}", get_sandbox)
    return app


async def _batch(session: aiohttp.ClientSession, url: str, count: int) -> float:
    """Seconds per request over ``count`` sequential GETs."""
    start = timer()
    for _ in range(count):
        async with session.get(url) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"GET answered HTTP {response.status}")
    return (timer() - start) / count


async def run(rounds: int, requests: int) -> Report:
    report = Report("get_sandbox: fake vs bare aiohttp handler", rounds)
    async with serve_fake() as fake, aiohttp.ClientSession() as fake_session:
        fake_session.headers["X-Api-Key"] = fake.api_key
        sandbox_id, body = await fake_with_sandbox(fake, fake_session)
        fake_url = f"{fake.api_url}/sandboxes/{sandbox_id}"
        async with bare_server(bare_app(body)) as bare, aiohttp.ClientSession() as bare_session:
            bare_url = f"{bare.url}/v1/sandboxes/{sandbox_id}"
            # Warm both paths (connection, caches) outside the measurement.
            await _batch(fake_session, fake_url, 5)
            await _batch(bare_session, bare_url, 5)
            samples = await interleave_async(
                {
                    "fake": lambda: _batch(fake_session, fake_url, requests),
                    "bare": lambda: _batch(bare_session, bare_url, requests),
                },
                rounds,
            )
        journal_events = len(fake.journal)
    fake_s, bare_s = median(samples["fake"]), median(samples["bare"])
    report.add("fake round trip", fake_s * 1e6, "µs")
    report.add("bare round trip", bare_s * 1e6, "µs")
    report.add("fake rate", 1 / fake_s, "req/s")
    report.add("bare rate", 1 / bare_s, "req/s")
    report.add("journal events kept", journal_events, "events", "the fake journals every call")
    report.goal("fake rate / bare rate", bare_s / fake_s, GOAL_FRACTION, "x", higher_is_better=True)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=9)
    requests = args.scale.pick(full=300, smoke=3)
    return finish(asyncio.run(run(args.rounds, requests)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
