"""Benchmark: a restart of a fake that keeps its state (``serve --state-dir``) holding 1,000
sandboxes, from a new ``FakeCreateOS`` to its first answered request (goal under 2 s), on
each runtime that runs here.

The state is made once per runtime through the API: every tenth sandbox holds an uploaded
file, every other one is paused, the rest are running (they come back paused). Each round
starts a new fake on the directory (restoring everything), asks it one request, and stops it
(the stop saves, outside the measurement).

Run: ``python benchmarks/bench_persist.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from benchmarks._common import Report, finish, interleave, median, parse_args, timer
from benchmarks._servers import SHAPE
from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.clock import RealClock
from fake_server.persist import Persistence
from fake_server.runtime.api import RuntimeUnavailable

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

RESTART_GOAL_S = 2.0


def _fake(state: Path, runtime: str) -> FakeCreateOS:
    fake = FakeCreateOS(
        clock=RealClock(), transitions=TransitionPolicy.immediate(), runtime=runtime
    )
    Persistence(fake, state, on_error=_raise)
    return fake


def _raise(message: str) -> None:
    raise RuntimeError(message)


def _populate(state: Path, runtime: str, count: int) -> None:
    fake = _fake(state, runtime).start()
    try:
        with httpx.Client(
            base_url=fake.api_url,
            headers={"X-Api-Key": fake.api_key},
            timeout=60,
            verify=tls_context(),
        ) as http:
            for index in range(count):
                reply = http.post("/sandboxes", json={"shape": SHAPE})
                sandbox_id = reply.json()["data"]["id"]
                if index % 10 == 0:
                    http.put(
                        f"/sandboxes/{sandbox_id}/files",
                        params={"path": "/home/sandbox/data.bin"},
                        content=bytes(range(256)) * 16,
                    ).raise_for_status()
                if index % 2:
                    http.post(f"/sandboxes/{sandbox_id}/pause").raise_for_status()
    finally:
        fake.close()


def _restart(state: Path, runtime: str, count: int) -> float:
    start = timer()
    fake = _fake(state, runtime).start()
    try:
        reply = httpx.get(
            f"{fake.api_url}/sandboxes",
            params={"limit": 1},
            headers={"X-Api-Key": fake.api_key},
            verify=tls_context(),  # not the CA bundle's load (~25 ms) in the timed restart
        )
        elapsed = timer() - start
        if reply.json()["data"]["pagination"]["total"] != count:
            raise RuntimeError("the restart did not bring every sandbox back")
    finally:
        fake.close()
    return elapsed


def run(rounds: int, count: int) -> Report:
    report = Report(f"restart of a persisted fake holding {count:,} sandboxes", rounds)
    with contextlib.ExitStack() as stack:
        variants = {}
        for runtime in ("bashkit", "process"):
            state = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "state"
            try:
                _populate(state, runtime, count)
            except RuntimeUnavailable:
                continue  # no bubblewrap here: the bashkit figure alone
            variants[runtime] = lambda s=state, r=runtime: _restart(s, r, count)
        samples = interleave(variants, rounds)
    for runtime, values in samples.items():
        report.add(f"restart, {runtime} runtime", median(values), "s", "to the first answer")
    report.goal(
        f"restart with {count:,} sandboxes",
        max(median(values) for values in samples.values()),
        RESTART_GOAL_S,
        "s",
        higher_is_better=False,
    )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=3)
    count = args.scale.pick(full=1000, smoke=3)
    return finish(run(args.rounds, count), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
