"""The plugin's cost per test, and the examples suite serial vs ``-n 2``.

Per-test cost is read from pytest's own phase durations (setup + call + teardown) in a
subprocess that runs a generated suite: plain tests (the floor), tests using ``createos_fake``
(a reset of the session fake), and tests using ``createos_lease`` (acquire and destroy). The
first test of each file is left out (it starts the session fake) and the floor's median is
subtracted. The examples are timed as whole pytest runs of a downstream project holding
them (once, and ``EXAMPLE_COPIES`` times), serial and with two xdist workers, interleaved,
without the hypothesis plugin (a downstream project's view; it costs each xdist worker about
2 s of start-up on this machine), and with bytecode caching on after one untimed warm-up run:
this machine sets ``PYTHONDONTWRITEBYTECODE=1``, under which pytest rewrites the assertions of
every module of every plugin package (faker's alone, 0.4 s) again in every process, which a
developer's machine, caching them, does once.

A worker's fake ready is timed in a fresh interpreter that has imported the plugin (as an
xdist worker has): the session's fake started and warmed up by one lease lifecycle, the first
request's lazy imports (anyio's backend) included. httpcore, and trio where it is installed,
load with ``fake_server`` itself, so before this window. The same process then starts a second
session's fake: the first over the second is what a worker pays for being first (imports,
caches, the route tables), a ratio the regression gate watches.

The lease test is also compared with its floor, measured in this process between the suite's
rounds: the plugin's lease provider acquiring and destroying a lease on canned answers
(``httpx.MockTransport``, ``benchmarks/_canned.py``), no sockets and no fake.

Beside the examples, the same ratio for a reference suite that no createos fixture touches:
as many tests as the four copies, each spinning on the CPU for the examples' serial time per
test, in a project with the same pytest plugins. Its ratio is the floor pytest-xdist reaches on
this machine for that much serial work (two workers' start-up, collection and exit, and the
controller's); the examples' ratio over it is what the plugin adds.

Goals: under 5 ms per test for ``createos_fake``, 8 ms for a test that acquires and destroys a
lease (at most 14x its canned floor), a worker's fake ready in 100 ms (at most 5x the second
fake of that process), and ``-n 2`` on four copies of the examples within 1.1x of the
reference suite's ``-n 2`` / serial ratio (pytest-xdist's own floor, measured in the same run;
a fixed 0.6x lay below that floor on two cores). ``--quick`` leaves the examples out (minutes
of pytest runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING

import httpx

from benchmarks._canned import CannedApi
from benchmarks._common import Report, finish, interleave, median, parse_args
from fake_server import VirtualClock, clock_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "run"]

ROOT = pathlib.Path(__file__).resolve().parents[1]
LEASE_GOAL_MS = 8.0
#: A lease test / acquire + destroy on canned answers.
LEASE_GOAL_RATIO = 14.0
READY_GOAL_MS = 100.0
#: A worker's first fake / a second one in that process.
READY_GOAL_RATIO = 5.0
#: ``-n 2`` / serial of the examples over the same ratio of the reference suite.
XDIST_GOAL_RATIO = 1.1
#: The examples alone are ~2.5 s of tests after ~1.2 s of interpreter and import start-up per
#: process; the xdist goal is judged on this many copies of them, the bare ratio is reported.
EXAMPLE_COPIES = 4

_COLLECTOR = """
import json, os

_durations = {}


def pytest_runtest_logreport(report):
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    with open(os.environ["BENCH_PLUGIN_OUT"], "w") as out:
        json.dump(_durations, out)
"""

_READY = """
import time
from pytest_createos._options import Options
from pytest_createos._session import Session

for _ in range(2):
    session = Session(Options())
    started = time.perf_counter()
    session.fake  # started and warmed up
    print(time.perf_counter() - started)
    session.close()
