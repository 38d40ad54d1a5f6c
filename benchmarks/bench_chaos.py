"""Benchmark: chaos throughput, lease lifecycles per second under seeded faults.

Runs the chaos harness (``benchmarks/chaos.py``, also run by
``tests/test_chaos.py``: acquire, execute, sync, release with pause, resume,
destroy through ``CreateosProvider`` against the fake, 8 lifecycles at a time on one
VirtualClock) with its random fault schedules and, side by side in the same rounds, with no
faults. Prints lifecycles/s and requests/s for both, the
faulted/clean ratio, and the estimated time of the 500-lifecycle acceptance run (goal: 60 s on
the 2-core machine). The machine is shared and noisy: compare the ratio, not the absolute rates.

Run: ``python benchmarks/bench_chaos.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._common import Report, finish, interleave, median, parse_args, per_second
from benchmarks.chaos import random_faults, run_chaos

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

    from fake_server.faults import Fault

ROOT = Path(__file__).resolve().parent.parent
ACCEPTANCE_LIFECYCLES = 500
BUDGET_SECONDS = 60.0


def run(rounds: int, lifecycles: int, seed: int) -> Report:
    totals: dict[str, list[Any]] = {"faulted": [], "clean": []}

    def measure(name: str) -> float:
        schedule = random_faults if name == "faulted" else _no_faults
        with tempfile.TemporaryDirectory() as scratch:
            result = asyncio.run(run_chaos(seed, lifecycles, Path(scratch), schedule=schedule))
        if result.failures:
            raise SystemExit("chaos run broke a guarantee:\n" + result.failures[0])
        totals[name].append(result)
        return per_second(result.seconds, result.lifecycles)

    samples = interleave(
        {"faulted": lambda: measure("faulted"), "clean": lambda: measure("clean")}, rounds
    )
    report = Report(f"chaos lifecycles ({lifecycles} per run, seed {seed})", rounds)
    faulted, clean = median(samples["faulted"]), median(samples["clean"])
    for name, rate in (("faulted", faulted), ("clean", clean)):
        runs = totals[name]
        report.add(f"{name} lifecycles", rate, "lifecycles/s")
        report.add(
            f"{name} requests",
            median([per_second(r.seconds, r.requests) for r in runs]),
            "requests/s",
        )
        report.add(
            f"{name} clock jumps per lifecycle",
            median([r.jumps / r.lifecycles for r in runs]),
            "jumps",
        )
    report.add(
        "faults fired per lifecycle",
        median([r.fired / r.lifecycles for r in totals["faulted"]]),
        "faults",
    )
    report.add("faulted / clean", faulted / clean, "x")
    estimate = ACCEPTANCE_LIFECYCLES / faulted
    report.add("500-lifecycle acceptance run", estimate, "s", "estimated")
    report.goal("chaos acceptance run", estimate, BUDGET_SECONDS, "s", higher_is_better=False)
    return report


def _no_faults(rng: random.Random, index: int, account: str) -> list[Fault]:
    return []


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=3)
    lifecycles = args.scale.pick(full=200, smoke=8)
    return finish(run(args.rounds, lifecycles, seed=20261202), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
