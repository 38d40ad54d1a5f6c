"""The journal's optional cap: a long-running ``createos-fake serve`` keeps the newest events."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import VirtualClock, tls_context
from fake_server.__main__ import JOURNAL_LIMIT, build_parser, main
from fake_server.models import Journal
from fake_server.models.journal.events import Event

if TYPE_CHECKING:
    from tests._fakes import MakeFake


def _event(n: int) -> Event:
    return Event(time=float(n), kind="request", detail=str(n))


def test_a_capped_journal_keeps_the_newest_and_counts_the_dropped() -> None:
    journal = Journal(max_events=3)
    for n in range(5):
        journal.record(_event(n))
    assert [e.detail for e in journal] == ["2", "3", "4"]
    assert (len(journal), journal.dropped) == (3, 2)
    journal.clear()
    assert (len(journal), journal.dropped) == (0, 0)


def test_the_in_process_journal_is_unbounded_by_default() -> None:
    journal = Journal()
    for n in range(1000):
        journal.record(_event(n))
    assert (len(journal), journal.dropped, journal.max_events) == (1000, 0, None)


@pytest.mark.parametrize("bad", [0, -5, True])
def test_a_bad_cap_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="max_events must be None"):
        Journal(max_events=bad)


def test_format_counts_times_from_the_origin() -> None:
    journal = Journal()
    journal.rebase(100.1)
    event = journal.record(Event(time=100.4, kind="request"))
    assert event.time == 100.4
    assert journal.format() == "     0.300s request   "
    assert event.format() == "   100.400s request   "


@pytest.mark.asyncio
async def test_a_fake_with_a_journal_limit_keeps_the_last_requests(make_fake: MakeFake) -> None:
    fake = await make_fake(clock=VirtualClock(), journal_limit=4)
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as client:
        for _ in range(5):
            await client.get("/v1/sandboxes")
    assert [e.kind for e in fake.journal] == ["request", "response"] * 2
    assert fake.journal.dropped == 6


def test_serve_caps_the_journal_unless_told_otherwise() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).journal_limit == JOURNAL_LIMIT == 100_000
    assert parser.parse_args(["serve", "--journal-limit", "50"]).journal_limit == 50
    assert parser.parse_args(["serve", "--journal-limit", "off"]).journal_limit is None


@pytest.mark.parametrize("value", ["0", "many", "-1"])
def test_a_bad_journal_limit_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--journal-limit", value])
    assert exit_info.value.code == 2
    assert (
        "argument --journal-limit: must be a positive integer or 'off'" in capsys.readouterr().err
    )
