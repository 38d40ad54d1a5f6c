"""The regression gate: the benchmarks' ratio goals, each allowed to miss by at most 1.5x.

A ratio goal compares two figures measured side by side in one run (the fake against bare
aiohttp, a lifecycle against ``httpx.MockTransport``, a persisted fake against the same fake
in memory): the machine's load slows both sides, so the ratio moves far less than either time.
The gate runs the benchmarks that have such goals in their quick mode, each in a fresh
interpreter (``run_all.py --quick``), and fails when a ratio goal is missed by more than
``TOLERANCE`` times its target (a goal of at most 4x fails above 6x; one of at least 0.5x
below 0.33x). A goal missed by less is reported, not failed: a loaded machine can push a ratio
a little past its goal, and the full run (``run_all.py``) is the judge of the goals themselves.
Absolute times (milliseconds, seconds) are never gated: they measure the machine.

Run: ``python benchmarks/run_all.py --quick --gate`` (exit status 1 when it fails); the
reliability step runs it (``tests/test_benchmark_gate.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks._common import Goal, Report

__all__ = ["GATED", "TOLERANCE", "gate_table", "verdict"]

#: How many times worse than its target a ratio goal may be before the gate fails.
TOLERANCE = 1.5

#: The benchmarks the gate runs: those with ratio goals that need neither bubblewrap nor a
#: browser, so the gate runs wherever the main suite does, in a minute or two (``process``,
#: ``shell``, ``tunnel`` and ``dashboard`` have ratio goals too; the full run judges them).
GATED = ("requests", "transfer", "startup", "provider", "sandboxes", "plugin", "http2")


def verdict(goal: Goal) -> str:
    """``met``, ``missed`` (by at most ``TOLERANCE``) or ``FAILED``; ``-`` for no ratio."""
    if not goal.ratio:
        return "-"
    if goal.met:
        return "met"
    return "missed" if goal.missed_by() <= TOLERANCE else "FAILED"


def gate_table(results: dict[str, Report | str]) -> tuple[str, bool]:
    """The goal table of every ratio goal (and every benchmark that failed to run), and
    whether the gate passes."""
    rows: list[tuple[str, ...]] = []
    passed = True
    for name, result in results.items():
        if isinstance(result, str):
            rows.append((name, "-", "-", "-", "-", f"FAILED: {result}"))
            passed = False
            continue
        for goal in result.goals:
            if not goal.ratio:
                continue
            sign = ">=" if goal.higher_is_better else "<="
            worst = goal.target / TOLERANCE if goal.higher_is_better else goal.target * TOLERANCE
            found = verdict(goal)
            passed = passed and found != "FAILED"
            rows.append(
                (
                    name,
                    goal.name,
                    f"{goal.measured:.3g} x",
                    f"{sign} {goal.target:g} x",
                    f"{sign} {worst:.3g} x",
                    found,
                )
            )
    header = ("benchmark", "ratio goal", "measured", "goal", "gate", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append(f"gate: {'passed' if passed else 'FAILED'} (tolerance {TOLERANCE}x of each goal)")
    return "\n".join(lines), passed
