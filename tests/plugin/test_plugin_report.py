"""The journal section stays short: relative fake times, the last events, a count of the rest."""

from __future__ import annotations

from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.models.journal.events import Event
from fake_server.models.transitions import ENDING, GONE, STATUSES
from pytest_createos._journal_view import short_ids, short_lines
from pytest_createos._markers import MarkerSettings
from pytest_createos._report import FULL_BODY, JOURNAL_LIMIT, LEAKING, journal_text
from pytest_createos._session import Run


def test_full_journal_keeps_the_last_events_with_times_from_the_test_start() -> None:
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
    lines = journal_text(run, "full").splitlines()
    assert lines[0].startswith("seed 3, transitions immediate, fake time elapsed ")
    assert lines[0].endswith(f", {JOURNAL_LIMIT + 5} events")
    assert lines[1] == "... 5 earlier events omitted"
    assert len(lines) == 2 + JOURNAL_LIMIT
    assert lines[2] == "     5.000s request    get_sandbox GET /v1/sandboxes/sb-5"
    assert lines[-1] == "    64.000s request    get_sandbox GET /v1/sandboxes/sb-64"


def test_full_journal_shows_query_and_bodies_on_lines_of_their_own() -> None:
    """Bodies come one line each, newlines flattened, cut past ``FULL_BODY`` characters."""
    fake = FakeCreateOS(seed=3)
    fake.journal.clear()
    path = "/v1/sandboxes/sb-1/files"
    fake.journal.record(Event(1.0, "request", "upload_file", "PUT", path, query="path=/a.txt"))
    fake.journal.record(
        Event(1.0, "response", "upload_file", "PUT", path, 200, body="a\nb" + "x" * FULL_BODY)
    )
    settings = MarkerSettings(3, TransitionPolicy.immediate(), "immediate", False, "s", None)
    run = Run(fake=fake, faults=fake.faults, settings=settings, started=0.0)
    assert journal_text(run, "full").splitlines()[1:] == [
        "     1.000s request    upload_file PUT /v1/sandboxes/sb-1/files",
        "                       query path=/a.txt",
        "     1.000s response   upload_file PUT /v1/sandboxes/sb-1/files -> 200",
        "                       body  a b"
        + "x" * (FULL_BODY - 3)
        + f"… ({FULL_BODY + 3} characters kept)",
    ]
    assert "query" not in journal_text(run, "short")


def _exchange_events() -> list[Event]:
    """A create, two polls that see the sandbox start, a pause and a resume that hits a fault."""
    sb = "sb-01KDVDNA00FHJR5RQ6CBVJHD7T"
    path = f"/v1/sandboxes/{sb}"

    def call(t: float, method: str, where: str, status: int, op: str, sid: str | None) -> list:
        return [
            Event(t, "request", op, method, where, sandbox_id=sid),
            Event(t, "response", op, method, where, status, sandbox_id=sid),
        ]

    return [
        Event(10.0, "request", "create_sandbox", "POST", "/v1/sandboxes"),
        Event(10.0, "transition", sandbox_id=sb, detail="- -> creating"),
        Event(10.0, "response", "create_sandbox", "POST", "/v1/sandboxes", 201),
        *call(10.0, "GET", path, 200, "get_sandbox", sb),
        Event(10.05, "transition", sandbox_id=sb, detail="creating -> running"),
        *call(10.25, "GET", path, 200, "get_sandbox", sb),
        *call(10.5, "GET", path, 200, "get_sandbox", sb),
        Event(12.25, "request", "resume_sandbox", "POST", f"{path}/resume", sandbox_id=sb),
        Event(
            12.25,
            "fault",
            "resume_sandbox",
            "POST",
            f"{path}/resume",
            sandbox_id=sb,
            detail="fault#1 HttpError(status=503, retry_after=None, code=None, message=None)",
        ),
        Event(12.25, "response", "resume_sandbox", "POST", f"{path}/resume", 503, sandbox_id=sb),
        Event(13.0, "transition", sandbox_id="sb-01KDVDNA00FHJR5RQ6CBVJHE7T", detail="a -> b"),
    ]