"""

_VARIANTS = {
    "plain": "def test_{i}():\n    pass\n",
    "fake": "def test_{i}(createos_fake):\n    assert createos_fake.url\n",
    "lease": "def test_{i}(createos_lease):\n    assert createos_lease.provider_lease_id\n",
}


def _write_suite(folder: pathlib.Path, tests: int) -> None:
    (folder / "conftest.py").write_text(_COLLECTOR)
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    for name, template in _VARIANTS.items():
        body = "\n\n".join(template.format(i=i) for i in range(tests))
        (folder / f"test_{name}.py").write_text(body + "\n")


def _per_test(folder: pathlib.Path) -> dict[str, float]:
    """Median seconds per test for each variant, first test of each file excluded."""
    out = folder / "durations.json"
    env = {**os.environ, "BENCH_PLUGIN_OUT": str(out)}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:benchmark"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    durations: dict[str, float] = json.loads(out.read_text())
    per: dict[str, float] = {}
    for name in _VARIANTS:
        values = [v for k, v in durations.items() if k.startswith(f"test_{name}.py::")]
        per[name] = median(values[1:])
    return per


def _fake_ready() -> tuple[float, float]:
    """Seconds from a worker's first use of the fake to the fake ready (fresh interpreter),
    and the same for a second session's fake in that process."""
    done = subprocess.run(
        [sys.executable, "-c", _READY], cwd=ROOT, check=True, capture_output=True, text=True
    )
    first, second = (float(line) for line in done.stdout.strip().splitlines()[-2:])
    return first, second


def _canned_leases(count: int) -> float:
    """Seconds per lease acquired and destroyed by a provider set up as the plugin's lease
    provider (``_session.Session.lease_provider``) with canned answers in place of its
    transport: the floor of a lease test, without sockets or a fake."""

    async def leases() -> float:
        clock = VirtualClock()
        canned = CannedApi(clock)
        provider = CreateosProvider(
            clock=clock,
            pacer=Pacer.disabled(),
            environ={},
            transport=clock_transport(clock, httpx.MockTransport(canned.handle)),
        )
        env = Environment(
            company_id="pytest-createos",
            environment_id="pytest-createos-env",
            config={
                "apiUrl": "https://canned.invalid",
                "apiKey": "cos_canned_key",
                "shape": "s-1vcpu-1gb",
                "reuseLease": False,
            },
        )
        try:
            times = []
            for _ in range(count + 1):
                started = time.perf_counter()
                lease = await provider.acquire_lease(env)
                await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
                times.append(time.perf_counter() - started)
            return median(times[1:])
        finally:
            await provider.shutdown()
            clock.close()

    return asyncio.run(leases())


#: The ``pytest.ini`` of a downstream project holding copies of examples/ (or the reference).
_DOWNSTREAM_INI = (
    "[pytest]\npython_files = *_example.py\nasyncio_mode = strict\n"
    "addopts = --import-mode=importlib -p no:cacheprovider\n"
)


