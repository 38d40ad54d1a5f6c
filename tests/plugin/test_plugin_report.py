"""The journal section stays short: relative fake times, the last events, a count of the rest."""

from __future__ import annotations

from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.models.journal import Event
from pytest_createos._markers import MarkerSettings
from pytest_createos._report import JOURNAL_LIMIT, journal_text
from pytest_createos._session import Run


def test_journal_text_keeps_the_last_events_with_times_from_the_test_start() -> None:
    """Older events collapse into one line; times count from the test's start."""
    fake = FakeCreateOS(seed=3)
    fake.journal.clear()
    for n in range(JOURNAL_LIMIT + 5):
        fake.journal.record(
            Event(
                time=100.0 + n,
                kind="request",
                operation="get_sandbox",
                method="GET",
                path=f"/v1/sandboxes/sb-{n}",
            )
        )
    settings = MarkerSettings(3, TransitionPolicy.immediate(), "immediate", False, "s", None)
    run = Run(fake=fake, faults=fake.faults, settings=settings, started=100.0)
    lines = journal_text(run).splitlines()
    assert lines[0].startswith("seed 3, transitions immediate, fake time elapsed ")
    assert lines[0].endswith(f", {JOURNAL_LIMIT + 5} events")
    assert lines[1] == "... 5 earlier events omitted"
    assert len(lines) == 2 + JOURNAL_LIMIT
    assert lines[2] == "     5.000s request    get_sandbox GET /v1/sandboxes/sb-5"
    assert lines[-1] == "    64.000s request    get_sandbox GET /v1/sandboxes/sb-64"
