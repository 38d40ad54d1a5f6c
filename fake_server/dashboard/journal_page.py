"""The journal as the dashboard pages it: one row per call (its request, reply and the faults
that fired on it) and one per other event, newest first, filtered and cut on the server.

Filters forgive as a person types them: ``sandbox`` takes an id, its start or a sandbox's
name; ``operation`` a part of an operation's name or an SDK method's (``run_command`` finds
``exec``), and says so when it matches no operation at all; ``q`` searches every stored word
of a call (path, query, headers, bodies, ids, status, detail), case-insensitively.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fake_server.dashboard.journal_rows import Entry, EntryIndex

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from fake_server.models import Event, Journal

__all__ = [
    "MAX_PAGE",
    "JournalQuery",
    "QueryError",
    "entry_detail",
    "journal_page",
    "summary",
]

MAX_PAGE = 500
#: What an SDK method is called, by the operation it calls (both SDKs; compared without case,
#: ``_`` or ``-``), for the operation filter.
SDK_NAMES: Mapping[str, str] = {
    "runcommand": "exec",
    "sh": "exec",
    "streamcommand": "exec_stream",
    "create": "create_sandbox",
    "connect": "get_sandbox",
    "refresh": "get_sandbox",
    "waituntilrunning": "get_sandbox",
    "waituntilpaused": "get_sandbox",
    "waituntildestroyed": "get_sandbox",
    "pause": "pause_sandbox",
    "resume": "resume_sandbox",
    "fork": "fork_sandbox",
    "destroy": "delete_sandbox",
    "resize": "resize_sandbox",
    "setingress": "update_sandbox",
    "setautopause": "update_sandbox",
    "upload": "upload_file",
    "download": "download_file",
    "addsshpublickeys": "add_ssh_pubkeys",
    "egress": "get_egress",
    "bandwidth": "get_bandwidth",
}
_KINDS = {"call": "call", "request": "call", "response": "call"}


class QueryError(ValueError):
    """A filter or paging parameter the dashboard cannot use; the message names it."""


def _plain(text: str) -> str:
    return re.sub(r"[\s_\-]", "", text.lower())


@dataclass(frozen=True, slots=True)
class JournalQuery:
    """Filters (all optional, all must match) and the page wanted: ``offset`` rows from the
    newest."""

    sandbox: str | None = None
    operation: str | None = None
    status: str | None = None
    kind: str | None = None
    q: str | None = None
    offset: int = 0
    limit: int = 100

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> JournalQuery:
        def text(name: str) -> str | None:
            value = query.get(name, "").strip()
            return value[:200] or None

        status = text("status")
        if status is not None and not _status_pattern(status):
            raise QueryError("status must be a code such as 404 or a class such as 5xx")
        kind = text("kind")
        return cls(
            sandbox=text("sandbox"),
            operation=text("operation"),
            status=status,
            kind=_KINDS.get(kind, kind) if kind else None,
            q=text("q"),
            offset=_number(query, "offset", 0),
            limit=min(MAX_PAGE, max(1, _number(query, "limit", 100) or 100)),
        )

    def unfiltered(self) -> bool:
        return (self.sandbox, self.operation, self.status, self.kind, self.q) == (None,) * 5


@dataclass(frozen=True, slots=True)
class _Match:
    """A query made ready against the fake as it is: names resolved, operations found."""

    query: JournalQuery
    sandboxes: frozenset[str]
    operations: frozenset[str] | None
    needle: str | None

    def __call__(self, entry: Entry) -> bool:
        first, query = entry.first, self.query
        if query.kind is not None and entry.kind != query.kind:
            return False
        if self.operations is not None and first.operation not in self.operations:
            return False
        if query.sandbox is not None:
            sandbox = (first.sandbox_id or "").lower()
            if not (sandbox.startswith(query.sandbox.lower()) or sandbox in self.sandboxes):
                return False
        if query.status is not None:
            status = entry.status()
            if status is None:
                return False
            if query.status.endswith("xx"):
                if str(status)[0] != query.status[0]:
                    return False
            elif str(status) != query.status:
                return False
        return self.needle is None or self.needle in entry.text()


def _prepare(
    query: JournalQuery, names: Mapping[str, str], operations: Collection[str]
) -> tuple[_Match, str | None]:
    """The matcher, and a hint when the operation filter names no operation at all."""
    wanted: frozenset[str] | None = None
    hint = None
    if query.operation is not None:
        plain = _plain(query.operation)
        wanted = frozenset(o for o in operations if plain in _plain(o))
        alias = SDK_NAMES.get(plain)
        if alias is not None:
            wanted |= {alias}
        if not wanted:
            nearest = difflib.get_close_matches(query.operation, sorted(operations), n=3)
            hint = f"no operation is called like {query.operation!r}" + (
                f"; nearest: {', '.join(nearest)}" if nearest else ""
            )
    by_name: frozenset[str] = frozenset()
    if query.sandbox is not None:
        by_name = frozenset(i.lower() for n, i in names.items() if n == query.sandbox)
    needle = query.q.lower() if query.q else None
    return _Match(query, by_name, wanted, needle), hint


def _status_pattern(text: str) -> bool:
    return (len(text) == 3 and text.isdigit()) or (
        len(text) == 3 and text[0] in "12345" and text[1:] == "xx"
    )


def _number(query: Mapping[str, str], name: str, default: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 12:
        raise QueryError(f"{name} must be a whole number")
    return int(raw)


def summary(index: int, event: Event, origin: float) -> dict[str, Any]:
    """One event: what the journal's one-line format shows, with its stable index."""
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


