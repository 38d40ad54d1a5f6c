"""The journal as the dashboard pages it: filtered and cut on the server, so a page of a
hundred thousand events costs one pass over them and a few hundred rows on the wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.models import Event, Journal

__all__ = ["MAX_PAGE", "JournalQuery", "event_detail", "journal_page", "summary"]

MAX_PAGE = 500
#: How far back a response looks for its request (and the faults that fired on it).
_PAIR_WINDOW = 5000


class QueryError(ValueError):
    """A filter or paging parameter the dashboard cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class JournalQuery:
    """Filters (all optional, all must match) and the page wanted; no ``offset``: the last."""

    sandbox: str | None = None
    operation: str | None = None
    status: str | None = None
    kind: str | None = None
    offset: int | None = None
    limit: int = 100

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> JournalQuery:
        def text(name: str) -> str | None:
            value = query.get(name, "").strip()
            return value[:200] or None

        status = text("status")
        if status is not None and not _status_pattern(status):
            raise QueryError("status must be a code such as 404 or a class such as 5xx")
        return cls(
            sandbox=text("sandbox"),
            operation=text("operation"),
            status=status,
            kind=text("kind"),
            offset=_number(query, "offset", None),
            limit=min(MAX_PAGE, max(1, _number(query, "limit", 100) or 100)),
        )

    def matches(self, event: Event) -> bool:
        if self.sandbox is not None and event.sandbox_id != self.sandbox:
            return False
        if self.operation is not None and event.operation != self.operation:
            return False
        if self.kind is not None and event.kind != self.kind:
            return False
        if self.status is not None:
            if event.status is None:
                return False
            code = str(event.status)
            if self.status.endswith("xx"):
                return code[0] == self.status[0]
            return code == self.status
        return True


def _status_pattern(text: str) -> bool:
    return (len(text) == 3 and text.isdigit()) or (
        len(text) == 3 and text[0] in "12345" and text[1:] == "xx"
    )


def _number(query: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 12:
        raise QueryError(f"{name} must be a whole number")
    return int(raw)


def summary(index: int, event: Event, origin: float) -> dict[str, Any]:
    """One row: what the journal's one-line format shows, with the event's stable index."""
    return {
        "i": index,
        "t": round(event.time - origin, 6),
        "kind": event.kind,
        "operation": event.operation,
        "method": event.method,
        "path": event.path,
        "status": event.status,
        "account": event.account_id,
        "sandbox": event.sandbox_id,
        "process": event.process_id,
        "request_id": event.request_id,
        "detail": event.detail,
    }


def journal_page(journal: Journal, query: JournalQuery) -> dict[str, Any]:
    """The matching events' count and one page of them, responses with their duration (fake
    seconds since their request) and the faults that fired on them."""
    dropped, events = journal.window()
    if _unfiltered(query):
        positions: range | list[int] = range(len(events))
    else:
        positions = [i for i, e in enumerate(events) if query.matches(e)]
    total = len(positions)
    start = max(0, total - query.limit) if query.offset is None else min(query.offset, total)
    rows = []
    for position in positions[start : start + query.limit]:
        event = events[position]
        row = summary(dropped + position, event, journal.origin)
        if event.kind == "response":
            row["duration"], row["faults"] = _exchange(events, position)
        rows.append(row)
    return {
        "total": total,
        "offset": start,
        "limit": query.limit,
        "events": rows,
        "dropped": dropped,
        "all": dropped + len(events),
    }


def _unfiltered(query: JournalQuery) -> bool:
    return (query.sandbox, query.operation, query.status, query.kind) == (None,) * 4


def _exchange(events: list[Event], position: int) -> tuple[float | None, list[str]]:
    reply = events[position]
    faults: list[str] = []
    for back in range(position - 1, max(-1, position - _PAIR_WINDOW), -1):
        event = events[back]
        if event.request_id != reply.request_id:
            continue
        if event.kind == "fault":
            faults.append(event.detail)
        elif event.kind == "request":
            return round(reply.time - event.time, 6), faults[::-1]
    return None, faults[::-1]


def event_detail(journal: Journal, index: int) -> dict[str, Any] | None:
    """One event with what the journal stored of its message (credentials already redacted
    when it was recorded); ``None`` once it was dropped or the journal was cleared."""
    dropped, events = journal.window()
    position = index - dropped
    if not 0 <= position < len(events):
        return None
    event = events[position]
    data = summary(index, event, journal.origin)
    data.update(
        query=event.query,
        headers=[list(h) for h in event.headers],
        body=event.body,
        network=event.network_id,
        disk=event.disk_id,
        template=event.template_id,
    )
    return data
