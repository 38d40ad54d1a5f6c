"""A fault rule: which calls it matches (operation, ids, account, body, predicate) and its schedule.

``Call`` is what the HTTP layer tells the registry about a request; ``Fault`` decides whether
it looks at that call. When it fires is the registry's business (``rules.FaultRegistry``).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Protocol

from fake_server import operations
from fake_server.faults.actions import (
    Action,
    OutOfBandAction,
    ResponseAction,
)
from fake_server.faults.aim import AIM_IDS, Aim
from fake_server.faults.matchers import predicate_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.faults.matchers import Predicate


__all__ = ["DEFAULT", "OPERATIONS", "Call", "Fault", "FaultFiring"]

#: Operation names of the fake's API (the names the journal and faults use); ``*`` is all.
OPERATIONS: Final = operations.OPERATIONS


class _Default:
    """Sentinel type: "the schedule's natural default" for ``times``."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()


@dataclass(frozen=True, kw_only=True)
class Call:
    """What a request is, as far as faults care, its body included (``None``: not read)."""

    operation: str
    method: str = "GET"
    path: str = "/"
    query: Mapping[str, str] = field(default_factory=dict)
    sandbox_id: str | None = None
    process_id: str | None = None
    #: The account resource the path names (``/v1/networks/{network_id}`` and the like).
    network_id: str | None = None
    disk_id: str | None = None
    template_id: str | None = None
    account: str | None = None
    #: The ``X-Request-Id`` the reply carries.
    request_id: str | None = None
    #: The request body as received (never in ``repr``: it is user data).
    body: bytes | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced); ``""`` without a body."""
        return (self.body or b"").decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` (without the body's text) when it is not JSON."""
        if not self.body:
            raise ValueError(f"{self.operation} {self.method} {self.path} has no request body")
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            raise ValueError(
                f"the request body of {self.operation} {self.method} {self.path} is not JSON"
            ) from None

    def known(self) -> Aim:
        """What this call names, for an out-of-band action to aim at."""
        return Aim(**{name: getattr(self, name) for name in AIM_IDS}, account=self.account)


#: Marks the fields that name what a fault narrows to (strings; the spec's and the
#: description's id fields).
_NAMES: Final = {"id": True}


