"""The fake's event journal: every request, response, state transition and fault, in order."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Event", "Journal"]


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened, stamped with the fake clock's ``now()``.

    ``kind`` is one of ``request``, ``response``, ``transition``, ``fault``, ``process``.
    ``path`` never carries the query string (it may hold file paths or secrets).
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
    detail: str = ""

    def format(self) -> str:
        parts = [f"{self.time:10.3f}s", f"{self.kind:<10}"]
        if self.operation:
            parts.append(self.operation)
        if self.method and self.path:
            parts.append(f"{self.method} {self.path}")
        if self.status is not None:
            parts.append(f"-> {self.status}")
        for label, value in (("sandbox", self.sandbox_id), ("process", self.process_id)):
            if value:
                parts.append(f"{label}={value}")
        if self.detail:
            parts.append(self.detail)
        return " ".join(parts)


class Journal:
    """Append-only, thread-safe list of events; tests query it, failing tests print it."""

    def __init__(self, limit: int = 100_000) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._limit = limit

    def record(self, event: Event) -> Event:
        with self._lock:
            self._events.append(event)
            if len(self._events) > self._limit:
                del self._events[: len(self._events) - self._limit]
        return event

    def clear(self) -> None:
        with self._lock:
            self._events.clear()

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
        return "\n".join(e.format() for e in events)