def _row(entry: Entry, origin: float, faults: Mapping[str, str]) -> dict[str, Any]:
    row = summary(entry.index, entry.first, origin)
    row["kind"] = entry.kind
    if entry.kind == "call":
        reply = entry.reply
        row["status"] = reply.status if reply is not None else None
        answered = entry.response
        row["duration"] = (
            round(answered.time - entry.first.time, 6) if answered is not None else None
        )
        if reply is not None and reply.account_id:
            row["account"] = reply.account_id
        row["faults"] = [fault_text(f.detail, faults) for f in entry.faults]
    elif entry.kind == "fault":
        row["detail"] = fault_text(entry.first.detail, faults)
    return row


_FIRED = re.compile(r"fault#(\d+) (\w+)\(")


def fault_text(detail: str, faults: Mapping[str, str]) -> str:
    """``fault #3 http_error status=503``: a fault event's detail, readable (the journal keeps
    the action's Python repr; ``faults`` describes each fault the registry still knows)."""
    found = _FIRED.search(detail)
    if found is None:
        return detail
    fault_id = found.group(1)
    described = faults.get(fault_id) or found.group(2)
    return f"{detail[: found.start()]}fault #{fault_id} {described}".strip()


def journal_page(
    journal: Journal,
    query: JournalQuery,
    *,
    names: Mapping[str, str] | None = None,
    operations: Collection[str] = (),
    faults: Mapping[str, str] | None = None,
    index: EntryIndex | None = None,
) -> dict[str, Any]:
    """The matching rows' count and one page of them, newest first. ``names``: sandbox name
    to id; ``operations``: the known operation names; ``faults``: fault id to description;
    ``index``: the journal's rows kept between reads."""
    dropped, events = journal.window()
    rows = (index if index is not None else EntryIndex()).rows(dropped, events)
    match, hint = _prepare(query, names or {}, operations)
    everything = query.unfiltered()
    start, stop = query.offset, query.offset + query.limit
    page: list[Entry] = []
    total = 0
    for entry in reversed(rows):
        if everything or match(entry):
            if start <= total < stop:
                page.append(entry)
            total += 1
    return {
        "total": total,
        "offset": query.offset,
        "limit": query.limit,
        "rows": [_row(e, journal.origin, faults or {}) for e in page],
        "dropped": dropped,
        "all": len(rows),
        "events": dropped + len(events),
        "hint": hint,
    }


def entry_detail(
    journal: Journal, index: int, faults: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """A row with what the journal stored of its messages (credentials already redacted when
    recorded): a call's request and reply, or one event; ``None`` once it was dropped."""
    dropped, events = journal.window()
    position = index - dropped
    if not 0 <= position < len(events):
        return None
    first = events[position]
    entry = Entry(index, first)
    if first.kind == "request" and first.request_id:
        for later in events[position + 1 :]:
            if later.request_id != first.request_id:
                continue
            if later.kind == "fault":
                entry.faults.append(later)
            elif later.kind == "response":
                entry.response = later
                break
    data = _row(entry, journal.origin, faults or {})
    data["request"] = _message(first) if first.kind != "response" else None
    data["response"] = None if entry.reply is None else _message(entry.reply)
    data.update(network=first.network_id, disk=first.disk_id, template=first.template_id)
    return data


def _message(event: Event) -> dict[str, Any]:
    return {
        "kind": event.kind,
        "status": event.status,
        "query": event.query,
        "headers": [list(h) for h in event.headers],
        "body": event.body,
    }
