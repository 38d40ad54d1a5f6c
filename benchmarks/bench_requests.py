"""Benchmark 1: ``get_sandbox`` on the fake against a bare aiohttp handler (goal >= 50%),
what the journal's messages (headers and bodies, redacted and capped) cost (goal < 5%), and
what persistence (``serve --state-dir``) costs: the same fake saving its state, side by side
(goal: at most 5% slower).

Both servers run in this loop and are driven by one ``aiohttp.ClientSession`` each, with
keep-alive: httpx's ``AsyncClient`` adds several hundred microseconds per call and would hide the
server's own cost. The bare handler returns the very JSON the fake returned for the sandbox, so
the difference is the fake's middlewares (operation name, journal, clock, auth), its lookup and
its serialisation. The same fake with ``journal.messages`` off, interleaved, gives the cost of
keeping each exchange's headers and bodies.

The goals compare the CPU time of this loop's thread (client and server share it; nothing in
it waits on anything else, so on an idle machine it is the wall time, and the round trips are
reported beside it): on a loaded machine a batch's wall time is mostly its wait for a core,
which moves the wall-time ratios by up to 2x. A persisted fake's writes run on a thread of
their own (``fake_server.persist.writer``), which is what its answers do not wait on; what it
defers on this thread (the journal's events, encoded at most ``JOURNAL_EVERY`` after they
happen) is counted with its batch: each persisted sample goes on idling until that is done.

Run: ``python benchmarks/bench_requests.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from benchmarks._common import Report, finish, interleave_async, median, parse_args, timer
from benchmarks._servers import bare_server, fake_with_sandbox, serve_fake
from fake_server.persist.saver import JOURNAL_EVERY

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from fake_server import FakeCreateOS

__all__ = ["main", "run"]

GOAL_FRACTION = 0.5
#: Journal messages on / off: at most 5% slower.
GOAL_MESSAGES = 1.05
#: A fake saving its state / the same fake in memory: at most 5% slower.
GOAL_PERSISTED = 1.05


def bare_app(body: dict[str, Any]) -> web.Application:
    """One route answering with ``body``, serialised per request like the fake does."""

    async def get_sandbox(request: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/v1/sandboxes/{sandbox_id}", get_sandbox)
    return app


async def _batch(
    session: aiohttp.ClientSession, url: str, count: int, clock: Callable[[], float] = timer
) -> float:
    """Seconds per request over ``count`` sequential GETs (by ``clock``: wall by default)."""
    start = clock()
    for _ in range(count):
        async with session.get(url) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"GET answered HTTP {response.status}")
    return (clock() - start) / count


async def _timed(
    session: aiohttp.ClientSession, url: str, count: int, *, settle: float = 0.0
) -> tuple[float, float]:
    """Wall seconds and CPU seconds of this thread (client and server) per request;
    ``settle``: real seconds more of this thread's CPU after the batch (idle but for the
    server's own timers), so work a server defers is counted where it is done."""
    cpu = time.thread_time()
    per_request = await _batch(session, url, count)
    if settle:
        await asyncio.sleep(settle)
    return per_request, (time.thread_time() - cpu) / count


async def _messages(
    fake: FakeCreateOS, session: aiohttp.ClientSession, url: str, count: int, *, on: bool
) -> float:
    """CPU seconds per request (client and fake share this thread) with the journal keeping
    headers and bodies or not: CPU time, unlike wall time, does not count the other processes
    of a shared machine, and a difference of a few percent is all this measures."""
    fake.journal.messages = on
    try:
        return await _batch(session, url, count, time.thread_time)
    finally:
        fake.journal.messages = True


async def _messages_pair(
    fake: FakeCreateOS, session: aiohttp.ClientSession, url: str, count: int
) -> tuple[float, float]:
    """CPU per request with messages on and off, back to back (in alternating order), so
    their ratio drifts less with the machine's load than two separate samples."""
    _PAIRS[0] += 1
    if _PAIRS[0] % 2:
        on = await _messages(fake, session, url, count, on=True)
        return on, await _messages(fake, session, url, count, on=False)
    off = await _messages(fake, session, url, count, on=False)
    return await _messages(fake, session, url, count, on=True), off


