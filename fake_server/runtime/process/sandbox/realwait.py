"""Time for a process-runtime sandbox: its programs run on real time, and so does the fake's
clock while they run.

Real programs run on real time, so a grace period, a ``wait`` timeout or a heartbeat interval
of theirs must pass in real seconds too (``RealWaits``); under a ``VirtualClock`` it would
otherwise elapse in an instant while the program had not run at all. Timestamps, busy tokens
and holds stay the fake's, so the rest of the fake (transitions, other sandboxes) keeps its
virtual time.

While one of its programs runs, a ``Running`` token makes the fake's clock follow real time
(``Clock.real_time()``, docs/time.md rule 8): fake time never jumps past the program and never
stands still while it runs, so a deadline on fake time (a provider's ``timeout_ms``) comes
when it would on the service. A paused sandbox's programs are stopped: their tokens are given
back until it resumes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from fake_server.clock import Hold

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["RealWaits", "Running"]


class RealWaits:
    """``sleep()`` in real seconds; everything else (time, reports) from ``clock``."""

    def __init__(self, clock: Clock) -> None:
        self.inner = clock

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Running:
    """One run's real-time token: held while its program runs, not while it is stopped."""

    __slots__ = ("_clock", "_token")

    def __init__(self, clock: Clock | None) -> None:
        self._clock = clock
        self._token: Hold | None = None

    def start(self) -> None:
        """The program runs (again): the clock follows real time."""
        if self._token is None and self._clock is not None:
            follow = getattr(self._clock, "real_time", None)  # a clock of the user's may lack it
            self._token = follow() if callable(follow) else Hold()

    def stop(self) -> None:
        """The program stopped or ended; idempotent."""
        token, self._token = self._token, None
        if token is not None:
            token.release()
