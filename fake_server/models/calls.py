"""The journal as calls: one record per request with its reply, and assertions over them.

``fake.calls`` is what a test asserts on, in the style of respx: filter by operation,
sandbox, method or status; ``assert_called_once()`` and friends fail with the calls that were
made, one line each (no URL host, key, query or body: only method, path and status).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from fake_server.models.journal import Event

__all__ = ["ApiCall", "Calls"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request the fake received and its reply (``status`` None: no reply was sent)."""

    time: float
    operation: str | None
    method: str
    path: str
    status: int | None = None
    sandbox_id: str | None = None
    process_id: str | None = None
    account_id: str | None = None
    #: The injected faults that fired on this call, as the journal describes them.
    faults: tuple[str, ...] = ()
    #: What the recorder kept (empty when it keeps none): secrets redacted, bodies capped.
    query: str = ""
    request_headers: tuple[tuple[str, str], ...] = ()
    request_body: str | None = None
    response_headers: tuple[tuple[str, str], ...] = ()
    response_body: str | None = None

    def header(self, name: str, *, response: bool = False) -> str | None:
        """A request (or response) header's value by case-insensitive name."""
        wanted = name.lower()
        headers = self.response_headers if response else self.request_headers
        return next((value for key, value in headers if key == wanted), None)

    def format(self, origin: float = 0.0) -> str:
        status = "no reply" if self.status is None else str(self.status)
        line = f"+{round(self.time - origin, 6):.2f}s {self.operation} {self.method} {self.path}"
        faults = f" ({'; '.join(self.faults)})" if self.faults else ""
        return f"{line} -> {status}{faults}"


def _pair(events: Iterable[Event]) -> list[ApiCall]:
    """Requests matched with their responses and faults (first open request of the same
    method and path: what the journal records for one connection)."""
    calls: list[dict[str, object]] = []
    open_calls: dict[tuple[str, str], list[dict[str, object]]] = {}
    for event in events:
        if not (event.method and event.path):
            continue
        key = (event.method, event.path)
        if event.kind == "request":
            record: dict[str, object] = {
                "time": event.time,
                "operation": event.operation,
                "method": event.method,
                "path": event.path,
                "sandbox_id": event.sandbox_id,
                "process_id": event.process_id,
                "faults": (),
                "query": event.query,
                "request_headers": event.headers,
                "request_body": event.body,
            }
            calls.append(record)
            open_calls.setdefault(key, []).append(record)
        elif event.kind == "fault" and open_calls.get(key):
            first = open_calls[key][0]
            first["faults"] = (*first["faults"], event.detail)  # type: ignore[misc]
        elif event.kind == "response" and open_calls.get(key):
            first = open_calls[key].pop(0)
            first["status"] = event.status
            first["account_id"] = event.account_id
            first["response_headers"] = event.headers
            first["response_body"] = event.body
    return [ApiCall(**record) for record in calls]  # type: ignore[arg-type]


class Calls:
    """An ordered, filterable list of ``ApiCall`` with assertion helpers."""

    def __init__(self, calls: Iterable[ApiCall], origin: float = 0.0) -> None:
        self._calls = list(calls)
        self.origin = origin

    @classmethod
    def from_events(cls, events: Iterable[Event], origin: float = 0.0) -> Calls:
        return cls(_pair(events), origin)

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[ApiCall]:
        return iter(self._calls)

    @overload
    def __getitem__(self, index: int) -> ApiCall: ...
    @overload
    def __getitem__(self, index: slice) -> Calls: ...
    def __getitem__(self, index: int | slice) -> ApiCall | Calls:
        if isinstance(index, slice):
            return Calls(self._calls[index], self.origin)
        return self._calls[index]

    def __repr__(self) -> str:
        return f"Calls({len(self)}: {', '.join(self.operations())})"

    @property
    def last(self) -> ApiCall:
        """The newest call; ``IndexError`` when there is none."""
        if not self._calls:
            raise IndexError("no calls were made")
        return self._calls[-1]

    @property
    def call_count(self) -> int:
        return len(self._calls)

    def operations(self) -> list[str]:
        """Operation names in arrival order."""
        return [call.operation or "" for call in self._calls]

    def filter(
        self,
        operation: str | None = None,
        *,
        sandbox_id: str | None = None,
        process_id: str | None = None,
        method: str | None = None,
        status: int | None = None,
        where: Callable[[ApiCall], bool] | None = None,
    ) -> Calls:
        """The calls matching every given criterion (``where``: any predicate), in order."""
        return Calls(
            (
                call
                for call in self._calls
                if (operation is None or call.operation == operation)
                and (sandbox_id is None or call.sandbox_id == sandbox_id)
                and (process_id is None or call.process_id == process_id)
                and (method is None or call.method == method)
                and (status is None or call.status == status)
                and (where is None or where(call))
            ),
            self.origin,
        )

    def assert_called(
        self, operation: str | None = None, *, times: int | None = None, **criteria: object
    ) -> Calls:
        """At least one matching call (exactly ``times`` if given); returns the matches."""
        __tracebackhide__ = True  # a failed assertion points at the test's line
        matched = self.filter(operation, **criteria)  # type: ignore[arg-type]
        if (times is None and not matched) or (times is not None and len(matched) != times):
            wanted = "at least 1 call" if times is None else f"{times} call(s)"
            raise AssertionError(self._explain(wanted, operation, criteria, matched))
        return matched

    def assert_called_once(self, operation: str | None = None, **criteria: object) -> ApiCall:
        """Exactly one matching call; returns it."""
        __tracebackhide__ = True  # a failed assertion points at the test's line
        return self.assert_called(operation, times=1, **criteria).last

    def assert_not_called(self, operation: str | None = None, **criteria: object) -> None:
        """No matching call."""
        __tracebackhide__ = True  # a failed assertion points at the test's line
        self.assert_called(operation, times=0, **criteria)

    def _explain(
        self, wanted: str, operation: str | None, criteria: dict[str, object], matched: Calls
    ) -> str:
        shown = {"operation": operation, **criteria} if operation else dict(criteria)
        what = ", ".join(f"{k}={v!r}" for k, v in shown.items()) or "any call"
        lines = [f"expected {wanted} matching {what}; {len(matched)} matched"]
        lines.append(f"the fake received {len(self)} call(s):" if self._calls else "no calls")
        hits = {id(call) for call in matched}
        lines.extend(
            ("  * " if id(call) in hits else "    ") + call.format(self.origin)
            for call in self._calls[-30:]
        )
        return "\n".join(lines)
