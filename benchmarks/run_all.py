"""Run every benchmark, each in its own process, and print a summary table of the goals.

Each benchmark runs as ``python benchmarks/bench_xxx.py --json FILE`` in a fresh interpreter,
so memory figures and "first provider" costs are not skewed by an earlier benchmark. Any
``benchmarks/bench_*.py`` is picked up, including ones added later (``bench_chaos.py``).

Run: ``python benchmarks/run_all.py [--smoke | --quick] [--rounds N] [--only NAME ...]``;
``--gate`` runs the regression gate's benchmarks (``benchmarks/gate.py``; with ``--only``,
those named) and exits 1 when a ratio goal misses by more than the gate's tolerance.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks._common import Report
from benchmarks.gate import GATED, gate_table

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["discover", "main", "summary"]

HERE = Path(__file__).resolve().parent


def discover() -> list[Path]:
    """Every benchmark script, in name order."""
    return sorted(HERE.glob("bench_*.py"))


def _speaks_json(script: Path) -> bool:
    """Whether the script takes the shared options (``--json``, ``--smoke``, ``--rounds``)."""
    return "parse_args(" in script.read_text(encoding="utf-8")


def _run_one(script: Path, extra: list[str]) -> Report | str:
    """The benchmark's report, or a one-line reason it produced none."""
    shared = _speaks_json(script)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        command = [sys.executable, str(script)]
        if shared:
            command += ["--json", str(out), *extra]
        try:
            completed = subprocess.run(command, check=False, timeout=900)
        except subprocess.TimeoutExpired:
            return "timed out after 900 s"
        if completed.returncode != 0:
            return f"exited with status {completed.returncode}"
        if not shared:
            return Report(title=f"{script.stem} (its own output above)", rounds=0)
        if not out.exists():
            return "wrote no JSON report"
        return Report.from_json(json.loads(out.read_text(encoding="utf-8")))


def summary(results: dict[str, Report | str]) -> str:
    """One line per goal (or per failed benchmark), aligned."""
    rows: list[tuple[str, str, str, str, str]] = []
    for name, result in results.items():
        if isinstance(result, str):
            rows.append((name, "-", "-", "-", f"ERROR: {result}"))
            continue
        if not result.goals:
            rows.append((name, "(no goal)", "-", "-", "-"))
        for goal in result.goals:
            sign = ">=" if goal.higher_is_better else "<="
            rows.append(
                (
                    name,
                    goal.name,
                    f"{goal.measured:.3g} {goal.unit}",
                    f"{sign} {goal.target:g} {goal.unit}",
                    "met" if goal.met else "MISSED",
                )
            )
    header = ("benchmark", "goal", "measured", "target", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny counts in every benchmark")
    parser.add_argument("--quick", action="store_true", help="enough work for the ratio goals")
    parser.add_argument("--gate", action="store_true", help="the regression gate (gate.py)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds for every benchmark")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names, e.g. requests")
    args = parser.parse_args(argv)
    if args.smoke and (args.quick or args.gate):
        parser.error("--smoke measures nothing: it goes with neither --quick nor --gate")
    extra = ["--smoke"] if args.smoke else ["--quick"] if args.quick else []
    if args.rounds is not None:
        extra += ["--rounds", str(args.rounds)]
    wanted = args.only or (GATED if args.gate else None)
    results: dict[str, Report | str] = {}
    for script in discover():
        name = script.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        print(f"\n### {name}", flush=True)
        results[name] = _run_one(script, extra)
    print("\n" + summary(results))
    if args.gate:
        table, passed = gate_table(results)
        print("\n" + table, flush=True)
        return 0 if passed else 1
    failed = any(isinstance(result, str) for result in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
