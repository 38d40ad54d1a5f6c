"""The benchmarks still run: each one's ``main`` with tiny counts, in this process.

They are scripts outside the test run, so without this they would rot silently when the fake
or the provider changes. Figures from a smoke run mean nothing; what is checked is that every
benchmark completes its scenario and reports the figures and goals it promises.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import math
import time
from typing import Any

import pytest

from benchmarks import bench_startup, run_all
from benchmarks._common import Goal, Report, growth_per
from benchmarks._sleepspy import SleepSpy

SMOKE = ["--smoke"]
#: The smoke runs together take about 3 s, a twentieth of the main suite's budget; they check
#: that scripts outside the product still run, so they go with the slow tests in CI's
#: reliability step (``pytest -m reliability``), and the cheap checks below stay in the main run.
SMOKE_RUN = pytest.mark.reliability

#: The goals each benchmark exists to check (benchmarks not listed: at least one figure).
EXPECTED_GOALS = {
    "bench_clock": ["fake.reset()", "fake deadlines fired by real delays"],
    "bench_http2": ["HTTP/2 / HTTP/1.1 rate"],
    "bench_requests": [
        "fake rate / bare rate",
        "persisted / in-memory round trip",
        "journal messages on / off",
    ],
    "bench_transfer": ["files: fake / bare throughput", "output live rate"],
    "bench_startup": ["fake start+stop", "fake / bare start+stop", "memory per idle sandbox"],
    "bench_process": [
        "sandbox create",
        "exec true over bwrap",
        "preview over a direct connection",
        "pause",
        "resume",
        "fake memory per idle sandbox",
    ],
    "bench_resources": ["screenshot 1280x800", "copies for 10 sharers"],
    "bench_sandboxes": [
        "synchronous creates",
        "fork of a full sandbox",
        "creates: persisted / in memory",
        "fork: persisted / in memory",
    ],
    "bench_persist": ["restart with 3 sandboxes"],
    "bench_shell": ["shell-ws / managed PTY"],
    "bench_tunnel": ["tunnel / direct throughput"],
    "bench_provider": [
        "later provider + request",
        "lifecycle fake / canned",
        "wall-clock sleeps in a lifecycle",
    ],
}
BENCHMARKS = [path.stem for path in run_all.discover()]
#: Benchmarks whose smoke run alone would break this file's 3 s budget: imported, not run.
#: (``bench_chaos`` drives the chaos harness, which ``tests/test_chaos.py`` runs in full;
#: ``bench_plugin`` and ``bench_timeouts`` run pytest in subprocesses, seconds even at smoke
#: size (``tests/provider/test_process_timeout.py`` checks what the latter measures);
#: ``bench_dashboard`` starts Chromium.)
IMPORT_ONLY = {"bench_chaos", "bench_plugin", "bench_dashboard", "bench_timeouts"}


@functools.cache
def smoke_report(name: str) -> Report:
    """Each benchmark's smoke run, once per test session."""
    module = importlib.import_module(f"benchmarks.{name}")
    report: Report = module.main(SMOKE, quiet=True)
    return report


@SMOKE_RUN
@pytest.mark.parametrize("name", [name for name in BENCHMARKS if name not in IMPORT_ONLY])
def test_benchmark_runs_and_reports_its_goals(name: str) -> None:
    """A smoke run completes and reports finite figures and every goal it is there to check."""
    report = smoke_report(name)
    if name in EXPECTED_GOALS:
        assert [goal.name for goal in report.goals] == EXPECTED_GOALS[name]
    assert report.figures
    values = [f.value for f in report.figures] + [g.measured for g in report.goals]
    assert all(math.isfinite(value) and value >= 0 for value in values), report.format()


@pytest.mark.parametrize("name", sorted(IMPORT_ONLY & set(BENCHMARKS)))
def test_slow_benchmark_still_imports_and_has_a_main(name: str) -> None:
    """A benchmark too slow to smoke-run here at least imports and offers ``main(argv)``."""
    module = importlib.import_module(f"benchmarks.{name}")
    assert callable(module.main)


@SMOKE_RUN
def test_provider_lifecycle_never_sleeps_on_the_wall_clock() -> None:
    """With a virtual clock injected, a whole reuse lifecycle sleeps for real zero times."""
    report = smoke_report("bench_provider")
    sleeps = next(g for g in report.goals if g.name == "wall-clock sleeps in a lifecycle")
    assert sleeps.measured == 0
    assert sleeps.met


def test_run_all_finds_every_benchmark() -> None:
    """``run_all`` discovers each benchmark script (and ignores helpers)."""
    assert set(EXPECTED_GOALS) <= set(BENCHMARKS)
    assert all(name.startswith("bench_") for name in BENCHMARKS)


def test_summary_marks_missed_goals_and_broken_benchmarks() -> None:
    """The summary table names each goal's verdict and every benchmark that failed to run."""
    report = Report(title="x", rounds=1)
    report.goals.append(Goal("rate", 0.4, 0.5, "x", higher_is_better=True))
    report.goals.append(Goal("startup", 0.7, 5.0, "ms", higher_is_better=False))
    table = run_all.summary({"requests": report, "chaos": "exited with status 2"}).splitlines()
    assert table[0].split() == ["benchmark", "goal", "measured", "target", "verdict"]
    assert table[2].split() == ["requests", "rate", "0.4", "x", ">=", "0.5", "x", "MISSED"]
    assert table[3].split() == ["requests", "startup", "0.7", "ms", "<=", "5", "ms", "met"]
    assert table[4].split() == ["chaos", "-", "-", "-", "ERROR:", "exited", "with", "status", "2"]