def _downstream_pytest(folder: pathlib.Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder`` as a downstream project runs it: without this project's own
    test-only plugins (hypothesis's alone costs every xdist worker about 2 s of start-up here)
    and with bytecode caching on."""
    command = [
        sys.executable, "-m", "pytest", str(folder), "-q",
        "-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:benchmark", *flags,
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run(
        command, cwd=folder, check=True, capture_output=True, text=True, env=environment
    )


def _examples_wall(folder: pathlib.Path, workers: int | None) -> float:
    started = time.perf_counter()
    _downstream_pytest(folder, *(["-n", str(workers)] if workers else []))
    return time.perf_counter() - started


def _copy_examples(folder: pathlib.Path, copies: int) -> None:
    """``copies`` copies of examples/ as one downstream project (so test work, not process
    start-up, dominates)."""
    (folder / "pytest.ini").write_text(_DOWNSTREAM_INI)
    for index in range(copies):
        shutil.copytree(ROOT / "examples", folder / f"copy{index}")


_SPIN = """import time


def spin():
    end = time.process_time() + {seconds!r}
    while time.process_time() < end:
        pass
"""


def _reference_suite(folder: pathlib.Path, tests: int, seconds: float) -> None:
    """``tests`` tests spinning ``seconds`` of CPU each, spread over modules like the examples."""
    (folder / "pytest.ini").write_text(_DOWNSTREAM_INI)
    per_module = 5
    for module in range(-(-tests // per_module)):
        count = min(per_module, tests - module * per_module)
        body = _SPIN.format(seconds=seconds) + "".join(
            f"\n\ndef test_{i}():\n    spin()\n" for i in range(count)
        )
        (folder / f"m{module}_example.py").write_text(body)


def _collected(folder: pathlib.Path) -> tuple[int, float]:
    """How many tests ``folder`` holds, and the seconds a serial run takes to collect them."""
    started = time.perf_counter()
    done = _downstream_pytest(folder, "--collect-only")
    elapsed = time.perf_counter() - started
    return sum(1 for line in done.stdout.splitlines() if "::" in line), elapsed


def _ratio(report: Report, label: str, folder: pathlib.Path, rounds: int) -> tuple[float, float]:
    """``-n 2`` over serial wall time, and the serial seconds (medians of ``rounds``)."""
    _examples_wall(folder, 2)  # warm-up: writes the bytecode caches
    walls = interleave(
        {"serial": lambda: _examples_wall(folder, None), "n2": lambda: _examples_wall(folder, 2)},
        rounds,
    )
    serial, parallel = median(walls["serial"]), median(walls["n2"])
    report.add(f"{label} serial", serial, "s")
    report.add(f"{label} -n 2", parallel, "s")
    return parallel / serial, serial


def run(rounds: int, tests: int, *, examples: bool) -> Report:
    report = Report("plugin: per-test fixture cost and the examples suite", rounds)
    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as tmp:
        folder = pathlib.Path(tmp)
        _write_suite(folder, tests)
        samples = interleave(
            {
                "suite": lambda: _per_test(folder),
                "canned": lambda: _canned_leases(tests),
                "ready": _fake_ready,
            },
            rounds,
        )
    suites = samples["suite"]
    floor = median([s["plain"] for s in suites])
    fake = median([s["fake"] for s in suites]) - floor
    lease = median([s["lease"] for s in suites]) - floor
    canned = median(samples["canned"])
    ready = median([first for first, _ in samples["ready"]])
    again = median([second for _, second in samples["ready"]])
    report.add("plain test (floor)", floor * 1000, "ms")
    report.add("createos_fake per test", fake * 1000, "ms", "floor subtracted")
    report.add("createos_lease per test", lease * 1000, "ms", "acquire + destroy")
    report.add("acquire + destroy on MockTransport", canned * 1000, "ms", "canned floor")
    report.add("worker's fake ready", ready * 1000, "ms", "start + warm-up, fresh process")
    report.add("a second session's fake ready", again * 1000, "ms", "same process")
    report.goal("createos_fake per test", fake * 1000, 5.0, "ms", higher_is_better=False)
    report.goal("lease test", lease * 1000, LEASE_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "lease test / canned floor", lease / canned, LEASE_GOAL_RATIO, "x", higher_is_better=False
    )
    report.goal("worker's fake ready", ready * 1000, READY_GOAL_MS, "ms", higher_is_better=False)
    report.goal(
        "worker's fake ready / second", ready / again, READY_GOAL_RATIO, "x",
        higher_is_better=False,
    )  # fmt: skip
    if examples:
        with tempfile.TemporaryDirectory(prefix="bench-examples-") as tmp:
            bare, copies = pathlib.Path(tmp) / "bare", pathlib.Path(tmp) / "copies"
            bare.mkdir()
            copies.mkdir()
            _copy_examples(bare, 1)
            _copy_examples(copies, EXAMPLE_COPIES)
            ratio, _ = _ratio(report, "examples", bare, rounds)
            report.add("examples -n 2 / serial", ratio, "x", "start-up dominates")
            scaled, serial = _ratio(report, f"examples x{EXAMPLE_COPIES}", copies, rounds)
            tests, collecting = _collected(copies)
            reference = pathlib.Path(tmp) / "reference"
            reference.mkdir()
            _reference_suite(reference, tests, max(serial - collecting, 0.0) / tests)
            floor, _ = _ratio(report, f"reference, {tests} CPU-bound tests", reference, rounds)
            report.add("xdist floor: reference -n 2 / serial", floor, "x", "no createos fixture")
            report.add(f"examples x{EXAMPLE_COPIES} -n 2 / serial", scaled, "x")
        report.goal(
            f"examples x{EXAMPLE_COPIES} -n 2 / serial, over the xdist floor",
            scaled / floor,
            XDIST_GOAL_RATIO,
            "x",
            higher_is_better=False,
        )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=3)
    tests = args.scale.pick(full=60, smoke=3, quick=30)
    examples = not (args.scale.smoke or args.scale.quick)
    return finish(run(args.rounds, tests, examples=examples), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