@dataclass(eq=False, repr=False, slots=True)
class Fault:
    """One rule: ``operation`` (or ``*``) narrowed by ids/account/predicate, an action, a schedule.

    Schedule: ``times`` firings (default 1; ``None`` = every matching call), skipping the first
    ``after`` matching calls, each eligible call firing with ``probability`` (default: always).
    With a probability and no explicit ``times`` the fault may fire on every call, and it is not
    reported by ``unfired()`` (not firing is a legitimate outcome) unless ``expected=True``.
    ``when`` (a callable taking the ``Call``, or a dict the JSON body must contain) is kept as
    the predicate. Its fields are the one list of a fault's fields: the JSON spec, its listing
    and the description read them. Equal only to itself (the registry keys on it).
    """

    operation: str
    action: Action
    _: KW_ONLY
    #: ``DEFAULT`` until ``__post_init__`` resolves it (1, or every call with a probability).
    times: int | None = DEFAULT  # type: ignore[assignment]
    after: int = 0
    probability: float | None = None
    sandbox_id: str | None = field(default=None, metadata=_NAMES)
    process_id: str | None = field(default=None, metadata=_NAMES)
    account: str | None = field(default=None, metadata=_NAMES)
    when: Predicate | Mapping[str, Any] | None = None
    name: str | None = field(default=None, metadata=_NAMES)
    expected: bool | None = None
    _armed_in: _Firings | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        operation, action = self.operation, self.action
        times: object = self.times
        if operation != "*" and operation not in OPERATIONS:
            close = difflib.get_close_matches(str(operation), OPERATIONS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"unknown operation {operation!r}; {hint}known: * " + " ".join(sorted(OPERATIONS))
            )
        if not isinstance(action, Action) or type(action) in _ABSTRACT:
            raise TypeError("action must be a fault action such as HttpError(503)")
        if operation != "*" and not action.applies_to(operation):
            allowed = ", ".join(op for op in sorted(OPERATIONS) if action.applies_to(op))
            raise ValueError(f"{type(action).__name__} applies only to: {allowed}")
        if isinstance(times, _Default):
            times = None if self.probability is not None else 1
        if times is not None and (isinstance(times, bool) or not isinstance(times, int)):
            raise ValueError("times must be an integer >= 1 or None (every call)")
        if times is not None and times < 1:
            raise ValueError("times must be an integer >= 1 or None (every call)")
        after = self.after
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError("after must be an integer >= 0")
        predicate = predicate_of(self.when)
        probability = self.probability
        if probability is not None and (
            isinstance(probability, bool)
            or not isinstance(probability, int | float)
            or not 0.0 <= probability <= 1.0
        ):
            raise ValueError("probability must be a number between 0 and 1")
        self.times = times
        self.probability = None if probability is None else float(probability)
        self.when = predicate
        self.expected = probability is None if self.expected is None else self.expected

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields that name what a fault narrows to: ids, account, its own name."""
        return tuple(f.name for f in fields(cls) if f.metadata.get("id"))

    @classmethod
    def settable(cls) -> tuple[str, ...]:
        """The fields a caller sets (``_armed_in`` is the registry's)."""
        return tuple(f.name for f in fields(cls) if f.init)

    @property
    def calls(self) -> list[FaultFiring]:
        """This fault's firings while armed (operation, method, path, ids, fake time)."""
        registry = self._armed_in
        return [] if registry is None else registry.firings_of(self)

    @property
    def fired(self) -> int:
        """How many times this fault fired while armed (0 before ``faults.add()``)."""
        return len(self.calls)

    def matches(self, call: Call) -> bool:
        """Whether ``call`` is one this fault looks at (before the schedule is consulted)."""
        if self.operation not in ("*", call.operation):
            return False
        if not self.action.applies_to(call.operation):
            return False
        if self.sandbox_id is not None and call.sandbox_id != self.sandbox_id:
            return False
        if self.process_id is not None and call.process_id != self.process_id:
            return False
        if self.account is not None and call.account != self.account:
            return False
        if isinstance(self.action, OutOfBandAction) and self.action.aim(call.known()) is None:
            return False
        when = self.when  # a dict ``when`` became its predicate in ``__post_init__``
        return when is None or (callable(when) and bool(when(call)))

    def describe(self) -> str:
        """A stable one-line description; also the default identity for its random stream."""
        parts = [self.operation, repr(self.action)]
        for key in self.names():
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        parts.append(f"times={self.times}")
        if self.after:
            parts.append(f"after={self.after}")
        if self.probability is not None:
            parts.append(f"probability={self.probability!r}")
        if self.when is not None:
            parts.append(f"when={getattr(self.when, '__qualname__', None) or self.when!r}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Fault({self.describe()})"


class _Firings(Protocol):
    """The registry a fault is armed in, as far as the fault asks it."""

    def firings_of(self, fault: Fault) -> list[FaultFiring]: ...


_ABSTRACT: Final = (Action, ResponseAction, OutOfBandAction)


@dataclass(frozen=True, kw_only=True)
class FaultFiring:
    """One firing, for the journal: which fault, on which request, at which fake time."""

    fault_id: int
    fault: Fault
    call: Call
    at: float

    @property
    def action(self) -> Action:
        return self.fault.action

    @property
    def operation(self) -> str:
        return self.call.operation

    @property
    def method(self) -> str:
        return self.call.method

    @property
    def path(self) -> str:
        return self.call.path

    @property
    def sandbox_id(self) -> str | None:
        return self.call.sandbox_id

    @property
    def process_id(self) -> str | None:
        return self.call.process_id

    @property
    def account(self) -> str | None:
        return self.call.account

    def format(self) -> str:
        return (
            f"t={self.at:.3f} fault#{self.fault_id} {self.fault.action!r} "
            f"on {self.operation} {self.method} {self.path}"
        )