def test_report_round_trips_through_json() -> None:
    """``run_all`` reads each benchmark's report back from the JSON it wrote."""
    report = Report(title="t", rounds=3)
    report.add("fake rate", 2800.0, "req/s", "median")
    report.goal("ratio", 0.6, 0.5, "x", higher_is_better=True)
    again = Report.from_json(report.to_json())
    assert again == report
    assert again.ok


def test_sleep_spy_counts_real_sleeps_and_provider_timers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The wall-clock check would see a real sleep, and a timer armed from provider code."""

    async def no_async_sleep(delay: float, result: Any = None) -> Any:
        return result  # stands in for the real sleep, so this test never waits

    def no_sleep(seconds: float) -> None:
        pass

    monkeypatch.setattr(asyncio, "sleep", no_async_sleep)
    monkeypatch.setattr(time, "sleep", no_sleep)
    source = (
        "import asyncio\n"
        "async def wait_with_deadline():\n"
        "    await asyncio.wait_for(asyncio.sleep(0), timeout=30)\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(source, "/x/pytest_createos/provider/_fake_module.py", "exec"), scope)

    async def scenario() -> SleepSpy:
        with SleepSpy(asyncio.get_running_loop()) as spy:
            await asyncio.sleep(0)  # a yield, not a sleep
            await asyncio.sleep(0.5)
            time.sleep(0.5)  # noqa: ASYNC251 -- patched above: counted, never slept
            await scope["wait_with_deadline"]()
        return spy

    spy = asyncio.run(scenario())
    assert (spy.sleeps, spy.provider_timers) == (2, 1)
    assert asyncio.sleep is no_async_sleep
    assert time.sleep is no_sleep


def test_plugin_reference_suite_has_the_tests_it_was_asked_for(tmp_path: Any) -> None:
    """The xdist floor's reference suite: ``tests`` tests over modules of five, each spinning."""
    from benchmarks.bench_plugin import _reference_suite

    _reference_suite(tmp_path, 12, 0.001)
    modules = sorted(tmp_path.glob("*_example.py"))
    sources = [module.read_text() for module in modules]
    for module, source in zip(modules, sources, strict=True):
        compile(source, str(module), "exec")
    assert [source.count("\ndef test_") for source in sources] == [5, 5, 2]
    assert all(source.count("    spin()\n") == source.count("\ndef test_") for source in sources)


@SMOKE_RUN
def test_a_resident_set_that_shrinks_reads_as_no_growth(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run after other tests, the allocator may hand back pages they freed while the sandboxes
    are made; the set then shrinks, and the per-sandbox figure must say 0, not a negative size."""
    readings = iter([600 << 20, 500 << 20])
    monkeypatch.setattr(bench_startup, "rss_bytes", lambda: next(readings))
    report = bench_startup.main(SMOKE, quiet=True)
    figure = next(f for f in report.figures if f.name == "per sandbox (RSS delta)")
    assert figure.value == 0
    assert growth_per(1000, 600, 4) == 0
    assert growth_per(1000, 1600, 4) == 150


def test_the_gate_fails_only_a_ratio_goal_missed_by_more_than_its_tolerance() -> None:
    """A ratio goal (unit x) missed by at most 1.5x is reported, beyond it the gate fails;
    absolute goals are not gated, and a benchmark that did not run fails the gate."""
    from benchmarks.gate import gate_table, verdict

    within = Goal("lifecycle", 5.9, 4.0, "x", higher_is_better=False)
    beyond = Goal("rate", 0.3, 0.5, "x", higher_is_better=True)
    absolute = Goal("start+stop", 9.0, 1.0, "ms", higher_is_better=False)
    met = Goal("persisted", 1.01, 1.05, "x", higher_is_better=False)
    assert [verdict(g) for g in (within, beyond, absolute, met)] == ["missed", "FAILED", "-", "met"]
    report = Report(title="x", rounds=5, goals=[within, absolute, met])
    table, passed = gate_table({"provider": report})
    assert passed
    lines = table.splitlines()
    assert lines[0].split() == ["benchmark", "ratio", "goal", "measured", "goal", "gate", "verdict"]
    assert lines[2].split() == [
        "provider",
        "lifecycle",
        "5.9",
        "x",
        "<=",
        "4",
        "x",
        "<=",
        "6",
        "x",
        "missed",
    ]
    assert len(lines) == 5  # the absolute goal has no row
    assert lines[-1] == "gate: passed (tolerance 1.5x of each goal)"
    table, passed = gate_table(
        {"requests": Report(title="y", rounds=5, goals=[beyond]), "plugin": "exited with status 1"}
    )
    assert not passed
    assert table.splitlines()[-1] == "gate: FAILED (tolerance 1.5x of each goal)"
    assert table.splitlines()[3].split()[-5:] == ["FAILED:", "exited", "with", "status", "1"]


def test_quick_mode_cuts_rounds_and_keeps_the_sizes_a_benchmark_asks_for() -> None:
    """``--quick``: at most 5 rounds, a quarter of each count unless the benchmark names one;
    it excludes ``--smoke``."""
    from benchmarks._common import parse_args

    args = parse_args(["--quick"], "", default_rounds=9)
    assert (args.rounds, args.scale.quick) == (5, True)
    assert args.scale.pick(full=100, smoke=2) == 25
    assert args.scale.pick(full=300, smoke=3, quick=300) == 300
    assert parse_args([], "", default_rounds=9).scale.pick(full=100, smoke=2) == 100
    with pytest.raises(SystemExit):
        parse_args(["--quick", "--smoke"], "", default_rounds=9)
