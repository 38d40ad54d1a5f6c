"""What the plugin prints: the header line, teardown problems and a failing test's journal."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from fake_server.models.journal.events import Event
    from pytest_createos._options import CheckMode, JournalMode, Options
    from pytest_createos._session import Run

import pytest

__all__ = [
    "FULL_BODY",
    "JOURNAL_LIMIT",
    "LEAKING",
    "SCOPE_HINT",
    "SHORT_LIMIT",
    "CreateosWarning",
    "header_line",
    "ignored_first",
    "ignored_warning",
    "journal_text",
    "problems",
    "scope_mismatch",
]

#: Statuses of a sandbox that still exists and costs money: all but those on the way out.
#: The plugin's own list, so loading it imports no ``fake_server`` (about 200 ms of every
#: pytest start, in each xdist worker too; ``tests/test_imports.py``);
#: ``tests/plugin/test_plugin_report.py`` holds it to the fake's statuses.
LEAKING = frozenset({"creating", "running", "pausing", "paused", "resuming", "forking", "error"})
#: Events shown for a failing test (``full``); older ones are summarised in one line.
JOURNAL_LIMIT = 60
#: Exchange lines shown for a failing test (``short``).
SHORT_LIMIT = 20
#: Characters of a body shown on its own line in the ``full`` journal.
FULL_BODY = 300
_INDENT = " " * 23


class CreateosWarning(pytest.PytestWarning):
    """A teardown check set to ``warn`` (leaked sandboxes, unfired faults), or a notice of the
    fake (a provider on its clock without the clock transport)."""


def header_line(options: Options) -> str:
    """One line for the report header; never the URL or the key."""
    checks = f"leak check {options.leak_check}, unfired faults {options.unfired_faults}"
    if options.live:
        return (
            "createos: live API for tests marked createos_live, fake for the rest "
            f"(seed {options.seed}, {checks})"
        )
    return f"createos: fake API (seed {options.seed}, transitions immediate, {checks})"


def journal_text(run: Run, mode: JournalMode = "short", body_start: int | None = None) -> str:
    """The test's journal with fake times relative to its start; the last events only.

    ``short``: one line per exchange, polls collapsed, short ids; ``full``: every event.
    """
    events = run.fake.journal.events
    elapsed = run.fake.clock.now() - run.started
    head = (
        f"seed {run.settings.seed}, transitions {run.settings.transitions_name}, "
        f"fake time elapsed {elapsed:.3f}s, {len(events)} events"
    )
    if mode == "short":
        from pytest_createos._journal_view import short_lines

        return "\n".join([head, *short_lines(events, run.started, SHORT_LIMIT, body_start)])
    lines = [head]
    if len(events) > JOURNAL_LIMIT:
        lines.append(f"... {len(events) - JOURNAL_LIMIT} earlier events omitted")
        events = events[-JOURNAL_LIMIT:]
    for event in events:
        lines.append(dataclasses.replace(event, time=event.time - run.started).format())
        lines.extend(_message_lines(event))
    return "\n".join(lines)


def _message_lines(event: Event) -> list[str]:
    """A request's query and body, a reply's body, each on one line of its own (``full``)."""
    lines = [f"{_INDENT}query {event.query}"] if event.query and event.kind == "request" else []
    if event.body:
        shown = event.body.replace("\r", " ").replace("\n", " ")
        if len(shown) > FULL_BODY:
            shown = f"{shown[:FULL_BODY]}… ({len(event.body)} characters kept)"
        lines.append(f"{_INDENT}body  {shown}")
    return lines


def _leaks(run: Run, owned: Collection[str]) -> str | None:
    leaked = [s for s in run.fake.sandboxes() if s.status in LEAKING and s.id not in owned]
    if not leaked:
        return None
    names = ", ".join(f"{s.id} ({s.status})" for s in leaked)
    return (
        f"createos: {len(leaked)} sandbox(es) left running or paused: {names}. Destroy them "
        "(SDK: sandbox.destroy(); provider: provider.destroy_lease(env, lease_id, metadata)) "
        "or lease them with the createos_lease or createos_leases fixture; "
        "@pytest.mark.createos(leak_check='warn'|'off') or --createos-leak-check=warn|off "
        "relaxes this check."
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


def problems(
    run: Run,
    *,
    leak_check: CheckMode,
    unfired_faults: CheckMode,
    owned: Collection[str] = (),
    internal: bool = True,
) -> tuple[list[str], list[str]]:
    """Teardown findings as (failures, warnings), each check following its mode; the fake's
    notices are warnings.

    ``owned`` sandboxes belong to a lease fixture, which destroys them and reports its own
    failure; ``internal=False`` leaves out the fake's internal errors (reported elsewhere).
    """
    failures: list[str] = []
    warnings: list[str] = []
    error = _errors(run) if internal else None
    if error is not None:
        failures.append(error)
    checks: tuple[tuple[CheckMode, Callable[[], str | None]], ...] = (
        (leak_check, lambda: _leaks(run, owned)),
        (unfired_faults, lambda: _unfired(run)),
    )
    for mode, check in checks:
        if mode == "off":
            continue
        found = check()
        if found is not None:
            (failures if mode == "fail" else warnings).append(found)
    warnings.extend(_notices(run))
    return failures, warnings


def _notices(run: Run) -> list[str]:
    """The fake's notices during the test (a provider on its clock without the clock
    transport: ``fake_server.clock.unreported``), each once."""
    return list(dict.fromkeys(e.detail for e in run.fake.journal.filter(kind="notice")))


SCOPE_HINT = (
    "createos: the createos_* fixtures are per test (the fake is reset before each); a module- "
    "or session-scoped fixture takes createos_shared instead: its own fake, env and provider, "
    "never reset; wrap the fixture's yield in `with createos_shared.leases() as leases:` for "
    "leases destroyed when it ends"
)


def scope_mismatch(report: pytest.TestReport) -> bool:
    """pytest's ScopeMismatch for one of this plugin's per-test fixtures."""
    text = str(report.longrepr)
    return "ScopeMismatch" in text and "function scoped fixture createos_" in text


def ignored_warning(items: Sequence[pytest.Item]) -> CreateosWarning | None:
    """One warning naming the tests a module- or class-wide marker reaches in vain."""
    from pytest_createos._markers import unconfigured

    ignored = [item for item in items if unconfigured(item)]
    if not ignored:
        return None
    names = ", ".join(item.nodeid for item in ignored[:3])
    more = f" and {len(ignored) - 3} more" if len(ignored) > 3 else ""
    return CreateosWarning(
        f"createos: a module- or class-wide createos marker reaches {len(ignored)} "
        f"test(s) that use no createos fixture ({names}{more}); it is ignored there"
    )


def ignored_first(items: Sequence[pytest.Item]) -> pytest.Item:
    """The first test ``ignored_warning`` names (the warning's location)."""
    from pytest_createos._markers import unconfigured

    return next(item for item in items if unconfigured(item))
