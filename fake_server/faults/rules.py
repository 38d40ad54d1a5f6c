"""Fault rules: which calls a fault matches, when it fires, and the registry that decides.

A fault is *matcher + action + schedule*. The registry is consulted once per API request with a
``Call`` (what the request is) and answers with a ``Plan`` (what to do). It is pure: no aiohttp,
no world access, so schedules and seeded randomness are unit-testable in microseconds.

Determinism: every fault draws from its own ``random.Random`` seeded from the fake's seed and
the fault's identity (its ``name``, or a description of the fault plus how many identical faults
were added before it). Adding or removing one fault therefore never changes which *other*
faults fire, and the same seed and test code always give the same firings.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from fake_server.faults.actions import (
    Action,
    CrashProcess,
    EvictOutput,
    Latency,
    OutOfBandAction,
    ResponseAction,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from fake_server.clock import Clock

__all__ = [
    "DEFAULT",
    "OPERATIONS",
    "Call",
    "Fault",
    "FaultFiring",
    "FaultRegistry",
    "Plan",
]

#: Operation names of the fake's API (the names the journal and faults use), plus ``*``.
OPERATIONS: Final = frozenset(
    {
        "list_shapes",
        "list_rootfs",
        "whoami",
        "health",
        "readiness",
        "create_sandbox",
        "list_sandboxes",
        "get_sandbox",
        "delete_sandbox",
        "pause_sandbox",
        "resume_sandbox",
        "exec",
        "exec_stream",
        "upload_file",
        "download_file",
        "create_process",
        "list_processes",
        "get_process",
        "connect_process",
        "write_process_input",
        "close_process_stdin",
        "signal_process",
        "wait_process",
        "kill_process",
        "not_implemented",
        "method_not_allowed",
    }
)


class _Default:
    """Sentinel type: "the schedule's natural default" for ``times``."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()


@dataclass(frozen=True, kw_only=True)
class Call:
    """What a request is, as far as faults care (no body: uploads are streamed)."""

    operation: str
    method: str = "GET"
    path: str = "/"
    query: Mapping[str, str] = field(default_factory=dict)
    sandbox_id: str | None = None
    process_id: str | None = None
    account: str | None = None


class Fault:
    """One rule: ``operation`` (or ``*``) narrowed by ids/account/predicate, an action, a schedule.

    Schedule: ``times`` firings (default 1; ``None`` = every matching call), skipping the first
    ``after`` matching calls, each eligible call firing with ``probability`` (default: always).
    With a probability and no explicit ``times`` the fault may fire on every call, and it is not
    reported by ``unfired()`` (not firing is a legitimate outcome) unless ``expected=True``.
    """

    __slots__ = (
        "account",
        "action",
        "after",
        "expected",
        "name",
        "operation",
        "probability",
        "process_id",
        "sandbox_id",
        "times",
        "when",
    )

    def __init__(
        self,
        operation: str,
        action: Action,
        *,
        times: int | _Default | None = DEFAULT,
        after: int = 0,
        probability: float | None = None,
        sandbox_id: str | None = None,
        process_id: str | None = None,
        account: str | None = None,
        when: Callable[[Call], bool] | None = None,
        name: str | None = None,
        expected: bool | None = None,
    ) -> None:
        if operation != "*" and operation not in OPERATIONS:
            raise ValueError(
                f"unknown operation {operation!r}; known: * " + " ".join(sorted(OPERATIONS))
            )
        if not isinstance(action, Action) or type(action) in _ABSTRACT:
            raise TypeError("action must be a fault action such as HttpError(503)")
        if operation != "*" and not action.applies_to(operation):
            allowed = ", ".join(sorted(action.operations or ()))
            raise ValueError(f"{type(action).__name__} applies only to: {allowed}")
        if isinstance(times, _Default):
            times = None if probability is not None else 1
        if times is not None and (isinstance(times, bool) or not isinstance(times, int)):
            raise ValueError("times must be an integer >= 1 or None (every call)")
        if times is not None and times < 1:
            raise ValueError("times must be an integer >= 1 or None (every call)")
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError("after must be an integer >= 0")
        if probability is not None and (
            isinstance(probability, bool)
            or not isinstance(probability, int | float)
            or not 0.0 <= probability <= 1.0
        ):
            raise ValueError("probability must be a number between 0 and 1")
        self.operation = operation
        self.action = action
        self.times: int | None = times
        self.after = after
        self.probability = None if probability is None else float(probability)
        self.sandbox_id = sandbox_id
        self.process_id = process_id
        self.account = account
        self.when = when
        self.name = name
        self.expected = probability is None if expected is None else expected

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
        if isinstance(self.action, OutOfBandAction) and _target(self.action, call) is None:
            return False
        return self.when is None or bool(self.when(call))

    def describe(self) -> str:
        """A stable one-line description; also the default identity for its random stream."""
        parts = [self.operation, repr(self.action)]
        for key in ("sandbox_id", "process_id", "account", "name"):
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


