"""The journal page's rows: a call (its request, reply and the faults that fired on it) or one
other event, kept between reads of the page (``EntryIndex``)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fake_server.models import Event

__all__ = ["Entry", "EntryIndex", "entries"]


@dataclass(slots=True)
class Entry:
    """A row: a call (``request`` with its ``response`` and fault events once they came) or
    one other event; ``index`` is its first event's number in the journal (``dropped`` plus
    its place in the window), a stable id for paging and the side pane."""

    index: int
    first: Event
    response: Event | None = None
    faults: list[Event] = field(default_factory=list)
    words: str | None = None
    #: The journal numbers of ``response`` and ``faults`` (rows of their own once the
    #: request is dropped).
    later: list[int] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``call`` for a request (a reply whose request was dropped or cleared too)."""
        return "call" if self.first.kind in ("request", "response") else self.first.kind

    @property
    def reply(self) -> Event | None:
        return self.first if self.first.kind == "response" else self.response

    def status(self) -> int | None:
        reply = self.reply
        return reply.status if reply is not None else self.first.status

    def text(self) -> str:
        """Every stored word of the row, lower case, for ``q`` (worked out once)."""
        if self.words is None:
            parts = [_event_text(self.first)]
            if self.response is not None:
                parts.append(_event_text(self.response))
            parts.extend(fault.detail for fault in self.faults)
            self.words = "\n".join(parts).lower()
        return self.words


def _event_text(event: Event) -> str:
    fields = (event.operation, event.method, event.path, event.query, event.status)
    ids = (event.sandbox_id, event.process_id, event.request_id, event.account_id)
    headers = " ".join(f"{name}: {value}" for name, value in event.headers)
    words = [str(v) for v in (*fields, *ids) if v is not None and v != ""]
    return " ".join([*words, headers, event.body or "", event.detail])


class EntryIndex:
    """A journal's rows, oldest first, kept as it grows: each read joins only the events that
    came since the last (a page of a 100,000-event journal is read every 200 ms while
    following), and starts over when the journal was cleared or dropped past what it knew."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self._rows: list[Entry] = []
        self._open: dict[str, Entry] = {}
        self._next = 0  # the number of the next event to join
        self._last: Event | None = None

    def rows(self, dropped: int, events: list[Event]) -> list[Entry]:
        total = dropped + len(events)
        known = self._last is not None and dropped < self._next <= total
        if not known or events[self._next - 1 - dropped] is not self._last:
            self._start()
        for number in range(max(self._next, dropped), total):
            self._join(number, events[number - dropped])
        if total:
            self._next, self._last = total, events[-1]
        cut = bisect.bisect_left(self._rows, dropped, key=lambda entry: entry.index)
        gone, self._rows = self._rows[:cut], self._rows[cut:]
        for call in gone:  # dropped by the journal: what came after it stands alone
            request_id = call.first.request_id
            if request_id and self._open.get(request_id) is call:
                del self._open[request_id]
            later = [call.response] if call.response is not None else []
            parts = sorted(zip(call.later, [*call.faults, *later], strict=True))
            for number, event in parts:
                if number >= dropped:
                    bisect.insort(self._rows, Entry(number, event), key=lambda e: e.index)
        return self._rows

    def _join(self, number: int, event: Event) -> None:
        kind, request_id = event.kind, event.request_id
        if kind == "request" and request_id:
            entry = self._open[request_id] = Entry(number, event)
            self._rows.append(entry)
            return
        call = self._open.get(request_id) if request_id else None
        if call is not None and request_id and kind in ("response", "fault"):
            call.words = None
            if kind == "fault":
                call.faults.append(event)
                call.later.insert(len(call.faults) - 1, number)
            else:
                call.response = event
                call.later.append(number)
                del self._open[request_id]
            return
        self._rows.append(Entry(number, event))


def entries(events: list[Event]) -> list[Entry]:
    """The rows of ``events``, oldest first: a reply and its faults join their request."""
    return EntryIndex().rows(0, events)
