"""Shared benchmark plumbing: interleaved rounds, medians, goals and one report format.

The machine is shared and noisy, so every benchmark measures its compared variants side by side
in one run: each round runs every variant once (in an order that alternates between rounds) and
the figures are medians over rounds. A benchmark returns a ``Report``; ``run_all.py`` reads the
same report as JSON from each benchmark run in its own process.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

_T = TypeVar("_T")

__all__ = [
    "Figure",
    "Goal",
    "Report",
    "Scale",
    "finish",
    "interleave",
    "interleave_async",
    "median",
    "parse_args",
    "per_second",
    "timer",
]


@dataclass(frozen=True)
class Scale:
    """How much work a run does: ``smoke`` keeps every benchmark to a fraction of a second
    (its figures mean nothing); ``quick`` does a quarter of the work, enough for the ratio
    goals the regression gate checks (``benchmarks/gate.py``)."""

    rounds: int
    smoke: bool = False
    quick: bool = False

    def pick(self, full: int, smoke: int, quick: int | None = None) -> int:
        """An iteration count: ``full`` normally, ``smoke`` in a smoke run, ``quick`` (by
        default a quarter of ``full``) in a quick one."""
        if self.smoke:
            return smoke
        if self.quick:
            return quick if quick is not None else max(smoke, full // 4)
        return full


@dataclass(frozen=True)
class Figure:
    """One measured number (a median unless its note says otherwise)."""

    name: str
    value: float
    unit: str
    note: str = ""


@dataclass(frozen=True)
class Goal:
    """A target from the issue and whether this run met it."""

    name: str
    measured: float
    target: float
    unit: str
    higher_is_better: bool

    @property
    def met(self) -> bool:
        if self.higher_is_better:
            return self.measured >= self.target
        return self.measured <= self.target

    @property
    def ratio(self) -> bool:
        """A ratio of two figures measured side by side in one run (unit ``x``): what the
        regression gate checks, as the machine's load moves it far less than a time."""
        return self.unit == "x"

    def missed_by(self) -> float:
        """How many times worse than its target the measurement is (1.0 or less: met)."""
        worse, better = (
            (self.target, self.measured) if self.higher_is_better else (self.measured, self.target)
        )
        if better <= 0:
            return 1.0 if worse <= 0 else math.inf
        return worse / better

    def describe(self) -> str:
        sign = ">=" if self.higher_is_better else "<="
        verdict = "met" if self.met else "MISSED"
        return (
            f"{self.name}: {_fmt(self.measured)} {self.unit} "
            f"(goal {sign} {_fmt(self.target)} {self.unit}) {verdict}"
        )


@dataclass
class Report:
    """What one benchmark measured; printed by the benchmark and summarised by ``run_all``."""

    title: str
    rounds: int
    figures: list[Figure] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str, note: str = "") -> None:
        self.figures.append(Figure(name, value, unit, note))

    def goal(
        self, name: str, measured: float, target: float, unit: str, *, higher_is_better: bool
    ) -> None:
        self.goals.append(Goal(name, measured, target, unit, higher_is_better))

    @property
    def ok(self) -> bool:
        return all(goal.met for goal in self.goals)

    def format(self) -> str:
        lines = [f"== {self.title} (median of {self.rounds} interleaved rounds)"]
        width = max((len(f.name) for f in self.figures), default=0)
        for fig in self.figures:
            note = f"  [{fig.note}]" if fig.note else ""
            lines.append(f"  {fig.name:<{width}}  {_fmt(fig.value):>12} {fig.unit}{note}")
        lines.extend(f"  goal  {goal.describe()}" for goal in self.goals)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "rounds": self.rounds,
            "figures": [asdict(f) for f in self.figures],
            "goals": [asdict(g) for g in self.goals],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        return cls(
            title=str(data["title"]),
            rounds=int(data["rounds"]),
            figures=[Figure(**f) for f in data["figures"]],
            goals=[Goal(**g) for g in data["goals"]],
        )


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def _order(names: list[str], round_index: int) -> list[str]:
    # Alternate the order so neither variant always runs first (warm caches, load spikes).
    return names if round_index % 2 == 0 else names[::-1]


def interleave(variants: Mapping[str, Callable[[], _T]], rounds: int) -> dict[str, list[_T]]:
    """Run each variant once per round; each call returns the figure(s) it measured."""
    samples: dict[str, list[_T]] = {name: [] for name in variants}
    for index in range(rounds):
        for name in _order(list(variants), index):
            samples[name].append(variants[name]())
    return samples


async def interleave_async(
    variants: Mapping[str, Callable[[], Awaitable[_T]]], rounds: int
) -> dict[str, list[_T]]:
    """``interleave`` for coroutines run in the current loop."""
    samples: dict[str, list[_T]] = {name: [] for name in variants}
    for index in range(rounds):
        for name in _order(list(variants), index):
            samples[name].append(await variants[name]())
    return samples


def parse_args(argv: Sequence[str] | None, description: str, default_rounds: int) -> Any:
    """Common options: ``--rounds``, ``--smoke`` (tiny counts) and ``--json PATH``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it still runs")
    parser.add_argument(
        "--quick", action="store_true", help="a quarter of the work: enough for the ratio goals"
    )
    parser.add_argument("--json", default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if args.smoke and args.quick:
        parser.error("--smoke and --quick exclude each other")
    if args.rounds is None:
        args.rounds = 1 if args.smoke else min(default_rounds, 5) if args.quick else default_rounds
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.scale = Scale(rounds=args.rounds, smoke=args.smoke, quick=args.quick)
    return args


def finish(report: Report, args: Any, *, quiet: bool = False) -> Report:
    """Print the report (unless quiet) and write its JSON when asked."""
    if not quiet:
        print(report.format(), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report.to_json(), out)
    return report


def per_second(seconds: float, count: float = 1.0) -> float:
    """A rate from a duration; ``inf`` for a zero duration (never divides by zero)."""
    return count / seconds if seconds > 0 else math.inf


def timer() -> float:
    return time.perf_counter()


def rss_bytes() -> int:
    """This process's resident set in bytes, from /proc (Linux); 0 where it is not available."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def growth_per(before: int, after: int, count: int) -> float:
    """Bytes each of ``count`` new things added to a resident set; never below zero.

    The set can shrink while they are made (the allocator hands back pages earlier work freed,
    as it does when a test suite runs the benchmark after other tests); that says no growth was
    seen, not that a thing costs negative memory.
    """
    return max(0, after - before) / count