_ABSTRACT: Final = (Action, ResponseAction, OutOfBandAction)


def _target(action: OutOfBandAction, call: Call) -> tuple[str, str | None] | None:
    """The (sandbox, process) an out-of-band action hits on ``call``, or None if unknown."""
    sandbox_id = getattr(action, "sandbox_id", None) or call.sandbox_id
    if sandbox_id is None:
        return None
    if isinstance(action, EvictOutput | CrashProcess):
        process_id = action.process_id or call.process_id
        if process_id is None:
            return None
        return sandbox_id, process_id
    return sandbox_id, None


@dataclass(frozen=True, kw_only=True)
class FaultFiring:
    """One firing, for the journal: which fault, on which request, at which fake time."""

    fault_id: int
    fault: Fault
    operation: str
    method: str
    path: str
    sandbox_id: str | None
    process_id: str | None
    account: str | None
    at: float

    @property
    def action(self) -> Action:
        return self.fault.action

    def format(self) -> str:
        return (
            f"t={self.at:.3f} fault#{self.fault_id} {self.fault.action!r} "
            f"on {self.operation} {self.method} {self.path}"
        )


@dataclass(frozen=True)
class Plan:
    """What the HTTP layer must do for one request."""

    latency: float = 0.0
    out_of_band: tuple[tuple[OutOfBandAction, str, str | None], ...] = ()
    response: ResponseAction | None = None
    firings: tuple[FaultFiring, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.firings


_NO_PLAN: Final = Plan()


@dataclass(eq=False)
class _Armed:
    fault: Fault
    fault_id: int
    rng: random.Random
    seen: int = 0
    fired: int = 0

    def exhausted(self) -> bool:
        return self.fault.times is not None and self.fired >= self.fault.times


class FaultRegistry:
    """The fake's armed faults, their counters and the journal of firings. Thread-safe."""

    def __init__(self, *, seed: int = 0, clock: Clock | None = None) -> None:
        self._lock = threading.RLock()
        self._seed = seed
        self._clock = clock
        self._armed: list[_Armed] = []
        self._fired: list[FaultFiring] = []
        self._next_id = 1
        #: Called with every firing (the fake's journal subscribes here).
        self.listeners: list[Callable[[FaultFiring], None]] = []

    # -- arming -------------------------------------------------------------------------------

    def add(self, fault: Fault) -> Fault:
        """Arm ``fault`` and return it (keep it to ask ``fire_count`` later)."""
        if not isinstance(fault, Fault):
            raise TypeError("add() takes a Fault")
        with self._lock:
            if any(armed.fault is fault for armed in self._armed):
                raise ValueError("this Fault is already armed")
            identity = fault.name or fault.describe()
            twins = sum(
                1
                for armed in self._armed
                if (armed.fault.name or armed.fault.describe()) == identity
            )
            self._armed.append(
                _Armed(fault, self._next_id, _stream(self._seed, f"{identity}#{twins}"))
            )
            self._next_id += 1
        return fault

    def remove(self, fault: Fault) -> None:
        with self._lock:
            self._armed = [armed for armed in self._armed if armed.fault is not fault]

    def clear(self) -> None:
        """Disarm every fault and forget the firings (the fake's ``reset()`` calls this)."""
        with self._lock:
            self._armed.clear()
            self._fired.clear()
            self._next_id = 1

    def reseed(self, seed: int) -> None:
        """Use ``seed`` for faults armed from now on (``clear()`` first for a clean slate)."""
        with self._lock:
            self._seed = seed

    # -- inspection ---------------------------------------------------------------------------

    @property
    def faults(self) -> list[Fault]:
        with self._lock:
            return [armed.fault for armed in self._armed]

    @property
    def fired(self) -> list[FaultFiring]:
        with self._lock:
            return list(self._fired)

    def fire_count(self, fault: Fault) -> int:
        return self._find(fault).fired

    def match_count(self, fault: Fault) -> int:
        """How many calls the fault has looked at (fired or not)."""
        return self._find(fault).seen

    def fault_id(self, fault: Fault) -> int:
        return self._find(fault).fault_id

    def unfired(self) -> list[Fault]:
        """Faults armed with an expectation to fire that never did: usually a test mistake."""
        with self._lock:
            return [a.fault for a in self._armed if a.fired == 0 and a.fault.expected]

    def format(self) -> str:
        """The firings, one per line, for a failing test's report."""
        with self._lock:
            return "\n".join(firing.format() for firing in self._fired)

    def _find(self, fault: Fault) -> _Armed:
        with self._lock:
            for armed in self._armed:
                if armed.fault is fault:
                    return armed
        raise KeyError("this Fault is not armed")

    # -- deciding -----------------------------------------------------------------------------

    def plan(self, call: Call) -> Plan:
        """Decide what happens to ``call``; records every firing.

        Every matching fault counts the call and draws its random number, so each fault's
        schedule depends only on the calls it matches. Latency and out-of-band actions
        compose; of the response actions only the first one armed fires, the others stay
        armed for a later call.
        """
        with self._lock:
            if not self._armed:
                return _NO_PLAN
            latency = 0.0
            out_of_band: list[tuple[OutOfBandAction, str, str | None]] = []
            response: ResponseAction | None = None
            firings: list[FaultFiring] = []
            now: float | None = None
            for armed in self._armed:
                fault = armed.fault
                if armed.exhausted() or not fault.matches(call):
                    continue
                armed.seen += 1
                draw = armed.rng.random() if fault.probability is not None else 0.0
                if armed.seen <= fault.after:
                    continue
                if fault.probability is not None and draw >= fault.probability:
                    continue
                action = fault.action
                if isinstance(action, ResponseAction):
                    if response is not None:
                        continue
                    response = action
                elif isinstance(action, Latency):
                    latency += action.seconds
                elif isinstance(action, OutOfBandAction):
                    target = _target(action, call)
                    if target is None:  # pragma: no cover - matches() already checked
                        continue
                    out_of_band.append((action, target[0], target[1]))
                armed.fired += 1
                if now is None:
                    now = self._clock.now() if self._clock is not None else 0.0
                firing = FaultFiring(
                    fault_id=armed.fault_id,
                    fault=fault,
                    operation=call.operation,
                    method=call.method,
                    path=call.path,
                    sandbox_id=call.sandbox_id,
                    process_id=call.process_id,
                    account=call.account,
                    at=now,
                )
                firings.append(firing)
                self._fired.append(firing)
            listeners = list(self.listeners)
        for firing in firings:
            for listener in listeners:
                listener(firing)
        if not firings:
            return _NO_PLAN
        return Plan(latency, tuple(out_of_band), response, tuple(firings))


def _stream(seed: int, identity: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{identity}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
