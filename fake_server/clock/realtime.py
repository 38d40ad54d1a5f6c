"""While a real program runs, a ``VirtualClock`` follows real time (docs/time.md, rule 8).

A real program (the process runtime's) runs on real time: a virtual clock must neither jump
past it (a ``sleep 20`` is not over after an instant) nor stand still while it runs (a
provider's 1 s timeout must fire after a second, as on the service). So while at least one
``real_time()`` token is held, fake time advances with real time, second for second, and every
sleeper whose deadline comes is woken when it comes; the autojump rules do not apply then.
With autojump off, only ``advance()`` moves time, real programs or not. Not thread-safe on
its own: the clock locks around it.
"""

from __future__ import annotations

import time

__all__ = ["RealFlow"]


class RealFlow:
    """How many real programs run, and the real instant fake time last caught up with."""

    __slots__ = ("_anchor", "enabled", "running")

    def __init__(self) -> None:
        self.running = 0
        self._anchor = 0.0
        #: The clock's autojump: off, time follows nothing but ``advance()``.
        self.enabled = True

    @property
    def flowing(self) -> bool:
        return self.enabled and self.running > 0

    def enable(self, on: bool, now: float) -> float:
        """Autojump turned on or off; the caught-up ``now`` (time flows from here on, if on)."""
        now = self.catch_up(now)
        self.enabled = on
        self._anchor = time.perf_counter()
        return now

    def catch_up(self, now: float) -> float:
        """``now`` moved on by the real seconds since the last catch-up, while programs run."""
        if not self.flowing:
            return now
        real = time.perf_counter()
        now += max(0.0, real - self._anchor)
        self._anchor = real
        return now

    def started(self, now: float) -> float:
        """One more program runs (call with the clock's lock held); the caught-up ``now``."""
        now = self.catch_up(now)
        if not self.running:
            self._anchor = time.perf_counter()
        self.running += 1
        return now

    def ended(self, now: float) -> float:
        """One program fewer; the caught-up ``now`` (time stops flowing with the last one)."""
        now = self.catch_up(now)
        self.running = max(0, self.running - 1)
        return now
