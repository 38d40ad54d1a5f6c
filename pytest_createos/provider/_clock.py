"""The provider's view of time: ``now()`` and ``sleep()``, nothing more.

Polling, pacing, back-off and deadlines all go through an injected ``Clock``, so a test can
hand the provider a virtual one. What a fake's clock needs to know about requests on the wire
is told by an HTTP transport the test installs (``fake_server.clock_transport``), never by the
provider: the provider a project ships carries no fake-clock code.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """What the provider needs from time; all pacing, polling and deadlines go through it."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (cancellable)."""
        ...


class SystemClock:
    """Real monotonic time and ``asyncio.sleep``: the default outside tests."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
