"""Benchmark: a provider timeout on the process runtime fires at its deadline, under load too.

Under the plugin's fixtures (``@pytest.mark.createos(runtime="process")``, a pytest run of
its own), ``createos_provider.execute(env, lease, "sleep", ["20"], timeout_ms=1000)`` from a
sync test, ``--rounds`` times (default 10) on an idle machine and as many times beside two
CPU burners (``python -c "while True: pass"``). Per run:

* **lateness**: fake seconds from the deadline (1 s after the call) to the program's end. Fake
  time follows real time while the program runs and stands still once it is gone, so this is
  how long after its deadline the program was killed, in real time (goal: under 100 ms in
  every run);
* **call**: real seconds of the whole call beyond the 1 s timeout (starting the program,
  killing its tree, the result's way back);
* whether the result says ``timed_out`` (goal: every run).

Run: ``python benchmarks/bench_timeouts.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._common import Report, finish, median, parse_args

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["main", "run"]

LATENESS_GOAL_MS = 100.0
#: Real seconds a run of the pytest below may take before it counts as hung.
RUN_BOUND = 300.0

TEST = """
import json, os, time

import pytest


@pytest.mark.createos(runtime="process")
@pytest.mark.parametrize("run", range(int(os.environ["BENCH_TIMEOUT_RUNS"])))
def test_timeout(createos_provider, createos_env, createos_lease, createos_run, createos_clock,
                 run):
    real, fake = time.perf_counter(), createos_clock.now()
    result = createos_run(
        createos_provider.execute(createos_env, createos_lease, "sleep", ["20"], timeout_ms=1000),
        timeout=30,
    )
    record = {
        "real": time.perf_counter() - real,
        "fake": createos_clock.now() - fake,
        "timed_out": result.timed_out,
    }
    with open(os.environ["BENCH_TIMEOUT_OUT"], "a") as out:
        out.write(json.dumps(record) + "\\n")
"""


@contextlib.contextmanager
def _burners(count: int) -> Iterator[None]:
    """``count`` processes spinning a CPU each, ended (by their pids) afterwards."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def _pytest_runs(runs: int, burners: int) -> list[dict[str, Any]]:
    """``runs`` timed-out executes under the fixtures, in a pytest run of their own."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "test_timeout.py").write_text(TEST)
        (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
        out = root / "records.jsonl"
        env = {**os.environ, "BENCH_TIMEOUT_RUNS": str(runs), "BENCH_TIMEOUT_OUT": str(out)}
        with _burners(burners):
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", str(root)],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_BOUND,
                check=False,
            )
        if done.returncode != 0:
            raise RuntimeError(f"the timed-out executes failed:\n{done.stdout}\n{done.stderr}")
        return [json.loads(line) for line in out.read_text().splitlines()]


def run(runs: int) -> Report:
    report = Report("process runtime: provider timeout_ms=1000 on sleep 20", runs)
    every: list[dict[str, Any]] = []
    for label, burners in (("idle", 0), ("beside 2 CPU burners", 2)):
        records = _pytest_runs(runs, burners)
        every += records
        late = [(r["fake"] - 1.0) * 1000 for r in records]
        call = [(r["real"] - 1.0) * 1000 for r in records]
        report.add(f"lateness, {label}", median(late), "ms", f"worst {max(late):.1f} ms")
        report.add(f"call beyond 1 s, {label}", median(call), "ms", f"worst {max(call):.1f} ms")
        fired = sum(1 for r in records if r["timed_out"])
        report.add(f"timed out, {label}", fired, "runs", f"of {len(records)}")
    worst = max((r["fake"] - 1.0) * 1000 for r in every)
    report.goal("worst lateness", worst, LATENESS_GOAL_MS, "ms", higher_is_better=False)
    fired = sum(1 for r in every if r["timed_out"])
    report.goal("timeouts fired", fired, len(every), "runs", higher_is_better=True)
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=10)
    return finish(run(args.rounds), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