def test_short_journal_is_one_line_per_exchange_with_polls_collapsed() -> None:
    """Request and response are one line, the polls one line with the states they saw, the
    fault on its call's line; ids are short, and longer where two would look alike."""
    assert short_lines(_exchange_events(), 10.0, 20) == [
        "+0.00s POST /v1/sandboxes → 201 (sb-…D7T creating)",
        "+0.00s GET /v1/sandboxes/sb-…D7T ×3 → 200 (creating → running)",
        "+2.25s POST /v1/sandboxes/sb-…D7T/resume → 503 (fault #1 HttpError 503)",
        "+3.00s sb-…E7T a → b",
    ]


def test_short_journal_summarises_setup_and_keeps_the_last_lines() -> None:
    """Calls before the body are one ``setup`` line; beyond ``limit`` the oldest are counted."""
    events = _exchange_events()[:-1]
    assert short_lines(events, 10.0, 20, body_start=8) == [
        "+0.00s setup: 3 calls (sb-…7T creating → running)",
        "+0.50s GET /v1/sandboxes/sb-…7T → 200",
        "+2.25s POST /v1/sandboxes/sb-…7T/resume → 503 (fault #1 HttpError 503)",
    ]
    assert short_lines(events, 10.0, 2) == [
        "... 1 earlier exchanges omitted",
        "+0.00s GET /v1/sandboxes/sb-…7T ×3 → 200 (creating → running)",
        "+2.25s POST /v1/sandboxes/sb-…7T/resume → 503 (fault #1 HttpError 503)",
    ]


def test_short_ids_grow_until_distinct() -> None:
    """Two ids with the same last two characters keep as many as tell them apart."""
    names = short_ids(["sb-AAAAAAAAAAAAAAAAAAAAAAA1XY sb-AAAAAAAAAAAAAAAAAAAAAAA2XY"])
    assert names == {
        "sb-AAAAAAAAAAAAAAAAAAAAAAA1XY": "sb-…1XY",
        "sb-AAAAAAAAAAAAAAAAAAAAAAA2XY": "sb-…2XY",
    }


def test_short_journal_shows_changes_applied_out_of_band() -> None:
    """A change applied now (no request) gets a line of its own, ids short, ``None`` left out."""
    sb, net = "sb-01KDVDNA00FHJR5RQ6CBVJHD7T", "net_01kdvdna00fhjr5rq6cbvjhd7t"
    events = [
        Event(10.0, "request", "get_sandbox", "GET", f"/v1/sandboxes/{sb}", sandbox_id=sb),
        Event(10.0, "response", "get_sandbox", "GET", f"/v1/sandboxes/{sb}", 200, sandbox_id=sb),
        Event(
            11.0,
            "fault",
            sandbox_id=sb,
            detail=f"applied now SetStatus(status='error', sandbox_id='{sb}')",
        ),
        Event(12.5, "fault", detail=f"applied now VanishNetwork(network_id='{net}')"),
        Event(
            13.0,
            "fault",
            detail="applied now DetachDisk(disk_id='dsk_x', sandbox_id=None, mount_path='/mnt/d')",
        ),
    ]
    assert short_lines(events, 10.0, 20) == [
        "+0.00s GET /v1/sandboxes/sb-…7T → 200",
        "+1.00s applied now SetStatus status=error sb-…7T",
        "+2.50s applied now VanishNetwork net_…7t",
        "+3.00s applied now DetachDisk dsk_x mount_path=/mnt/d",
    ]


def test_the_plugin_counts_as_leaked_every_status_not_on_the_way_out() -> None:
    """The plugin's own list (loading it imports no fake), held to the fake's statuses."""
    assert frozenset(STATUSES) - ENDING - GONE == LEAKING
