"""The short journal of a failing test: one line per exchange, polls collapsed, short ids.

A failing test's raw journal is four events per call (request, response, transitions, faults)
with 26-character ids; what a reader needs is which calls were made, in which order, what
they got back and where the fake misbehaved on purpose. Each exchange becomes one line::

    +2.25s POST /v1/sandboxes/sb-…7T/resume → 503 (fault #1 HttpError 503)

a run of identical calls (a status poll) becomes one line with the states it saw::

    +0.50s GET /v1/sandboxes/sb-…7T ×10 → 200 (pausing → paused)

a change a test applied out of band (``fake.faults.vanish_network(...)``) one of its own::

    +1.00s applied now VanishNetwork net_…k3

and so does what the fake says of itself (a command whose output a process it left holds
open, a provider that does not report to the clock)::

    +0.52s sb-…7T bash exited (0) but pid 4 (sleep 100) still holds its stdout or stderr: …
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fake_server.models.journal.events import Event

__all__ = ["Exchange", "exchanges", "short_ids", "short_lines"]

_ID = re.compile(r"\b(sb|proc|acct|pr)-[0-9A-Za-z]{8,}|\bnet_[0-9a-z]{8,}")
_FAULT = re.compile(r"fault#(\d+) (\w+)\((.*)\)$")
_APPLIED = re.compile(r"applied now (\w+)\((.*)\)$")


@dataclass(slots=True)
class Exchange:
    """One request and what came of it, or a transition no request was open for."""

    time: float
    method: str
    path: str
    sandbox_id: str | None = None
    status: int | None = None
    states: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    count: int = 1

    def same_call(self, other: Exchange) -> bool:
        """Whether ``other`` repeats this call with the same outcome and no fault (a poll)."""
        return (
            not self.faults
            and not other.faults
            and (self.method, self.path, self.status) == (other.method, other.path, other.status)
        )

    def absorb(self, other: Exchange) -> None:
        self.count += other.count
        for state in other.states:
            if not self.states or self.states[-1] != state:
                self.states.append(state)


def _fault_text(detail: str) -> str:
    """``fault#1 HttpError(status=503, retry_after=None)`` → ``fault #1 HttpError 503``."""
    match = _FAULT.match(detail)
    if match is None:
        return detail
    number, name, args = match.groups()
    shown = [v if k == "status" else f"{k}={v}" for k, v in _arguments(args, unquote=False)]
    return " ".join([f"fault #{number}", name, *shown])


def _applied_text(detail: str) -> str:
    """``applied now VanishNetwork(network_id='net_…')`` → ``applied now VanishNetwork net_…``."""
    match = _APPLIED.match(detail)
    if match is None:
        return detail
    name, args = match.groups()
    shown = [v if k.endswith("_id") else f"{k}={v}" for k, v in _arguments(args, unquote=True)]
    return " ".join(["applied now", name, *shown])


def _arguments(args: str, *, unquote: bool) -> list[tuple[str, str]]:
    """The ``key=value`` arguments of an action's repr that say something (not ``None``,
    ``False``, ``()`` or empty); ``unquote`` drops the quotes around strings first."""
    pairs = []
    for part in args.split(", ") if args else []:
        key, _, value = part.partition("=")
        value = value.strip("'") if unquote else value
        if value not in ("None", "False", "()", ""):
            pairs.append((key, value))
    return pairs


def _transition(detail: str) -> tuple[str | None, str]:
    old, _, new = detail.partition(" -> ")
    return (None if old in ("-", "") else old), new


def exchanges(events: Iterable[Event]) -> list[Exchange]:
    """Pair requests with their responses, attach faults and transitions, in request order.

    A transition goes to the exchange open on its sandbox, or else to the next exchange on
    that sandbox (the call that observed it); one nobody observed gets a line of its own.
    """
    out: list[Exchange] = []
    open_calls: dict[tuple[str, str], list[Exchange]] = {}
    pending: dict[str, list[tuple[float, str | None, str]]] = {}
    for event in events:
        if event.kind == "request" and event.method and event.path:
            exchange = Exchange(event.time, event.method, event.path, event.sandbox_id)
            for _time, old, new in pending.pop(event.sandbox_id or "", []):
                _add_state(exchange, old, new)
            open_calls.setdefault((event.method, event.path), []).append(exchange)
            out.append(exchange)
        elif event.kind in ("process", "notice") and event.detail:
            # The fake explains itself: a command's output held open, a provider unreported.
            said = Exchange(event.time, "", "", event.sandbox_id)
            said.faults.append(event.detail)
            out.append(said)
        elif event.kind == "fault" and not event.method:  # applied now, outside any request
            applied = Exchange(event.time, "", "")
            applied.faults.append(_applied_text(event.detail))
            out.append(applied)
        elif event.kind in ("response", "fault") and event.method and event.path:
            waiting = open_calls.get((event.method, event.path))
            if not waiting:
                continue
            if event.kind == "fault":
                waiting[0].faults.append(_fault_text(event.detail))
            else:
                waiting.pop(0).status = event.status
        elif event.kind == "transition" and event.sandbox_id:
            old, new = _transition(event.detail)
            target = _open_on(open_calls, event.sandbox_id)
            if target is None and old is None:  # a creation: the open call without an id
                target = _open_on(open_calls, None)
                if target is not None:
                    target.sandbox_id = event.sandbox_id
            if target is not None:
                _add_state(target, old, new)
            else:
                pending.setdefault(event.sandbox_id, []).append((event.time, old, new))
    for sandbox_id, states in pending.items():
        for time, old, new in states:
            orphan = Exchange(time, "", "", sandbox_id)
            _add_state(orphan, old, new)
            out.append(orphan)
    out.sort(key=lambda e: e.time)
    return out