_PAIRS = [0]


async def run(rounds: int, requests: int) -> Report:
    report = Report("get_sandbox: fake vs bare aiohttp handler", rounds)
    async with (
        serve_fake() as fake,
        aiohttp.ClientSession() as fake_session,
        serve_fake(persisted=True) as kept,
        aiohttp.ClientSession() as kept_session,
    ):
        fake_session.headers["X-Api-Key"] = fake.api_key
        sandbox_id, body = await fake_with_sandbox(fake, fake_session)
        fake_url = f"{fake.api_url}/sandboxes/{sandbox_id}"
        kept_session.headers["X-Api-Key"] = kept.api_key
        kept_id, _ = await fake_with_sandbox(kept, kept_session)
        kept_url = f"{kept.api_url}/sandboxes/{kept_id}"
        await _batch(kept_session, kept_url, 5)
        async with bare_server(bare_app(body)) as bare, aiohttp.ClientSession() as bare_session:
            bare_url = f"{bare.url}/v1/sandboxes/{sandbox_id}"
            # Warm both paths (connection, caches) outside the measurement.
            await _batch(fake_session, fake_url, 5)
            await _batch(bare_session, bare_url, 5)
            samples = await interleave_async(
                {
                    "fake": lambda: _timed(fake_session, fake_url, requests),
                    "persisted": lambda: _timed(
                        kept_session, kept_url, requests, settle=JOURNAL_EVERY + 0.02
                    ),
                    "journal": lambda: _messages_pair(fake, fake_session, fake_url, requests),
                    "bare": lambda: _timed(bare_session, bare_url, requests),
                },
                rounds,
            )
        journal_events = len(fake.journal)
    fake_s, bare_s = (median([wall for wall, _ in samples[k]]) for k in ("fake", "bare"))
    kept_s = median([wall for wall, _ in samples["persisted"]])
    # The goals compare CPU time of the loop's thread, which runs client and server: on an
    # idle machine it is the wall time (nothing here waits), and a loaded one moves it far
    # less (a round's wall time there is mostly waiting for a turn on a core).
    fake_cpu, bare_cpu, kept_cpu = (
        median([cpu for _, cpu in samples[k]]) for k in ("fake", "bare", "persisted")
    )
    messages_s = median([on for on, _ in samples["journal"]])
    quiet_s = median([off for _, off in samples["journal"]])
    ratio = median([on / off for on, off in samples["journal"]])
    report.add("fake round trip", fake_s * 1e6, "µs")
    report.add("fake CPU per request", messages_s * 1e6, "µs", "client and fake")
    report.add("fake CPU per request, no messages", quiet_s * 1e6, "µs", "journal.messages off")
    report.add("bare round trip", bare_s * 1e6, "µs")
    report.add("bare CPU per request", bare_cpu * 1e6, "µs", "client and server")
    report.add("persisted fake round trip", kept_s * 1e6, "µs", "saving its state (SQLite)")
    report.add("persisted fake CPU per request", kept_cpu * 1e6, "µs", "the serving thread")
    report.add("fake rate", 1 / fake_s, "req/s")
    report.add("bare rate", 1 / bare_s, "req/s")
    report.add("journal events kept", journal_events, "events", "the fake journals every call")
    report.goal(
        "fake rate / bare rate", bare_cpu / fake_cpu, GOAL_FRACTION, "x", higher_is_better=True
    )
    report.goal(
        "persisted / in-memory round trip", kept_cpu / fake_cpu, GOAL_PERSISTED, "x",
        higher_is_better=False,
    )  # fmt: skip
    report.goal(
        "journal messages on / off",
        ratio,
        GOAL_MESSAGES,
        "x",
        higher_is_better=False,
    )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=9)
    requests = args.scale.pick(full=300, smoke=3, quick=300)
    return finish(asyncio.run(run(args.rounds, requests)), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
