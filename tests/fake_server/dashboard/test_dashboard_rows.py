"""The journal page's rows kept between reads (``EntryIndex``) are the rows a fresh pass over
the journal gives, whatever the journal did meanwhile: grew, dropped its oldest, was cleared."""

from __future__ import annotations

import random

from fake_server.dashboard.journal_rows import EntryIndex, entries
from fake_server.models import Event, Journal


def _shape(rows: list) -> list[tuple[object, ...]]:
    return [
        (r.index, r.kind, r.first.request_id, r.response is not None, len(r.faults), r.text())
        for r in rows
    ]


def test_rows_kept_between_reads_match_a_fresh_pass() -> None:
    rng = random.Random(7)
    journal = Journal(60)
    index = EntryIndex()
    open_ids: list[str] = []
    for step in range(600):
        roll = rng.random()
        if roll < 0.35 or not open_ids:
            request_id = f"req-{step}"
            open_ids.append(request_id)
            journal.record(
                Event(time=step, kind="request", operation="exec", request_id=request_id)
            )
        elif roll < 0.7:
            request_id = open_ids.pop(rng.randrange(len(open_ids)))
            journal.record(Event(time=step, kind="response", status=200, request_id=request_id))
        elif roll < 0.8:
            request_id = rng.choice(open_ids)
            journal.record(
                Event(time=step, kind="fault", request_id=request_id, detail="fault#1 X(")
            )
        elif roll < 0.99:
            journal.record(Event(time=step, kind="transition", detail=f"t{step}"))
        else:
            journal.clear()
        if rng.random() < 0.3:
            dropped, events = journal.window()
            kept = index.rows(dropped, events)
            fresh = [r for r in entries(events)]
            for row in fresh:
                row.index += dropped
            # A reply whose request was dropped stands alone in both.
            assert _shape(kept) == _shape(fresh), step