def _open_on(
    open_calls: dict[tuple[str, str], list[Exchange]], sandbox_id: str | None
) -> Exchange | None:
    for waiting in open_calls.values():
        for exchange in waiting:
            if exchange.sandbox_id == sandbox_id:
                return exchange
    return None


def _add_state(exchange: Exchange, old: str | None, new: str) -> None:
    if old is not None and (not exchange.states or exchange.states[-1] != old):
        exchange.states.append(old)
    exchange.states.append(new)


def collapse(items: Sequence[Exchange]) -> list[Exchange]:
    """Merge runs of the same call with the same outcome (polls) into one exchange."""
    merged: list[Exchange] = []
    for item in items:
        if merged and item.method and merged[-1].method and merged[-1].same_call(item):
            merged[-1].absorb(item)
        else:
            merged.append(item)
    return merged


def short_ids(texts: Iterable[str]) -> dict[str, str]:
    """``sb-01KDVDNA00FHJR5RQ6CBVJHD7T`` → ``sb-…7T`` (``net_…`` alike), longer tails where two
    would clash."""
    ids = sorted({m.group(0) for text in texts for m in _ID.finditer(text)})
    for tail in range(2, 27):
        names = {i: f"{_prefix(i)}…{i[-tail:]}" for i in ids}
        if len(set(names.values())) == len(ids):
            return names
    return {i: i for i in ids}  # pragma: no cover -- distinct ids differ in their last 26


def _prefix(identifier: str) -> str:
    """``sb-`` of ``sb-01K…``, ``net_`` of ``net_01k…``."""
    cut = min(i for i in (identifier.find("-"), identifier.find("_")) if i >= 0)
    return identifier[: cut + 1]


def _line(exchange: Exchange, origin: float) -> str:
    parts = [f"+{max(exchange.time - origin, 0.0):.2f}s"]
    if exchange.method:
        parts.append(f"{exchange.method} {exchange.path}")
        if exchange.count > 1:
            parts.append(f"×{exchange.count}")
        status = "no reply" if exchange.status is None else str(exchange.status)
        parts.append(f"→ {status}")
    elif exchange.sandbox_id:
        parts.append(exchange.sandbox_id)
    notes = []
    if exchange.states:
        states = " → ".join(exchange.states)
        if exchange.method and exchange.sandbox_id and exchange.sandbox_id not in exchange.path:
            states = f"{exchange.sandbox_id} {states}"
        notes.append(states)
    notes.extend(exchange.faults)
    if notes and exchange.method:
        parts.append(f"({'; '.join(notes)})")
    elif notes:
        parts.append(notes[0])
    return " ".join(parts)


def _setup_line(events: Sequence[Event], origin: float) -> str | None:
    """The calls fixtures made before the test body, as one line (they rarely matter)."""
    done = exchanges(events)
    if not done:
        return None
    states: list[str] = []
    sandboxes: list[str] = []
    for exchange in done:
        if exchange.sandbox_id and exchange.sandbox_id not in sandboxes:
            sandboxes.append(exchange.sandbox_id)
        for state in exchange.states:
            if not states or states[-1] != state:
                states.append(state)
    calls = sum(1 for e in done if e.method)
    seen = f" ({' '.join(sandboxes)} {' → '.join(states)})" if sandboxes and states else ""
    return f"+{max(done[0].time - origin, 0.0):.2f}s setup: {calls} calls{seen}"


def short_lines(
    events: Sequence[Event], origin: float, limit: int, body_start: int | None = None
) -> list[str]:
    """The exchanges as lines, times from ``origin``; the last ``limit`` lines at most.

    With ``body_start`` (the index of the test body's first event) the fixtures' calls before
    it are one ``setup`` line.
    """
    lines: list[str] = []
    if body_start:
        setup = _setup_line(events[:body_start], origin)
        lines.extend([setup] if setup else [])
        events = events[body_start:]
    lines.extend(_line(exchange, origin) for exchange in collapse(exchanges(events)))
    omitted = len(lines) - limit
    if omitted > 0:
        lines = [f"... {omitted} earlier exchanges omitted", *lines[-limit:]]
    names = short_ids(lines)
    if names:
        pattern = re.compile("|".join(re.escape(i) for i in sorted(names, key=len, reverse=True)))
        lines = [pattern.sub(lambda m: names[m.group(0)], line) for line in lines]
    return lines
