"""The clock a process-runtime sandbox's waits use: the fake's time, but real-second timeouts.

Real programs run on real time, so a grace period, a ``wait`` timeout or a heartbeat interval
of theirs must pass in real seconds too; under a ``VirtualClock`` it would otherwise elapse in
an instant while the program had not run at all. Timestamps, busy tokens and holds stay the
fake's, so the rest of the fake (transitions, other sandboxes) keeps its virtual time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server.clock import Clock

__all__ = ["RealWaits"]


class RealWaits:
    """``sleep()`` in real seconds; everything else (time, reports) from ``clock``."""

    def __init__(self, clock: Clock) -> None:
        self.inner = clock

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
