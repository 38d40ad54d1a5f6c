"""The fake's event journal: every request, response, state transition and fault, in order."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Event", "Journal"]


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened, stamped with the fake clock's ``now()``.

    ``kind`` is one of ``request``, ``response``, ``transition``, ``fault``, ``process``,
    ``notice`` (advice on how the fake is driven: ``fake_server.clock.unreported``).
    ``path`` never carries the query string; ``query``, ``headers`` and ``body`` (requests and
    responses, while ``Journal.messages`` is on) are for tests to assert on, recorded through
    ``models.journal.recording`` (credentials redacted, bodies capped at ``BODY_LIMIT`` characters,
    binary and streamed bodies summarised); ``format()`` prints none of them (a query may name
    a file, a body holds user data): ``--createos-journal=full`` shows them on lines of their own.
    """

    time: float
    kind: str
    operation: str | None = None
    method: str | None = None
    path: str | None = None
    status: int | None = None
    account_id: str | None = None
    sandbox_id: str | None = None
    process_id: str | None = None
    #: The ``X-Request-Id`` the fake answered with (requests and responses only).
    request_id: str | None = None
    #: The account resource a request names in its path (``/v1/networks/{id}``, a sandbox's
    #: ``/disks/{id}``, ...) or an out-of-band change is applied to.
    network_id: str | None = None
    disk_id: str | None = None
    template_id: str | None = None
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    detail: str = ""  # last: tests read it as astuple(event)[-1]

    def format(self, origin: float = 0.0) -> str:
        """One line; the time as seconds since the clock reading ``origin``."""
        parts = [f"{round(self.time - origin, 6):10.3f}s", f"{self.kind:<10}"]
        if self.operation:
            parts.append(self.operation)
        if self.method and self.path:
            parts.append(f"{self.method} {self.path}")
        if self.status is not None:
            parts.append(f"-> {self.status}")
        for label, value in (
            ("sandbox", self.sandbox_id),
            ("process", self.process_id),
            ("network", self.network_id),
            ("disk", self.disk_id),
            ("template", self.template_id),
        ):
            if value:
                parts.append(f"{label}={value}")
        if self.detail:
            parts.append(self.detail)
        return " ".join(parts)


class Journal:
    """Thread-safe list of events in order; tests query it, failing tests print it.

    ``max_events`` keeps only the newest events (a long-running ``serve`` would otherwise grow
    by two events per request forever); ``dropped`` counts the ones let go. ``origin`` is the
    clock reading ``format()`` counts times from (``rebase()``; events keep the clock's own
    ``now()``), so a test's journal prints the same whatever ran before it on the same clock.
    ``messages`` (default on) keeps each request's and response's headers and body.
    """

    def __init__(self, max_events: int | None = None) -> None:
        if max_events is not None and (isinstance(max_events, bool) or max_events < 1):
            raise ValueError("max_events must be None (unbounded) or at least 1")
        self._events: deque[Event] = deque(maxlen=max_events)
        self._lock = threading.Lock()
        self.max_events = max_events
        self.dropped = 0
        self.origin = 0.0
        #: Whether request and response events keep headers and bodies (``fake.calls``).
        self.messages = True
        #: Counts ``clear()`` calls, so a copy kept elsewhere knows to start over.
        self.generation = 0
        #: When a list, every event recorded is also appended to it (``serve --state-dir``
        #: takes them from there to its database).
        self.tap: list[Event] | None = None
        #: Called after each event is recorded, and with ``None`` after ``clear()``: observers
        #: (the dashboard's live feed) learn of every change without polling. A listener runs
        #: in the recording thread and must only hand the event on.
        self.listeners: list[Callable[[Event | None], None]] = []

    def record(self, event: Event) -> Event:
        with self._lock:
            if self.max_events is not None and len(self._events) == self.max_events:
                self.dropped += 1
            self._events.append(event)
            if self.tap is not None:
                self.tap.append(event)
        for listener in self.listeners:
            listener(event)
        return event

    def clear(self) -> None:
        """Forget every event (and the dropped count)."""
        with self._lock:
            self._events.clear()
            self.dropped = 0
            self.generation += 1
            if self.tap is not None:
                self.tap.clear()
        for listener in self.listeners:
            listener(None)

    def window(self) -> tuple[int, list[Event]]:
        """``(dropped, events)`` read together: event ``i`` of the list is number
        ``dropped + i`` since the last ``clear()``, a stable index for paging."""
        with self._lock:
            return self.dropped, list(self._events)

    def rebase(self, origin: float) -> None:
        """``format()`` shows times as seconds since the clock reading ``origin``."""
        self.origin = origin

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self._events)

    def filter(
        self,
        *,
        kind: str | None = None,
        operation: str | None = None,
        sandbox_id: str | None = None,
        process_id: str | None = None,
        status: int | None = None,
    ) -> list[Event]:
        """Events matching every given criterion."""
        return [
            e
            for e in self.events
            if (kind is None or e.kind == kind)
            and (operation is None or e.operation == operation)
            and (sandbox_id is None or e.sandbox_id == sandbox_id)
            and (process_id is None or e.process_id == process_id)
            and (status is None or e.status == status)
        ]

    def requests(self, operation: str | None = None) -> list[Event]:
        return self.filter(kind="request", operation=operation)

    def responses(self, operation: str | None = None) -> list[Event]:
        return self.filter(kind="response", operation=operation)

    def transitions(self, sandbox_id: str | None = None) -> list[Event]:
        return self.filter(kind="transition", sandbox_id=sandbox_id)

    def operations(self) -> list[str]:
        """Operation names of all requests, in arrival order."""
        return [e.operation or "" for e in self.requests()]

    def format(self, last: int | None = None) -> str:
        events = self.events
        if last is not None:
            events = events[-last:]
        return "\n".join(e.format(self.origin) for e in events)
