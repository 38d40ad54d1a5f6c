"""The journal as calls: one record per request with its reply, and assertions over them.

``fake.calls`` is what a test asserts on, in the style of respx: filter by operation,
sandbox, method, status or JSON body; ``call.request.json()`` is the body the code sent;
``assert_called_once()`` and friends fail with the calls that were made, one line each (no URL
host, key, query or body: only method, path and status; with ``json=``, the bodies of the
calls it looked at, capped and redacted as the journal keeps them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from fake_server.models.journal.recording import BODY_LIMIT
from fake_server.models.journal.subset import contains

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from fake_server.models.journal.events import Event

__all__ = ["ApiCall", "Calls", "Message"]

#: Characters of a body shown per call in a failed ``json=`` assertion.
_SHOWN_BODY = 200


@dataclass(frozen=True, slots=True)
class Message:
    """A request or reply as the journal kept it: headers (names lower-cased, credentials
    ``<redacted>``) and body (text capped at ``BODY_LIMIT`` characters, binary and streams
    summarised, ``None`` if there was none or the journal's ``messages`` were off)."""

    #: ``"request"`` or ``"response"`` of ``call`` (``GET /v1/whoami``), for error messages.
    side: str
    call: str
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None

    def header(self, name: str) -> str | None:
        """A header's value by case-insensitive name (``None``: not sent)."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    @property
    def text(self) -> str:
        """The body as kept (``""`` without one)."""
        return self.body or ""

    def json(self) -> Any:
        """The body parsed as JSON; ``ValueError`` saying why when it cannot be."""
        body = self.body
        where = f"the {self.side} body of {self.call}"
        if body is None:
            raise ValueError(f"{where} was not recorded (there was none, or journal messages off)")
        if body.startswith("<") and body.endswith(">") and " bytes" in body:
            raise ValueError(f"{where} is not text: {body}")
        if body.endswith(" more characters)") and len(body) > BODY_LIMIT:
            raise ValueError(
                f"{where} was cut to {BODY_LIMIT} characters in the journal; json() needs it "
                "whole (read .text)"
            )
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ValueError(f"{where} is not JSON: {exc}") from None


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
    network_id: str | None = None
    disk_id: str | None = None
    template_id: str | None = None
    #: The injected faults that fired on this call, as the journal describes them.
    faults: tuple[str, ...] = ()
    #: What the recorder kept (empty when it keeps none): secrets redacted, bodies capped.
    query: str = ""
    request_headers: tuple[tuple[str, str], ...] = ()
    request_body: str | None = None
    response_headers: tuple[tuple[str, str], ...] = ()
    response_body: str | None = None

    @property
    def request(self) -> Message:
        """What the code sent: ``call.request.json()["shape"]``, ``call.request.header(...)``."""
        return Message("request", self._name(), self.request_headers, self.request_body)

    @property
    def response(self) -> Message:
        """What the fake answered (streams as a ``<ndjson stream, N lines, M bytes>`` summary)."""
        return Message("response", self._name(), self.response_headers, self.response_body)

    def header(self, name: str, *, response: bool = False) -> str | None:
        """A request (or response) header's value by case-insensitive name."""
        return (self.response if response else self.request).header(name)

    def _name(self) -> str:
        return f"{self.operation} {self.method} {self.path}"

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
                "network_id": event.network_id,
                "disk_id": event.disk_id,
                "template_id": event.template_id,
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
        network_id: str | None = None,
        disk_id: str | None = None,
        template_id: str | None = None,
        method: str | None = None,
        status: int | None = None,
        json: Mapping[str, Any] | None = None,
        where: Callable[[ApiCall], bool] | None = None,
    ) -> Calls:
        """The calls matching every given criterion, in order. ``json``: a JSON object the
        request body contains (``json={"shape": "s-1vcpu-1gb"}``; nested objects the same way,
        lists and values exactly); ``where``: any predicate on an ``ApiCall``."""
        if json is not None and not isinstance(json, dict):
            raise TypeError(
                f"json= takes a dict the request body contains; got {type(json).__name__}"
            )
        return Calls(
            (
                call
                for call in self._calls
                if (operation is None or call.operation == operation)
                and (sandbox_id is None or call.sandbox_id == sandbox_id)
                and (process_id is None or call.process_id == process_id)
                and (network_id is None or call.network_id == network_id)
                and (disk_id is None or call.disk_id == disk_id)
                and (template_id is None or call.template_id == template_id)
                and (method is None or call.method == method)
                and (status is None or call.status == status)
                and (json is None or _body_contains(call, json))
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
        if "json" in criteria:
            lines.extend(self._bodies(operation, criteria))
        return "\n".join(lines)

    def _bodies(self, operation: str | None, criteria: dict[str, object]) -> list[str]:
        """The request bodies ``json=`` looked at (the calls matching the other criteria)."""
        others = {k: v for k, v in criteria.items() if k != "json"}
        looked = self.filter(operation, **others)  # type: ignore[arg-type]
        if not looked:
            return []
        lines = [f"request bodies of the {len(looked)} call(s) matching the rest:"]
        for call in looked[-5:]:
            body = call.request_body
            shown = "(none)" if body is None else body.replace("\n", " ")
            if len(shown) > _SHOWN_BODY:
                shown = shown[:_SHOWN_BODY] + "…"
            lines.append(f"    {call.format(self.origin)}: {shown}")
        return lines


def _body_contains(call: ApiCall, expected: Mapping[str, Any]) -> bool:
    try:
        body = call.request.json()
    except ValueError:
        return False
    return contains(body, expected)
