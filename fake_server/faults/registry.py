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

import dataclasses
import hashlib
import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from fake_server.faults.actions import (
    Latency,
    OutOfBandAction,
    ResponseAction,
    StreamAction,
)
from fake_server.faults.fault import Call, Fault, FaultFiring

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.clock import Clock
    from fake_server.faults.aim import Aim

__all__ = ["FaultRegistry", "Plan"]


@dataclass(frozen=True)
class Plan:
    """What the HTTP layer must do for one request."""

    latency: float = 0.0
    out_of_band: tuple[tuple[OutOfBandAction, Aim], ...] = ()
    response: ResponseAction | None = None
    firings: tuple[FaultFiring, ...] = ()
    #: A stream fault that fires only if it acts on the body: the HTTP layer reports back
    #: with ``FaultRegistry.settle`` (its trigger may lie past the end of the stream).
    pending: FaultFiring | None = None

    @property
    def empty(self) -> bool:
        return not self.firings and self.pending is None


_NO_PLAN: Final = Plan()


@dataclass(eq=False)
class _Armed:
    fault: Fault
    fault_id: int
    rng: random.Random
    seen: int = 0
    fired: int = 0
    pending: int = 0  # stream firings waiting to learn whether they acted

    def exhausted(self) -> bool:
        return self.fault.times is not None and self.fired + self.pending >= self.fault.times


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
        """Arm ``fault`` and return it: ``fault.fired`` and ``fault.calls`` answer from here."""
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
            fault._armed_in = self
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
    def idle(self) -> bool:
        """No fault is armed: ``plan`` would be empty for any call, so a caller need not
        describe its request at all (one read of the list, as ``plan`` makes first)."""
        return not self._armed

    @property
    def fired(self) -> list[FaultFiring]:
        with self._lock:
            return list(self._fired)

    def firings_of(self, fault: Fault) -> list[FaultFiring]:
        """The firings of ``fault`` since it was armed here (none once cleared)."""
        with self._lock:
            return [firing for firing in self._fired if firing.fault is fault]

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
            out_of_band: list[tuple[OutOfBandAction, Aim]] = []
            response: ResponseAction | None = None
            firings: list[FaultFiring] = []
            pending: FaultFiring | None = None
            now = self._now()
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
                    aim = action.aim(call.known())
                    if aim is None:  # pragma: no cover - matches() already checked
                        continue
                    out_of_band.append((action, aim))
                firing = FaultFiring(fault_id=armed.fault_id, fault=fault, call=call, at=now)
                if isinstance(action, StreamAction):
                    armed.pending += 1
                    pending = firing
                    continue
                armed.fired += 1
                firings.append(firing)
                self._fired.append(firing)
            listeners = list(self.listeners)
        for firing in firings:
            for listener in listeners:
                listener(firing)
        if not firings and pending is None:
            return _NO_PLAN
        return Plan(latency, tuple(out_of_band), response, tuple(firings), pending)

    def settle(self, pending: FaultFiring, *, acted: bool) -> None:
        """Report whether a plan's pending stream fault acted; only then has it fired.

        Not acting (the trigger lay past the end of the stream) leaves the fault armed, with
        its firings still to come, so ``unfired()`` reports it if it never acts.
        """
        with self._lock:
            armed = next((a for a in self._armed if a.fault_id == pending.fault_id), None)
            if armed is None or armed.fault is not pending.fault:
                return  # disarmed (or cleared) while the stream ran
            armed.pending -= 1
            if not acted:
                return
            armed.fired += 1
            firing = dataclasses.replace(pending, at=self._now())
            self._fired.append(firing)
            listeners = list(self.listeners)
        for listener in listeners:
            listener(firing)

    def _now(self) -> float:
        return self._clock.now() if self._clock is not None else 0.0


def _stream(seed: int, identity: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{identity}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
