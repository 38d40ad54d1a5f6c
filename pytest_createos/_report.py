"""What the plugin prints: the header line, teardown problems and a failing test's journal."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_createos._options import Options
    from pytest_createos._session import Run

import pytest

__all__ = ["JOURNAL_LIMIT", "LEAKING", "CreateosWarning", "header_line", "journal_text", "problems"]

#: Statuses of a sandbox that still exists and costs money.
LEAKING = frozenset({"creating", "running", "pausing", "paused", "resuming", "error"})
#: Events shown for a failing test; older ones are summarised in one line.
JOURNAL_LIMIT = 60


class CreateosWarning(pytest.PytestWarning):
    """A teardown check set to ``warn`` (leaked sandboxes, unfired faults)."""


def header_line(options: Options) -> str:
    """One line for the report header; never the URL or the key."""
    checks = f"leak check {options.leak_check}, unfired faults {options.unfired_faults}"
    if options.live:
        return (
            "createos: live API for tests marked createos_live, fake for the rest "
            f"(seed {options.seed}, {checks})"
        )
    return f"createos: fake API (seed {options.seed}, transitions immediate, {checks})"


def journal_text(run: Run) -> str:
    """The test's journal with fake times relative to its start; the last events only."""
    events = run.fake.journal.events
    elapsed = run.fake.clock.now() - run.started
    lines = [
        f"seed {run.settings.seed}, transitions {run.settings.transitions_name}, "
        f"fake time elapsed {elapsed:.3f}s, {len(events)} events"
    ]
    if len(events) > JOURNAL_LIMIT:
        lines.append(f"... {len(events) - JOURNAL_LIMIT} earlier events omitted")
        events = events[-JOURNAL_LIMIT:]
    for event in events:
        lines.append(dataclasses.replace(event, time=event.time - run.started).format())
    return "\n".join(lines)


def _leaks(run: Run) -> str | None:
    leaked = [s for s in run.fake.sandboxes() if s.status in LEAKING]
    if not leaked:
        return None
    names = ", ".join(f"{s.id} ({s.status})" for s in leaked)
    return (
        f"createos: {len(leaked)} sandbox(es) left running or paused without a live lease: "
        f"{names}. Destroy them (provider.destroy_lease) or use the createos_lease fixture; "
        "--createos-leak-check=warn|off relaxes this check."
    )


def _unfired(run: Run) -> str | None:
    unfired = run.faults.unfired()
    if not unfired:
        return None
    names = "; ".join(repr(fault) for fault in unfired)
    return (
        f"createos: {len(unfired)} armed fault(s) never fired: {names}. "
        "--createos-unfired-faults=warn|off relaxes this check."
    )


def _errors(run: Run) -> str | None:
    if not run.fake.errors:
        return None
    parts = [
        f"createos: the fake failed internally during this test ({len(run.fake.errors)} error(s))"
    ]
    for operation, trace in run.fake.errors:
        parts.append(f"--- in {operation} ---\n{trace.rstrip()}")
    return "\n".join(parts)


def problems(run: Run, options: Options) -> tuple[list[str], list[str]]:
    """Teardown findings as (failures, warnings), each check following its option."""
    failures: list[str] = []
    warnings: list[str] = []
    error = _errors(run)
    if error is not None:
        failures.append(error)
    for mode, check in ((options.leak_check, _leaks), (options.unfired_faults, _unfired)):
        if mode == "off":
            continue
        found = check(run)
        if found is not None:
            (failures if mode == "fail" else warnings).append(found)
    return failures, warnings
